"""Starting real multi-rank jobs from the tests: each under a timeout that kills its whole process group."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RANKS = Path(__file__).parent / "ranks"


def flowrun_cmd():
    exe = Path(sys.executable).parent / "flowrun"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "oneflow_dist.launcher"]


def run(args, timeout=120, env=None, cmd=None):
    """Runs ``flowrun ARGS`` (or ``cmd``) in a new session; returns (rc, stdout, stderr, seconds). On timeout
    the whole session is killed and the test fails."""
    full = (cmd or flowrun_cmd()) + [str(a) for a in args]
    e = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=e)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{full} did not end within {timeout} s\nstdout:\n{out}\nstderr:\n{err}") from None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything the job left behind
        except ProcessLookupError:
            pass
    return p.returncode, out, err, time.monotonic() - t0


def run_ranks(nproc, script, *args, timeout=180):
    """Runs tests/ranks/SCRIPT on ``nproc`` ranks and asserts that every rank succeeded."""
    rc, out, err, _ = run(["--nproc", nproc, RANKS / script, *args], timeout=timeout)
    assert rc == 0, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return out
