"""Pipeline parallelism inside nn.Graph (flow-graph): set_stage stages, 4 micro-batches in the 1F1B and the
zero-bubble (ZB-H1) orders."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_pipeline_graph_trains_like_single_process_in_1f1b_and_zero_bubble_order(nproc):
    out = run_ranks(nproc, "graph_pipeline.py", timeout=300)
    assert out.count("graph pipeline ok") == nproc


def test_pipeline_graph_two_stages_of_two_data_parallel_ranks():
    out = run_ranks(4, "graph_pipeline.py", "--dp", timeout=300)
    assert out.count("graph pipeline ok") == 4
