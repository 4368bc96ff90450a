"""The meta device: tensors with sizes, strides and dtype but no storage. Every registry op runs its meta
function there (views their own metadata code), so a whole training step can be traced without a kernel."""
import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import nn
from oneflow._dispatch import DispatchMode


def meta_pair(*shape, dtype="float32"):
    return flow.empty(*shape, dtype=getattr(flow, dtype), device="meta"), \
        torch.empty(*shape, dtype=getattr(torch, dtype), device="meta")


def same_meta(f, t):
    assert f.device.type == "meta" and f.is_meta
    assert tuple(f.shape) == tuple(t.shape), (f.shape, t.shape)
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (f.dtype, t.dtype)


@pytest.mark.parametrize("make", [
    lambda m, d: m.zeros(2, 3, device=d), lambda m, d: m.ones(4, device=d, dtype=m.float64),
    lambda m, d: m.full((2, 2), 7, device=d), lambda m, d: m.full((), True, device=d),
    lambda m, d: m.empty(0, 5, device=d), lambda m, d: m.arange(5, device=d), lambda m, d: m.arange(0, 1, 0.25, device=d),
    lambda m, d: m.linspace(0, 1, 7, device=d), lambda m, d: m.logspace(0, 1, 3, device=d),
    lambda m, d: m.eye(3, 4, device=d), lambda m, d: m.randn(2, 5, device=d), lambda m, d: m.rand(3, device=d),
    lambda m, d: m.randint(0, 9, (4,), device=d), lambda m, d: m.randperm(6, device=d),
    lambda m, d: m.tensor([[1.0, 2.0]], device=d), lambda m, d: m.tensor(3, device=d),
    lambda m, d: m.empty_strided((2, 3), (1, 2), device=d),
])
def test_creation_honours_device_meta(make):
    f, t = make(flow, "meta"), make(torch, "meta")
    same_meta(f, t)
    assert f.stride() == t.stride()


def test_like_functions_follow_the_input_device_and_default_device():
    x = flow.empty(2, 3, device="meta")
    for f in (flow.zeros_like, flow.ones_like, flow.empty_like, flow.rand_like, flow.randn_like):
        assert f(x).device.type == "meta"
    assert flow.zeros_like(x, device="cpu").device.type == "cpu"
    with flow.device("meta"):
        assert flow.ones(3).device.type == "meta"
        assert flow.get_default_device().type == "meta"
    assert flow.ones(3).device.type == "cpu"
    flow.set_default_device("meta")
    try:
        assert flow.zeros(1).device.type == "meta"
    finally:
        flow.set_default_device(None)
    assert flow.zeros(1).device.type == "cpu"


def test_views_have_torch_strides_and_offsets():
    f, t = meta_pair(4, 3, 8, 8)
    for fn in (lambda x: x[1], lambda x: x[:, 1:3], lambda x: x.transpose(0, 2), lambda x: x.permute(3, 0, 2, 1),
               lambda x: x.view(4, -1), lambda x: x.reshape(12, 64), lambda x: x.diagonal(0, 2, 3),
               lambda x: x.unbind(1)[2], lambda x: x.split([1, 2], dim=1)[1], lambda x: x[..., ::2],
               lambda x: x.unsqueeze(1).expand(4, 5, 3, 8, 8), lambda x: x.as_strided((2, 2), (3, 1), 5),
               lambda x: x[:, :1].squeeze(1), lambda x: x.select(2, -1), lambda x: x.narrow(3, 2, 4)):
        a, b = fn(f), fn(t)
        same_meta(a, b)
        assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()


def test_elementwise_broadcasting_promotion_and_reductions_match_torch():
    a, ta = meta_pair(3, 1, 5)
    b, tb = meta_pair(4, 1, dtype="float64")
    c, tc = meta_pair(5, dtype="int32")
    for fn in (lambda x, y, z: x + y, lambda x, y, z: x * z, lambda x, y, z: (x > y).logical_not(),
               lambda x, y, z: x.sum(), lambda x, y, z: (x * y).mean(dim=(0, 2), keepdim=True),
               lambda x, y, z: x.max(dim=2)[1], lambda x, y, z: z.cumsum(0), lambda x, y, z: x.softmax(-1),
               lambda x, y, z: x.transpose(1, 2) @ x, lambda x, y, z: x.new_zeros(()) + 1,
               lambda x, y, z: x[:, :, :0].exp(), lambda x, y, z: x.where(x > 0, y)):
        same_meta(fn(a, b, c), fn(ta, tb, tc))


