"""Global tensors inside nn.Graph (flow-graph): data and tensor parallel training graphs on 1, 2 and 4 ranks."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_data_parallel_graph_equals_single_process_and_eager_global_training(nproc):
    out = run_ranks(nproc, "graph_global_dp.py", timeout=300)
    assert out.count("graph global dp ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_tensor_parallel_graph_has_megatrons_all_reduces_as_plan_nodes(nproc):
    out = run_ranks(nproc, "graph_global_tp.py", timeout=300)
    assert out.count("graph global tp ok") == nproc


def test_graph_global_2d_mesh():
    out = run_ranks(4, "graph_global_2d.py", timeout=300)
    assert out.count("graph global 2d ok") == 4


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_graph_enable_zero_stages_train_like_single_process(nproc):
    out = run_ranks(nproc, "graph_zero.py", timeout=300)
    assert out.count("graph zero ok") == nproc
