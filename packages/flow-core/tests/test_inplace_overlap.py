"""In-place writes whose memory is shared in ill-defined ways raise PyTorch's errors instead of producing
order-dependent results: an output some of whose elements alias (an expanded tensor), and an input that
overlaps part of the output. fill_ / zero_ / masked_fill_ stay allowed on expanded tensors, as in PyTorch."""
import pytest

import oneflow as flow
from helpers import assert_close, torch

INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def _lib_ops(lib):
    return {
        "add_": lambda a: a.add_(1),
        "mul_": lambda a: a.mul_(2),
        "clamp_": lambda a: a.clamp_(0, 1),
        "relu_": lambda a: a.relu_(),
        "exp_": lambda a: a.exp_(),
        "addcmul_": lambda a: a.addcmul_(a, a),
        "uniform_": lambda a: a.uniform_(),
        "normal_": lambda a: a.normal_(),
        "copy_": lambda a: a.copy_(lib.ones(3, 3)),
    }


@pytest.mark.parametrize("name", list(_lib_ops(flow)))
def test_inplace_into_expanded_tensor_raises_like_torch(name):
    with pytest.raises(RuntimeError, match="more than one element"):
        _lib_ops(torch)[name](torch.zeros(3).expand(3, 3))
    base = flow.zeros(3)
    with pytest.raises(RuntimeError, match=INTERNAL):
        _lib_ops(flow)[name](base.expand(3, 3))
    assert_close(base, torch.zeros(3))  # nothing was written


@pytest.mark.parametrize("fn", [lambda a: a.fill_(2.0), lambda a: a.zero_(), lambda a: a.masked_fill_(a > -1, 2.0)])
def test_fills_into_expanded_tensor_are_allowed(fn):
    base, tbase = flow.ones(3), torch.ones(3)
    fn(base.expand(3, 3))
    fn(tbase.expand(3, 3))
    assert_close(base, tbase)


@pytest.mark.parametrize("fn", [
    lambda a: a.mul_(a[1, 2]),  # a 0-dim view of one of the written elements
    lambda a: a.view(-1)[:4].add_(a.view(-1)[2:6]),  # overlapping windows of one buffer
])
def test_input_partially_overlapping_output_raises_like_torch(fn):
    with pytest.raises(RuntimeError, match=PARTIAL):
        fn(torch.arange(12.0).reshape(3, 4))
    a = flow.arange(12.0).reshape(3, 4)
    with pytest.raises(RuntimeError, match=PARTIAL):
        fn(a)
    assert_close(a, torch.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("fn", [
    lambda a: a.add_(a),  # the same memory, same layout: well defined
    lambda a: a[:3, :3].add_(a[:3, :3].t()),  # not dense: too hard to decide, computed as PyTorch does
    lambda a: a[:, 1:].add_(a[:, :3]),
    lambda a: a[0].add_(a[1]),  # disjoint rows
])
def test_inplace_overlaps_torch_accepts(fn):
    a, t = flow.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    fn(a)
    fn(t)
    assert_close(a, t)


# gather/scatter/index_* kernels read their inputs in another order than they write: any shared memory with
# another input, even all of it, raises (PyTorch's assert_no_overlap); masked_scatter_ and a cloned source pass
NO_OVERLAP = {
    "index_copy_self": (lambda M, y: y.index_copy_(0, M.tensor([1, 0, 2]), y), True),
    "gather_out_aliases_input": (lambda M, y: M.gather(y, 0, M.tensor([[2, 2, 2]]), out=y[:1]), True),
    "index_add_self": (lambda M, y: y.index_add_(0, M.tensor([1, 0, 2]), y), True),
    "scatter_source_slice": (lambda M, y: y.scatter_(0, M.tensor([[1, 0, 2]]), y[1:2]), True),
    "scatter_add_source_slice": (lambda M, y: y.scatter_add_(0, M.tensor([[0, 1, 2]]), y[:1]), True),
    "index_select_out_aliases_input": (lambda M, y: M.index_select(y, 0, M.tensor([0]), out=y[2:]), True),
    "index_copy_cloned_source": (lambda M, y: y.index_copy_(0, M.tensor([1]), y[2:3].clone()), False),
    "masked_scatter_self": (lambda M, y: y.masked_scatter_(y > 3, y), False),
}


@pytest.mark.parametrize("case", list(NO_OVERLAP))
def test_index_kernels_refuse_any_overlap_like_torch(case):
    call, raises = NO_OVERLAP[case]
    for M in (flow, torch):
        y = M.arange(9.0).view(3, 3)
        if raises:
            with pytest.raises(RuntimeError, match=PARTIAL):
                call(M, y)
        else:
            call(M, y)
    if not raises:
        y, t = flow.arange(9.0).view(3, 3), torch.arange(9.0).view(3, 3)
        assert_close(call(flow, y), call(torch, t))
