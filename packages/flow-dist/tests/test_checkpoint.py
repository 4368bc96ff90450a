"""Checkpoints of global tensors: saved from one layout and rank count, loaded into another (OneFlow's
``global_dst_rank`` / ``global_src_rank``), and read as plain tensors by a single process."""
import numpy as np
import pytest

import oneflow as flow
from helpers import run_ranks


@pytest.mark.parametrize("save_n,load_n", [(2, 4), (4, 1), (1, 2)])
def test_save_in_one_layout_load_in_another(tmp_path, save_n, load_n):
    out = run_ranks(save_n, "checkpoint_relayout.py", "save", tmp_path, timeout=240)
    assert out.count("checkpoint save ok") == save_n
    # the file holds plain local tensors: a process without any global setup reads it
    sd = flow.load(tmp_path / "ckpt.pt")
    a = np.arange(35, dtype=np.float32).reshape(7, 5) / 7
    for key in ("s0", "s1"):
        assert not sd[key].is_global
        np.testing.assert_array_equal(sd[key].numpy(), a)
    assert sd["b"].dtype == flow.float64 and sd["local"].tolist() == [1, 2, 3]
    np.testing.assert_array_equal(sd["nested"][0].numpy(), np.linspace(-1, 1, 12).reshape(3, 4))  # P summed
    out = run_ranks(load_n, "checkpoint_relayout.py", "load", tmp_path, timeout=240)
    assert out.count("checkpoint load ok") == load_n


@pytest.mark.parametrize("save_n,load_n", [(2, 4), (4, 2), (2, 1)])
def test_a_model_saved_tensor_parallel_loads_into_another_layout(tmp_path, save_n, load_n):
    assert run_ranks(save_n, "checkpoint_module.py", "save", tmp_path, timeout=240).count("save ok") == save_n
    assert run_ranks(load_n, "checkpoint_module.py", "load", tmp_path, timeout=240).count("load ok") == load_n
