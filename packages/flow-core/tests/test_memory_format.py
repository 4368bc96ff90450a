"""Memory formats against torch: channels_last / channels_last_3d layouts from contiguous, to, clone, empty and
Module.to, is_contiguous in each format, the errors for the wrong rank and for preserve_format, and that ops
take channels-last inputs with the same results."""
import pickle

import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


def layouts(M):
    x = M.arange(24.0).reshape(1, 2, 3, 4)
    y = x.contiguous(memory_format=M.channels_last)
    w = M.zeros(2, 3, 4, 5, 6).contiguous(memory_format=M.channels_last_3d)
    conv = M.nn.Conv2d(2, 3, 3).to(memory_format=M.channels_last)
    return [y.stride(), y.is_contiguous(), y.is_contiguous(memory_format=M.channels_last),
            x.is_contiguous(memory_format=M.channels_last), x.to(memory_format=M.channels_last).stride(),
            M.empty(2, 3, 4, 5, memory_format=M.channels_last).stride(),
            x.clone(memory_format=M.channels_last).stride(), w.stride(),
            w.is_contiguous(memory_format=M.channels_last_3d), conv.weight.stride(), conv.bias.stride(),
            x.contiguous(memory_format=M.preserve_format) is x, y.contiguous() is y]


def test_layouts_match_torch():
    assert layouts(flow) == layouts(torch)
    assert repr(flow.channels_last) == "oneflow.channels_last"
    assert pickle.loads(pickle.dumps(flow.channels_last)) is flow.channels_last


def test_wrong_rank_and_preserve_errors_like_torch():
    for M in (flow, torch):
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            M.ones(2, 3).contiguous(memory_format=M.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
            M.ones(2, 3, 4, 5).contiguous(memory_format=M.channels_last_3d)
        y = M.ones(1, 2, 3, 4).contiguous(memory_format=M.channels_last)
        with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
            y.contiguous(memory_format=M.preserve_format)


def test_ops_take_channels_last_inputs():
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype("float32")
    res, state = [], None
    for M in (torch, flow):
        conv = M.nn.Conv2d(3, 4, 3, padding=1)
        bn = M.nn.BatchNorm2d(4)
        if state is None:
            state = {k: v.detach().numpy() for k, v in conv.state_dict().items()}
        else:
            conv.load_state_dict({k: flow.tensor(v) for k, v in state.items()})
        model = M.nn.Sequential(conv, bn, M.nn.ReLU(), M.nn.MaxPool2d(2)).to(memory_format=M.channels_last)
        X = M.tensor(x).contiguous(memory_format=M.channels_last).requires_grad_()
        y = model(X)
        y.sum().backward()
        res.append((y.detach().numpy(), X.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_like_functions_preserve_a_dense_inputs_layout_like_torch():
    def strides(M):
        x = M.zeros(3, 4).t()
        cl = M.zeros(2, 3, 4, 5).contiguous(memory_format=M.channels_last)
        expanded = M.zeros(4, 1).expand(4, 3)
        gapped = M.zeros(3, 4)[:, ::2]
        out = [f(x).stride() for f in (M.empty_like, M.zeros_like, M.ones_like, M.rand_like, M.randn_like)]
        out += [M.full_like(cl, 2).stride(), M.randint_like(x, 5).stride(), M.zeros_like(expanded).stride(),
                M.ones_like(gapped).stride(), M.empty_like(x, memory_format=M.contiguous_format).stride(),
                M.zeros_like(M.zeros(2, 3, 4, 5), memory_format=M.channels_last).stride(),
                M.full_like(x, 2.0, requires_grad=True).is_leaf]
        return out
    assert strides(flow) == strides(torch)
    np.testing.assert_array_equal(flow.ones_like(flow.zeros(3, 4).t()).numpy(), np.ones((4, 3)))


def test_storages_identify_and_read_the_shared_block_like_torch():
    def facts(M):
        base = M.arange(6.0)
        t = base[2:]
        s = t.untyped_storage()
        with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
            u = t.storage()
        other = M.arange(6.0).untyped_storage().data_ptr()
        return [type(s).__name__, s.nbytes(), len(s), s.data_ptr() == t.data_ptr() - 8,
                s.data_ptr() == base.untyped_storage().data_ptr(), s.data_ptr() == other,
                s.tolist()[4:8], s[7], isinstance(s, M.UntypedStorage), type(u).__name__, len(u), u.tolist(), u[5],
                u.nbytes(), u.data_ptr() == s.data_ptr(), u.element_size()]
    assert facts(flow) == facts(torch)
