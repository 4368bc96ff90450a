"""Sharding over ranks (flowrun --nproc 2 and 4, needs flow-dist): equal to one single-rank table. Each job runs
under a timeout that kills its whole process group."""
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("oneflow_dist") is None,
                                reason="sharding needs flow-dist (pip install packages/flow-dist)")

RANKS = Path(__file__).parent / "ranks_sharding"


def flowrun(args, timeout=180):
    """Runs ``flowrun ARGS`` in a new session and returns (rc, stdout, stderr); on timeout the session is killed
    and the test fails."""
    exe = Path(sys.executable).parent / "flowrun"
    cmd = ([str(exe)] if exe.exists() else [sys.executable, "-m", "oneflow_dist.launcher"]) + [str(a) for a in args]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{cmd} did not end within {timeout} s\nstdout:\n{out}\nstderr:\n{err}") from None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything the job left behind
        except ProcessLookupError:
            pass
    return p.returncode, out, err


@pytest.mark.parametrize("nproc", [2, 4])
def test_sharded_training_equals_single_rank(nproc, tmp_path):
    rc, out, err = flowrun(["--nproc", nproc, RANKS / "equal_single.py", tmp_path])
    assert rc == 0, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert out.count("sharding ok") == nproc
    # each rank wrote only its own shard folder
    assert sorted(os.listdir(tmp_path / "sharded")) == [f"{r}-{nproc}" for r in range(nproc)]


@pytest.mark.parametrize("nproc", [2, 4])
def test_sharded_embedding_inside_nn_graph_equals_eager(nproc, tmp_path):
    pytest.importorskip("oneflow_graph")
    rc, out, err = flowrun(["--nproc", nproc, RANKS / "graph.py", tmp_path])
    assert rc == 0, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert out.count("graph sharding ok") == nproc


@pytest.mark.parametrize("nproc", [2, 3])
def test_sharded_variants_equal_single_rank(nproc, tmp_path):
    rc, out, err = flowrun(["--nproc", nproc, RANKS / "variants.py", tmp_path])
    assert rc == 0, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert out.count("variants ok") == nproc


def test_owner_hash_is_balanced_and_stable():
    from oneflow_embedding.sharding import owners

    keys = np.arange(100_000, dtype=np.int64)
    for n in (2, 3, 4, 8):
        counts = np.bincount(owners(keys, n), minlength=n)
        assert counts.min() > 0.95 * keys.size / n, counts
    # consecutive ids do not all go to one rank, and the owner depends on the id alone
    o = owners(keys, 4)
    assert len(set(o[:16].tolist())) > 1
    np.testing.assert_array_equal(owners(keys[::-1].copy(), 4), o[::-1])
    # negative (padding) and huge ids have owners too
    assert all(0 <= o < 3 for o in owners(np.array([-1, -2**63, 2**63 - 1], np.int64), 3).tolist())
