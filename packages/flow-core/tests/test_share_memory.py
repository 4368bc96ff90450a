"""Tensor.share_memory_ / is_shared and Module.share_memory: storage moved into shared memory in place, and
seen by processes forked afterwards (Hogwild-style training)."""
import multiprocessing as mp

import numpy as np
import pytest

import oneflow as flow

fork = pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs the fork start method")


def test_share_memory_moves_the_storage_in_place():
    base = flow.arange(12.0)
    view = base[3:7]
    assert not base.is_shared()
    assert base.share_memory_() is base
    assert base.is_shared() and view.is_shared()  # views follow their storage
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0))
    view.mul_(10)
    np.testing.assert_array_equal(base[3:7].numpy(), [30, 40, 50, 60])
    ptr = base.data_ptr()
    base.share_memory_()  # already shared: nothing moves
    assert base.data_ptr() == ptr
    empty = flow.empty(0).share_memory_()
    assert empty.is_shared() and empty.numel() == 0
    # memory the tensor does not own (numpy's) is copied in; numpy keeps its own array
    a = np.ones(3, np.float32)
    t = flow.from_numpy(a).share_memory_()
    t.add_(1)
    assert a.tolist() == [1, 1, 1] and t.tolist() == [2, 2, 2]


def _child_writes(t, q):
    t[0] = 42.0
    t.add_(1)
    q.put(float(t.sum()))


@fork
def test_forked_process_writes_are_seen():
    t = flow.zeros(8).share_memory_()
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_writes, args=(t, q))
    p.start()
    p.join(timeout=60)
    assert p.exitcode == 0
    assert q.get(timeout=5) == 50.0
    assert t.tolist() == [43.0] + [1.0] * 7


def _child_trains(model):
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    x = flow.ones(4, 3)
    for _ in range(3):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


@fork
def test_module_share_memory_hogwild():
    flow.manual_seed(0)
    model = flow.nn.Linear(3, 2)
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    before = model.weight.detach().clone()
    ctx = mp.get_context("fork")
    p = ctx.Process(target=_child_trains, args=(model,))
    p.start()
    p.join(timeout=60)
    assert p.exitcode == 0
    # three SGD steps on sum(W x + b) with x = 1: each weight moved by -0.1 * 4 per step
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() - 1.2, rtol=1e-6, atol=1e-6)
