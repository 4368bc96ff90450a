"""``flowrun``: starts the ranks of a job and supervises them.

    flowrun --nproc N [--nnodes M --node-rank R --master-addr A --master-port P] script.py args...
    flowrun --nproc N -m package.module args...
    python -m oneflow.distributed.launch --nproc_per_node N [--nnodes M --node_rank R ...] script.py args...

Each node's launcher starts its N ranks through MPICH's process manager (hydra's ``mpiexec``), which gives them
one MPI world per node and a shared-memory transport between them; with several nodes the node worlds are joined
into one at first use (``_world``) through a rendezvous that node 0's launcher serves at MASTER_ADDR:MASTER_PORT.
Every rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT.

When one rank fails (an exception, ``sys.exit(n)``, ``os._exit(n)``, a signal), the others are stopped (hydra
does it at once; the launcher kills whatever is left after a few seconds), its traceback is printed prefixed
with ``[rank R]: `` and the launcher exits with that rank's code (128 + the signal number for a signal). Ctrl-C
stops every rank and exits with 130.
"""
import argparse
import os
import signal
import socket
import sys
import tempfile
import shutil
import time

from . import _status
from ._mpiexec import find_mpiexec

DEFAULT_MASTER_ADDR = "127.0.0.1"
DEFAULT_MASTER_PORT = 29500
GRACE_S = 5.0  # after the first failure or a Ctrl-C, how long ranks have to end before they are killed
_POLL_S = 0.05