def test_in_place_out_and_conversions():
    x = flow.empty(2, 3, device="meta")
    assert x.add_(1) is x and x.device.type == "meta"
    out = flow.empty(2, 3, device="meta")
    assert flow.mul(x, 2, out=out) is out
    assert x.to("meta") is x and flow.zeros(2).to("meta").device.type == "meta"
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.to("cpu")
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        flow.zeros((), device="meta").item()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        x.numpy()
    with pytest.raises(RuntimeError, match="same device"):
        flow.zeros(2, device="meta") + flow.zeros(2)
    # a 0-dim CPU tensor goes with any device, as in PyTorch
    assert (flow.zeros(2, device="meta") * flow.tensor(2.0)).device.type == "meta"


def test_data_dependent_ops_raise_not_implemented():
    x = flow.empty(4, device="meta")
    with pytest.raises(NotImplementedError, match="nonzero"):
        flow.nonzero(x)
    with pytest.raises(NotImplementedError, match="depend"):
        x[x > 0]


class Recorder(DispatchMode):
    def __init__(self):
        self.ops = []

    def __flow_dispatch__(self, op, inputs, attrs):
        out = op.redispatch(inputs, attrs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        self.ops.append((op.name, [tuple(o.shape) for o in outs if isinstance(o, flow.Tensor)]))
        for o in outs:  # all on meta but the optimizers' 0-dim step counters, kept on the CPU as in PyTorch
            if isinstance(o, flow.Tensor) and not (op.name in ("full", "zeros") and o.dim() == 0):
                assert o.device.type == "meta", op.name
        return out


@pytest.mark.parametrize("opt", [lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9),
                                 lambda p: flow.optim.AdamW(p, lr=1e-3)])
def test_a_whole_training_step_runs_on_meta_tensors(opt):
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Dropout(0.1), nn.Flatten(), nn.Linear(8 * 4 * 4, 10)).to("meta")
    optimizer = opt(model.parameters())
    x = flow.empty(2, 3, 8, 8, device="meta")
    y = flow.zeros(2, dtype=flow.int64, device="meta")
    with Recorder() as r:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    names = [n for n, _ in r.ops]
    for expected in ("convolution", "native_batch_norm", "max_pool", "addmm", "nll_loss",
                     "nll_loss_backward", "max_pool_backward", "native_batch_norm_backward",
                     "convolution_backward_weight"):
        assert expected in names, expected
    assert any(n.endswith("_update_") for n in names)
    assert loss.device.type == "meta" and loss.shape == ()
    assert all(p.grad is None for p in model.parameters())
    shapes = dict(r.ops)
    assert shapes["max_pool"] == [(2, 8, 4, 4), (2, 8, 4, 4)]


def test_op_meta_matches_eager_outputs():
    rng = np.random.default_rng(0)
    x = flow.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    idx, idx2 = flow.tensor([0, 2, 1]), flow.tensor([1, 0, 1])
    cases = [
        ("max_pool", [x], {"kernel_size": [2, 2]}), ("avg_pool", [x], {"kernel_size": [3, 3], "stride": [2, 2]}),
        ("adaptive_avg_pool", [x], {"output_size": [2, 3]}), ("adaptive_max_pool", [x], {"output_size": [1, 1]}),
        ("index", [x, None, idx], {}), ("index", [x, idx2, None, idx], {}), ("slice", [x], {"dim": 3, "start": 1}),
        ("diagonal", [x], {"offset": 1, "dim1": 2, "dim2": 3}), ("select", [x], {"dim": 1, "index": 2}),
        ("unbind", [x], {"dim": 1}), ("one_hot", [idx], {"num_classes": 4}), ("dropout", [x], {"p": 0.3}),
        ("add", [x, flow.tensor(1.0, dtype=flow.float64)], {}), ("sum", [x], {"dim": [1]}),
        ("full", [], {"size": [2], "fill_value": 3}), ("arange", [], {"start": 0, "end": 5, "step": 2}),
    ]
    for name, inputs, attrs in cases:
        op = getattr(flow._C.ops, name)
        eager = op.redispatch(inputs, attrs)
        eager = list(eager) if isinstance(eager, (list, tuple)) else [eager]
        expected = [(tuple(e.shape), e.dtype, e.device) for e in eager]
        assert op.meta(inputs, attrs) == expected, name


def test_every_op_has_a_meta_function_but_value_dependent_ones():
    missing = {o["name"] for o in flow.list_ops() if not o["has_meta"]}
    # composites get theirs from their parts; the rest depend on their inputs' values
    assert missing == {"masked_select", "nonzero", "unique", "unique_consecutive", "equal", "allclose",
                       "_rnn_layer_backward"}, missing
