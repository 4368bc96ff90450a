"""How ``oneflow._C`` is found under an editable install (``pip install --no-build-isolation -e``).

scikit-build-core's editable install puts a redirecting finder at the front of ``sys.meta_path``, ahead of the
``PathFinder`` that searches ``sys.path``. It maps ``oneflow`` to the source tree it was installed from and
``oneflow._C`` to its own build folder, and rebuilds that folder (``cmake --build``, then ``--install``) the
first time a process imports ``oneflow._C``, printing nothing. Two things follow, both handled here:

- that rebuild can take minutes after a C++ change: a line on stderr says what is happening when it takes
  more than a moment;
- ``PYTHONPATH=packages/flow-core/src`` cannot win, being a ``sys.path`` entry: the finder answers first. When
  that entry is the very tree the editable install maps to and holds a ``dev/build.py`` build (``_C`` beside
  ``__init__.py``), that build is loaded and the editable one is neither rebuilt nor loaded. When it is
  another checkout, its ``oneflow`` is shadowed whole (the finder has already chosen this file): a warning
  says so and how to undo it.
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
NOTICE_AFTER = 5.0  # seconds of a silent rebuild before saying what it is (a no-op check takes 1-3 s)


def _editable_finder():
    for finder in sys.meta_path:
        if type(finder).__name__.startswith("ScikitBuild") and "oneflow._C" in getattr(finder, "known_wheel_files", {}):
            return finder
    return None


def _explicit_entries():
    """sys.path entries with an ``oneflow`` package set before site's (PYTHONPATH, the script's folder); the
    editable install's .pth appends its source tree after site-packages, which does not count."""
    for entry in sys.path:
        full = os.path.normcase(os.path.abspath(entry or os.getcwd()))
        if os.path.basename(full) in ("site-packages", "dist-packages"):
            return
        if os.path.isfile(os.path.join(full, "oneflow", "__init__.py")):
            yield full


def load_core():
    """Imports and returns ``oneflow._C`` as described above (an ordinary import without an editable install)."""
    finder = _editable_finder()
    if finder is None:
        return importlib.import_module("oneflow._C")
    here_root = os.path.normcase(os.path.dirname(_HERE))
    for entry in _explicit_entries():
        if entry == here_root:
            built = glob.glob(os.path.join(_HERE, "_C.*.so")) + glob.glob(os.path.join(_HERE, "_C.so"))
            if built:  # this tree's dev/build.py build, named on sys.path: it wins over the editable one
                spec = importlib.util.spec_from_file_location("oneflow._C", built[0])
                module = importlib.util.module_from_spec(spec)
                sys.modules["oneflow._C"] = module
                spec.loader.exec_module(module)
                return module
            break
        print(f"oneflow: the editable install of {os.path.dirname(here_root)} shadows the oneflow in {entry} "
              "(its import hook runs before sys.path is searched); `pip uninstall flow-core`, or install that "
              "checkout instead, to use it", file=sys.stderr)
        break
    if not (getattr(finder, "rebuild_flag", False) and not getattr(finder, "rebuilt", True)):
        return importlib.import_module("oneflow._C")
    start = time.monotonic()
    told = threading.Event()

    def notice():
        told.set()
        print(f"oneflow: the editable install is bringing its C++ extension up to date in {finder.path} "
              "(cmake --build; SKBUILD_EDITABLE_VERBOSE=1 shows its output)...", file=sys.stderr, flush=True)

    timer = threading.Timer(NOTICE_AFTER, notice)
    timer.daemon = True
    timer.start()
    try:
        return importlib.import_module("oneflow._C")
    finally:
        timer.cancel()
        if told.is_set():
            print(f"oneflow: rebuilt in {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