class LaunchError(Exception):
    """A job that cannot start (bad arguments, missing script, port in use): printed as one line, exit 1/2."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def build_parser(prog="flowrun"):
    p = argparse.ArgumentParser(
        prog=prog, allow_abbrev=False,
        description="Start N ranks of a Python script (or -m module) on this node and supervise them: the first "
                    "failing rank stops the job and gives the exit code.")
    # both spellings: flowrun's (--nproc, --node-rank) and OneFlow/torch launch's (--nproc_per_node, --node_rank)
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1,
                   help="ranks to start on this node (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0,
                   help="this node's index in [0, nnodes) (default 0)")
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default=DEFAULT_MASTER_ADDR,
                   help=f"address of node 0, where the rendezvous is served (default {DEFAULT_MASTER_ADDR})")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=None,
                   help=f"port of the rendezvous on node 0 (default {DEFAULT_MASTER_PORT}, or a free port on a "
                        f"single node when that one is taken)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (python -m), not as a script")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the target as an executable, not with this Python")
    p.add_argument("target", help="the script (or module with -m, or executable with --no-python)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the target")
    return p


def _check(args):
    if args.nproc < 1:
        raise LaunchError(f"--nproc must be at least 1, got {args.nproc}")
    if args.nnodes < 1:
        raise LaunchError(f"--nnodes must be at least 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        raise LaunchError(f"--node-rank must be in [0, {args.nnodes}) for --nnodes {args.nnodes}, got {args.node_rank}")
    if args.master_port is not None and not 0 < args.master_port < 65536:
        raise LaunchError(f"--master-port must be in [1, 65535], got {args.master_port}")
    if args.module and args.no_python:
        raise LaunchError("-m/--module and --no-python exclude each other")
    if args.no_python:
        if shutil.which(args.target) is None:
            raise LaunchError(f"{args.target}: command not found", code=2)
    elif not args.module and not os.path.isfile(args.target):
        raise LaunchError(f"can't open file {os.path.abspath(args.target)!r}: [Errno 2] No such file or directory",
                          code=2)


def _port_free(addr, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError:
            return False
        return True


def _in_use(addr, port):
    return LaunchError(f"--master-port {port} is in use on {addr}: another job (or another program) listens "
                       f"there; pass a free port with --master-port")


def _free_port(addr):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _rank_command(args):
    if args.no_python:
        return [args.target, *args.args]
    target = ["-m", args.target] if args.module else [args.target]
    return [sys.executable, "-m", "oneflow_dist._bootstrap", *target, *args.args]


def _env(args, port, status_dir):
    env = dict(os.environ)
    env.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(port), FLOWRUN_NNODES=str(args.nnodes),
               FLOWRUN_NODE_RANK=str(args.node_rank), FLOWRUN_STATUS_DIR=status_dir)
    if args.nproc > 1:
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: N ranks with all cores each oversubscribe the node
    return env


class _Job:
    """The running hydra job of this node, in a session of its own so that it can be killed as a whole.

    The launcher, not hydra, stops the job: the ranks' keepers record how each rank ended and always exit 0, and
    on the first failure (or Ctrl-C, or a failure on another node) the launcher signals every rank, kills the
    ranks that are left after ``GRACE_S``, and the whole session after another ``GRACE_S``."""

    def __init__(self, cmd, env, status_dir, watch=None):
        import subprocess

        from ._worker import _die_with_parent

        self.status_dir = status_dir
        self.watch = watch  # the multi-node rendezvous (node failures elsewhere), or None
        self.proc = subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent)
        self.interrupted = None
        self.remote_abort = None
        self.kill_at = None
        self.killed_ranks = False

    def kill_session(self):
        self.signal_ranks(signal.SIGKILL)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def signal_ranks(self, signum):
        for pid in _status.rank_pids(self.status_dir):
            if not self._ours(pid):
                continue
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _ours(self, pid):
        """Whether ``pid`` is still a rank of this job (a pid of a rank that ended may have been reused)."""
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return f"FLOWRUN_STATUS_DIR={self.status_dir}".encode() in f.read().split(b"\0")
        except FileNotFoundError:
            return False
        except OSError:  # no /proc: trust the pid
            return True

    def stop(self, signum):
        """Stops every rank with ``signum`` (SIGKILL for all that is left after ``GRACE_S``)."""
        _status.mark_stopping(self.status_dir)
        self.signal_ranks(signum)
        if self.kill_at is None:
            self.kill_at = time.monotonic() + GRACE_S

    def on_signal(self, signum, frame):
        if self.interrupted is not None:  # a second Ctrl-C: no more waiting
            self.kill_session()
            return
        self.interrupted = signum
        self.stop(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    def wait(self):
        """Waits for the job, stopping it on a failure; returns (hydra's exit code, first failure record)."""
        failure = None
        while True:
            rc = self.proc.poll()
            if rc is not None:
                break
            if failure is None:
                failure = _status.first_failure(self.status_dir)
                if failure is not None:
                    self.stop(signal.SIGTERM)
                    if self.watch is not None:
                        self.watch.report_failure(failure["code"], failure["rank"])
            if self.watch is not None and self.remote_abort is None and self.watch.aborted is not None:
                self.remote_abort = self.watch.aborted
                self.stop(signal.SIGTERM)
            if self.kill_at is not None and time.monotonic() > self.kill_at:
                if not self.killed_ranks:  # first the ranks themselves: their keepers still report to hydra
                    self.killed_ranks = True
                    self.signal_ranks(signal.SIGKILL)
                    self.kill_at = time.monotonic() + GRACE_S
                else:
                    self.kill_session()
                    self.kill_at = float("inf")
            time.sleep(_POLL_S)
        self.kill_session()  # anything left behind
        return rc, _status.first_failure(self.status_dir)


def run(args):
    """Runs the job that parsed ``args`` describe; returns the exit code."""
    _check(args)
    try:
        mpiexec = find_mpiexec()
    except RuntimeError as e:
        raise LaunchError(str(e)) from None
    port = args.master_port
    server = watch = None
    if args.nnodes > 1:
        from ._store import NodeWatch, StoreServer as serve

        port = DEFAULT_MASTER_PORT if port is None else port
        if args.node_rank == 0:
            try:
                server = serve(args.master_addr, port)
            except OSError:
                raise _in_use(args.master_addr, port) from None
        watch = NodeWatch(args.master_addr, port, args.node_rank)
    elif port is None:
        free = _port_free(args.master_addr, DEFAULT_MASTER_PORT)
        port = DEFAULT_MASTER_PORT if free else _free_port(args.master_addr)
    elif not _port_free(args.master_addr, port):
        raise _in_use(args.master_addr, port)
    status_dir = tempfile.mkdtemp(prefix="flowrun-")
    cmd = [mpiexec, "-n", str(args.nproc), sys.executable, "-m", "oneflow_dist._worker", *_rank_command(args)]
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        job = _Job(cmd, _env(args, port, status_dir), status_dir, watch)
        for s in old:
            signal.signal(s, job.on_signal)
        rc, failure = job.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(status_dir, ignore_errors=True)
    code = _result(rc, failure, job, args)
    if watch is not None:
        watch.finish(code)
    if server is not None:
        server.close()
    return code


def _result(rc, failure, job, args):
    if job.interrupted is not None:
        print(f"flowrun: stopped by {signal.Signals(job.interrupted).name}", file=sys.stderr)
        return 130 if job.interrupted == signal.SIGINT else 128 + job.interrupted
    if failure is not None:
        how = (f"was killed by signal {failure['signal']}" if failure["signal"]
               else f"exited with code {failure['code']}")
        print(f"flowrun: rank {failure['rank']} {how}; the other ranks were stopped", file=sys.stderr)
        return failure["code"]
    if job.remote_abort is not None:
        code, rank = job.remote_abort
        who = f"rank {rank}" if rank is not None else "the launcher of another node"
        print(f"flowrun: {who} failed on another node; this node's ranks were stopped", file=sys.stderr)
        return code
    return rc


def main(argv=None, prog="flowrun"):
    args = build_parser(prog).parse_args(argv)
    try:
        return run(args)
    except LaunchError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
