"""Global tensors on real multi-rank jobs (flowrun --nproc 2 and 4; the scripts in ranks/ check every rank
against NumPy and single-process results), and in a world of one."""
import subprocess
import sys

import pytest

import oneflow as flow
from helpers import RANKS, run_ranks


@pytest.mark.parametrize("nproc", [2, 4])
def test_to_global_boxing_table_and_errors(nproc):
    out = run_ranks(nproc, "global_boxing.py", timeout=240)
    assert out.count("global boxing ok") == nproc


def test_global_tensors_in_a_world_of_one():
    p = subprocess.run([sys.executable, str(RANKS / "global_boxing.py")], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "global boxing ok" in p.stdout


def test_local_tensors_are_not_global():
    x = flow.ones(2)
    assert x.is_global is False
    with pytest.raises(RuntimeError, match="expected a global tensor"):
        x.to_local()
    g = x.to_global(flow.placement("cpu", ranks=[0]), flow.sbp.broadcast)
    assert g.is_global and type(g).__name__ == "GlobalTensor" and g.to_local().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_ops_on_global_tensors_equal_single_process(nproc):
    out = run_ranks(nproc, "global_ops.py", timeout=400)
    assert out.count("global ops ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_global_autograd_and_data_parallel_training_equal_single_process(nproc):
    out = run_ranks(nproc, "global_train.py", timeout=300)
    assert out.count("global train ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_global_creation(nproc):
    out = run_ranks(nproc, "global_creation.py", timeout=300)
    assert out.count("global creation ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_split_global_creation_makes_only_the_shard_with_single_process_values_and_generator_state(nproc):
    out = run_ranks(nproc, "global_shard_creation.py", timeout=300)
    assert out.count("global shard creation ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_tensor_parallel_block_equals_single_process_with_megatrons_communication(nproc):
    out = run_ranks(nproc, "tp_block.py", timeout=240)
    assert out.count("tp block ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_modules_with_global_parameters_train_like_single_process(nproc):
    out = run_ranks(nproc, "global_module.py", timeout=300)
    assert out.count("global module ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_placement_changes_by_send_recv_are_differentiable(nproc):
    out = run_ranks(nproc, "global_placement.py", timeout=200)
    assert out.count("global placement ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_split_ranges_eye_randperm_tensor_and_random_likes_make_only_the_shard(nproc):
    out = run_ranks(nproc, "global_shard_ranges.py", timeout=300)
    assert out.count("global shard ranges ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_random_ops_and_dropout_on_split_tensors_draw_only_the_shard(nproc):
    out = run_ranks(nproc, "global_shard_random.py", timeout=300)
    assert out.count("global shard random ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_user_mixing_local_and_global_raises_while_internal_ops_work(nproc):
    out = run_ranks(nproc, "global_mixing.py", timeout=300)
    assert out.count("global mixing ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_in_place_writes_views_and_data_dependent_ops_equal_single_process(nproc):
    out = run_ranks(nproc, "global_writes.py", timeout=300)
    assert out.count("global writes ok") == nproc


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_recurrent_layers_on_a_split_batch_equal_single_process_forward_and_backward(nproc):
    out = run_ranks(nproc, "global_rnn.py", timeout=300)
    assert out.count("global rnn ok") == nproc
