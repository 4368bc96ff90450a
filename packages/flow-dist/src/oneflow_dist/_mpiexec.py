"""Finds hydra's ``mpiexec``, which the ``mpich`` wheel installs into the environment's ``bin``."""
import os
import shutil
import sys
import sysconfig
from importlib import metadata

ENV_OVERRIDE = "FLOWRUN_MPIEXEC"


def find_mpiexec():
    """The path of hydra's ``mpiexec`` (``$FLOWRUN_MPIEXEC`` if set); RuntimeError naming the package if absent."""
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        if not os.access(override, os.X_OK):
            raise RuntimeError(f"${ENV_OVERRIDE}={override!r} is not an executable")
        return override
    candidates = []
    try:
        dist = metadata.distribution("mpich")
        for f in dist.files or ():
            if f.name in ("mpiexec.hydra", "mpiexec") and f.parent.name == "bin":
                candidates.append(str(dist.locate_file(f)))
    except metadata.PackageNotFoundError:
        pass
    candidates.sort(key=lambda p: not p.endswith(".hydra"))  # hydra's own name first
    candidates += [os.path.join(sysconfig.get_path("scripts"), "mpiexec.hydra"),
                   os.path.join(os.path.dirname(sys.executable), "mpiexec.hydra")]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("mpiexec.hydra")
    if found:
        return found
    raise RuntimeError("flowrun needs MPICH's process manager (hydra's mpiexec), which the 'mpich' package "
                       "provides: `pip install mpich` (or set $FLOWRUN_MPIEXEC to an mpiexec.hydra)")
