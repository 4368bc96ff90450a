"""runtime_state_dict of global graphs (flow-graph): each rank saves its own file in one job; a fresh job loads
them and trains on without tracing, equal to the graph that was saved and kept training; a graph laid out
otherwise, another rank's file or a job of another size is refused."""
import pytest

from helpers import run_ranks


@pytest.mark.parametrize("kind", ["pp", "dp", "tp", "zero"])
def test_global_graph_runtime_state_loads_in_a_fresh_job_and_trains_on(kind, tmp_path):
    assert run_ranks(2, "graph_runtime_state.py", kind, "save", tmp_path, timeout=300).count("saved") == 2
    assert run_ranks(2, "graph_runtime_state.py", kind, "load", tmp_path, timeout=300).count("loaded") == 2
    assert run_ranks(2, "graph_runtime_state.py", kind, "mismatch", tmp_path, timeout=300).count("refused") == 2
    assert run_ranks(1, "graph_runtime_state.py", kind, "mismatch", tmp_path, timeout=300).count("refused") == 1
