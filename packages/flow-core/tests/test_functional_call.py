"""oneflow.func.functional_call / nn.utils.stateless.functional_call against torch.func.functional_call."""
import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close


def _pair(seed=0):
    """The same Linear -> BatchNorm1d -> Linear model in both frameworks."""
    nets = []
    for L in (flow, torch):
        L.manual_seed(seed)
        nets.append(L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4), L.nn.ReLU(), L.nn.Linear(4, 2)))
    fm, tm = nets
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return fm, tm


def test_outputs_and_gradients_flow_to_the_given_tensors():
    fm, tm = _pair()
    rng = np.random.default_rng(0)
    new = {"0.weight": rng.standard_normal((4, 3)), "3.bias": rng.standard_normal(2)}
    x = rng.standard_normal((5, 3)).astype(np.float32)
    res = []
    for L, m, call in ((flow, fm, flow.func.functional_call), (torch, tm, torch.func.functional_call)):
        given = {k: L.tensor(v.astype(np.float32), requires_grad=True) for k, v in new.items()}
        before = {k: v.detach().clone() for k, v in m.state_dict().items()}
        out = call(m, given, (L.tensor(x),))
        out.pow(2).sum().backward()
        # the module's own tensors are back, untouched by the call; BatchNorm's running stats (not given) moved
        after = m.state_dict()
        for k in ("0.weight", "3.bias", "0.bias"):
            np.testing.assert_array_equal(after[k].detach().numpy(), before[k].numpy())
        assert m[0].weight.grad is None
        res.append((out.detach().numpy(), given["0.weight"].grad.numpy(), given["3.bias"].grad.numpy(),
                    after["1.running_mean"].numpy()))
    for got, want in zip(*res):
        assert_close(flow.tensor(got), want, rtol=1e-5, atol=1e-6)


def test_given_buffers_are_updated_in_place_and_module_buffers_kept():
    fm, tm = _pair()
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    means = []
    for L, m, call in ((flow, fm, flow.func.functional_call), (torch, tm, torch.func.functional_call)):
        buf = {"1.running_mean": L.zeros(4), "1.running_var": L.ones(4)}
        call(m, buf, L.tensor(x))  # a single tensor is the one positional argument
        assert float(m[1].running_mean.abs().sum()) == 0.0
        means.append(buf["1.running_mean"].numpy())
    assert_close(flow.tensor(means[0]), means[1], rtol=1e-5, atol=1e-6)


def _tied(L):
    """b shares a's weight."""
    class T(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = L.nn.Linear(2, 2, bias=False)
            self.b = L.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x, scale=1.0):
            return self.b(self.a(x)) * scale
    return T()


@pytest.mark.parametrize("tie", [True, False])
def test_tied_weights_and_kwargs(tie):
    # with tie_weights the given a.weight also replaces b.weight; without, b keeps the module's weight
    tm, fm = _tied(torch), _tied(flow)
    fm.a.weight.data.copy_(flow.tensor(tm.a.weight.detach().numpy()))
    outs = []
    for L, m, call in ((flow, fm, flow.func.functional_call), (torch, tm, torch.func.functional_call)):
        out = call(m, {"a.weight": 2 * L.eye(2)}, (L.ones(1, 2),), {"scale": 3.0}, tie_weights=tie)
        outs.append(out.detach().numpy())
    assert_close(flow.tensor(outs[0]), outs[1], rtol=1e-6, atol=1e-6)


def test_errors_like_torch():
    fm, _ = _pair()
    call = flow.func.functional_call
    x = flow.randn(2, 3)
    with pytest.raises(ValueError, match=r"\['0.weight'\] appeared in multiple dictionaries"):
        call(fm, ({"0.weight": flow.ones(4, 3)}, {"0.weight": flow.zeros(4, 3)}), x)
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Sequential:\n\tUnexpected key\\(s\\): "
                       "'foo'.\n\tMissing key\\(s\\): '0.bias'"):
        call(fm, {"foo": flow.ones(1)}, x, strict=True)
    t = _tied(flow)
    with pytest.raises(ValueError, match="multiple values for keys \\['a.weight', 'b.weight'\\], which are tied"):
        call(t, {"a.weight": flow.eye(2), "b.weight": flow.eye(2)}, (flow.ones(1, 2),))
    same = 2 * flow.eye(2)  # one tensor under both tied names is no conflict
    np.testing.assert_array_equal(call(t, {"a.weight": same, "b.weight": same}, (flow.ones(1, 2),)).numpy(),
                                  [[4.0, 4.0]])
    # an exception inside forward still puts the module's tensors back
    w = fm[0].weight
    with pytest.raises(RuntimeError):
        call(fm, {"0.weight": flow.ones(4, 5)}, x)
    assert fm[0].weight is w
    # a name that is neither parameter nor buffer is a plain attribute for the call only
    call(fm, {"extra": flow.ones(1)}, x)
    assert not hasattr(fm, "extra")


def test_stateless_spelling_takes_torchs_keyword_and_warns_deprecated():
    m = flow.nn.Linear(3, 2, bias=False)
    x = flow.ones(1, 3)
    with pytest.warns(FutureWarning, match="oneflow.func.functional_call"):
        out = flow.nn.utils.stateless.functional_call(m, parameters_and_buffers={"weight": flow.ones(2, 3)}, args=(x,))
    np.testing.assert_allclose(out.numpy(), [[3.0, 3.0]])
    with pytest.raises(TypeError):
        flow.func.functional_call(m, parameters_and_buffers={"weight": flow.ones(2, 3)}, args=(x,))


def test_non_tensor_values_are_refused():
    with pytest.raises(TypeError, match="3 is not an instance of oneflow.Tensor"):
        flow.func.functional_call(flow.nn.Linear(2, 2), {"weight": 3}, flow.ones(2))
