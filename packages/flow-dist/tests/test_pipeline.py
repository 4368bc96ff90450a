"""Pipeline parallelism (oneflow_dist.pipeline) on real jobs: one stage per rank; the checks run in
ranks/pipeline_train.py on every rank."""
import pytest

from helpers import RANKS, run, run_ranks


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_pipeline_schedules_equal_single_process_training(nproc):
    out = run_ranks(nproc, "pipeline_train.py", timeout=400)
    assert out.count("pipeline ok") == nproc


def test_a_rank_dying_mid_pipeline_ends_the_job_with_its_code():
    rc, out, err, seconds = run(["--nproc", 4, RANKS / "pipeline_train.py", "die"], timeout=120)
    assert rc == 3, (out, err)
    assert "rank 1 exited with code 3" in err
    assert seconds < 60
