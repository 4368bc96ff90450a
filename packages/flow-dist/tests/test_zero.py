"""ZeRO on global parameters (oneflow_dist.zero): the checks run in ranks/zero_train.py on every rank."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_zero_stages_equal_unsharded_training_and_shard_the_state(nproc):
    out = run_ranks(nproc, "zero_train.py", timeout=400)
    assert out.count("zero ok") == nproc
