"""examples/dlrm: a few training steps on 1 and 2 ranks (flowrun, under a timeout that kills the job's process
group) learn the data's signal, and both jobs train the same model."""
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from test_sharding import flowrun

DLRM = Path(__file__).resolve().parents[3] / "examples" / "dlrm"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("oneflow_dist") is None or not DLRM.is_dir(),
                                reason="needs flow-dist and the repository's examples/dlrm")
LINE = re.compile(r"step +(\d+)  train loss ([\d.]+)  eval AUC ([\d.]+)  eval logloss ([\d.]+)  lookups/s ([\d,]+)")


def train(nproc, tmp_path):
    args = ["--nproc", nproc, DLRM / "train.py", "--steps", 30, "--eval-every", 15, "--batch-size", 1024,
            "--cardinality", 20000, "--eval-size", 4096, "--persistent-path", tmp_path / f"n{nproc}"]
    rc, out, err = flowrun(args, timeout=300)
    assert rc == 0, f"exit code {rc}\nstdout:\n{out}\nstderr:\n{err}"
    rows = [m.groups() for m in LINE.finditer(out)]
    assert [int(r[0]) for r in rows] == [15, 30], out
    assert f"done: {nproc} rank(s)" in out
    return np.array([[float(v.replace(",", "")) for v in r[1:]] for r in rows])


def test_dlrm_trains_alike_on_one_and_two_ranks(tmp_path):
    one, two = train(1, tmp_path), train(2, tmp_path)
    assert one[-1, 1] > 0.7, one  # eval AUC well above chance: the signal is learned
    assert one[-1, 1] > one[0, 1] and one[-1, 2] < one[0, 2], one  # it improves with training
    # train loss, AUC and log-loss of the same model, up to rounding
    np.testing.assert_allclose(two[:, :3], one[:, :3], rtol=2e-3, atol=2e-3)
    assert (one[:, 3] > 0).all() and (two[:, 3] > 0).all()
    # each rank's shard holds part of the tables under its own folder
    assert sorted(p.name for p in (tmp_path / "n2").iterdir()) == ["0-2", "1-2"]


def test_auc_and_data():
    sys.path.insert(0, str(DLRM))
    try:
        import data
    finally:
        sys.path.remove(str(DLRM))
    # 2 positives, 2 negatives: pairs (pos > neg) = 3 of 4, one tie counted half
    assert data.auc([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.4]) == pytest.approx(3.5 / 4)
    assert data.auc([1, 1, 0], [0.1, 0.2, 0.3]) == 0.0
    cards = data.cardinalities(1000)
    d, s, y = data.batch(3, 5, 64, cards)
    assert d.shape == (64, 13) and s.shape == (64, 26) and y.shape == (64,)
    assert (s >= 0).all() and (s < np.array(cards)).all()
    d2, s2, y2 = data.batch(3, 5, 64, cards)  # a pure function of (seed, step)
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(data.batch(3, 6, 64, cards)[1], s)
