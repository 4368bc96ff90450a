"""One rank's keeper. Hydra starts ``python -m oneflow_dist._worker CMD...`` once per rank; it sets the rank's
environment (RANK, LOCAL_RANK, WORLD_SIZE, ...), runs CMD as its child and waits for it.

It exists because hydra reports only an exit number: the keeper sees whether its rank exited or was killed by a
signal (SIGKILL, a segfault) and records that for the launcher (``_status``), which stops the other ranks and
exits with the first failing rank's code. The keeper itself always exits 0: the exit number hydra would print
is not the rank's (hydra still stops the other ranks at once when a rank that had initialized MPI ends without
MPI_Finalize; the launcher stops whatever is left). The child is tied to the keeper (it gets SIGKILL if the
keeper dies) and hydra to the launcher, and the launcher kills the whole session at the end, so a rank never
outlives its job.
"""
import ctypes
import os
import signal
import subprocess
import sys

from . import _status

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the launcher's final kill of the session still applies
        pass


def rank_env(environ):
    """The environment variables of this rank, from hydra's (PMI_RANK, PMI_SIZE) and the launcher's."""
    local = int(environ.get("PMI_RANK", "0"))
    nproc = int(environ.get("PMI_SIZE", "1"))
    node_rank = int(environ.get("FLOWRUN_NODE_RANK", "0"))
    nnodes = int(environ.get("FLOWRUN_NNODES", "1"))
    return {"RANK": str(node_rank * nproc + local), "LOCAL_RANK": str(local), "WORLD_SIZE": str(nnodes * nproc),
            "LOCAL_WORLD_SIZE": str(nproc), "NODE_RANK": str(node_rank), "GROUP_RANK": str(node_rank)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    env = dict(os.environ)
    env.update(rank_env(env))
    rank = int(env["RANK"])
    status_dir = env["FLOWRUN_STATUS_DIR"]
    # the rank's line to hydra's PMI server. The keeper keeps its copy open: hydra sees the line close only when
    # the keeper exits, after it has recorded how its rank ended (hydra then stops the other ranks itself)
    pass_fds = (int(env["PMI_FD"]),) if "PMI_FD" in env else ()
    try:
        child = subprocess.Popen(argv, env=env, pass_fds=pass_fds, preexec_fn=_die_with_parent)
    except OSError as e:
        print(f"[rank {rank}]: flowrun: cannot start {argv[0]!r}: {e}", file=sys.stderr, flush=True)
        _status.write(status_dir, rank, 127, None, False)
        return 0
    _status.write_pid(status_dir, rank, child.pid)
    stopped = []

    def forward(signum, frame):  # the launcher or hydra stops the job: pass it on, and note it was not us
        stopped.append(signum)
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)

    rc = child.wait()
    if rc == 0:
        return 0
    signum = -rc if rc < 0 else None
    code = 128 + signum if signum else rc  # the shell's convention for a process killed by a signal
    if signum and not stopped and not _status.stopping(status_dir):
        name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
        print(f"[rank {rank}]: killed by signal {signum} ({name})", file=sys.stderr, flush=True)
    _status.write(status_dir, rank, code, signum, bool(stopped) or _status.stopping(status_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
