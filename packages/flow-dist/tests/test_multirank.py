"""Collectives and DDP on real multi-rank jobs (flowrun --nproc 2 and 4)."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_equal_numpy(nproc):
    out = run_ranks(nproc, "collectives.py")
    assert out.count("collectives ok") == nproc


@pytest.mark.parametrize("nproc,bucket_size", [(2, 2), (2, 1), (4, 10)])
def test_ddp_equals_single_process_training(nproc, bucket_size):
    out = run_ranks(nproc, "ddp_train.py", bucket_size)
    assert out.count("ddp ok") == nproc
