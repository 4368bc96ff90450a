"""nn.Module state-dict hooks, extra state, to_empty and set_submodule, against PyTorch's behaviour."""
import pytest

import oneflow as flow
from helpers import assert_close, torch


def _events(lib):
    log = []
    m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", type(mod).__name__, prefix)))
    m[0].register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: log.append(("post", type(mod).__name__, prefix, sorted(sd))))
    m.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, meta, strict, mk, uk, em: log.append(("lpre", type(mod).__name__, prefix, strict)))
    m[0].register_load_state_dict_post_hook(
        lambda mod, keys: log.append(("lpost", type(mod).__name__, list(keys.missing_keys))))
    sd = m.state_dict()
    m.load_state_dict(sd)
    return log


def test_state_dict_hooks_run_like_torch():
    assert _events(flow) == _events(torch)


def test_state_dict_post_hook_edits_in_place_and_handle_removes():
    m = flow.nn.Linear(2, 2)
    def drop_bias(mod, sd, prefix, meta):
        del sd[prefix + "bias"]

    h = m.register_state_dict_post_hook(drop_bias)
    assert list(m.state_dict()) == ["weight"]
    h.remove()
    assert list(m.state_dict()) == ["weight", "bias"]
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
    with pytest.raises(RuntimeError, match="must return None"):
        m.state_dict()


def test_load_post_hook_can_clear_missing_keys_before_strict_check():
    m = flow.nn.Linear(2, 2)
    sd = m.state_dict()
    del sd["bias"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
        m.load_state_dict(sd)
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    assert not m.load_state_dict(sd).missing_keys


def test_non_strict_load_reports_keys_like_torch():
    got = {}
    for lib in (flow, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        sd = m.state_dict()
        del sd["0.bias"]
        sd["0.extra"] = lib.ones(1)
        sd["1"] = lib.ones(1)
        r = m.load_state_dict(sd, strict=False)
        got[lib.__name__] = (sorted(r.missing_keys), sorted(r.unexpected_keys))
        assert "missing_keys=['0.bias']" in repr(r) and repr(r).startswith("_IncompatibleKeys(")
    assert got["oneflow"] == got["torch"]


class _Counter:
    def __init__(self, lib):
        class M(lib.nn.Linear):
            def __init__(self):
                super().__init__(2, 2)
                self.steps = 7

            def get_extra_state(self):
                return {"steps": self.steps}

            def set_extra_state(self, state):
                self.steps = state["steps"]

        self.cls = M


@pytest.mark.parametrize("lib", [flow, torch], ids=["oneflow", "torch"])
def test_extra_state_round_trip(lib, tmp_path):
    M = _Counter(lib).cls
    a, b = M(), M()
    a.steps = 42
    sd = lib.nn.Sequential(a).state_dict()
    assert list(sd) == ["0.weight", "0.bias", "0._extra_state"]
    lib.nn.Sequential(b).load_state_dict(sd)
    assert b.steps == 42
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0._extra_state"'):
        lib.nn.Sequential(b).load_state_dict(sd)
    with pytest.raises(RuntimeError, match="get_extra_state"):
        lib.nn.Module().get_extra_state()


def test_extra_state_survives_flow_save_load(tmp_path):
    M = _Counter(flow).cls
    a = M()
    a.steps = 3
    flow.save(a.state_dict(), tmp_path / "m.pt")
    b = M()
    b.load_state_dict(flow.load(tmp_path / "m.pt"))
    assert b.steps == 3
    assert_close(b.weight, a.weight)


def test_to_empty_keeps_parameters_shapes_and_identity():
    m = flow.nn.Sequential(flow.nn.Linear(2, 3), flow.nn.BatchNorm1d(3))
    w = m[0].weight
    m.to_empty(device="cpu")
    assert m[0].weight is w and tuple(w.shape) == (3, 2) and w.dtype == flow.float32
    assert tuple(m[1].running_mean.shape) == (3,) and m[1].num_batches_tracked.dtype == flow.int64
    before = m[1].running_mean
    m.to_empty(device="cpu", recurse=False)  # the Sequential itself holds nothing
    assert m[1].running_mean is before


def test_set_submodule_like_torch():
    for lib in (flow, torch):
        m = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(2, 2)))
        m.set_submodule("0.0", lib.nn.ReLU())
        assert isinstance(m[0][0], lib.nn.ReLU)
        m.set_submodule("0.1", lib.nn.Tanh())
        assert isinstance(m[0][1], lib.nn.Tanh)
        with pytest.raises(AttributeError, match="has no attribute `2`"):
            m.set_submodule("0.2", lib.nn.ReLU(), strict=True)
        with pytest.raises(AttributeError, match="has no attribute `x`"):
            m.set_submodule("x.y", lib.nn.ReLU())
        with pytest.raises(ValueError):
            m.set_submodule("0.0", 3)


def test_functional_prelu_and_inplace_selu_celu():
    x = torch.randn(2, 3, 4)
    for w in (torch.tensor([0.1, -0.2, 0.3]), torch.tensor([0.25])):
        fx, fw = flow.tensor(x.numpy(), requires_grad=True), flow.tensor(w.numpy(), requires_grad=True)
        tx, tw = x.clone().requires_grad_(), w.clone().requires_grad_()
        fy, ty = flow.nn.functional.prelu(fx, fw), torch.nn.functional.prelu(tx, tw)
        assert_close(fy, ty.detach())
        fy.sum().backward()
        ty.sum().backward()
        assert_close(fx.grad, tx.grad)
        assert_close(fw.grad, tw.grad)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        flow.nn.functional.prelu(flow.ones(2, 3), flow.ones(2))
    for name, args in (("selu_", ()), ("celu_", (0.5,))):
        a, t = flow.tensor([-1.5, 0.0, 2.0]), torch.tensor([-1.5, 0.0, 2.0])
        assert getattr(flow.nn.functional, name)(a, *args) is a
        getattr(torch.nn.functional, name)(t, *args)
        assert_close(a, t)
