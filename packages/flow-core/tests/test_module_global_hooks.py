"""Hooks common to every module (``nn.modules.module.register_module_*``), checked against torch: their order
relative to each module's own hooks, what they may replace, always_call, and removal."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


def run_forward_trace(M):
    mm = M.nn.modules.module
    log = []
    lin = M.nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda m, a: log.append("local pre"))
    lin.register_forward_hook(lambda m, a, o: log.append("local post"))
    handles = [mm.register_module_forward_pre_hook(lambda m, a: log.append(f"global pre {type(m).__name__}")),
               mm.register_module_forward_hook(lambda m, a, o: log.append(f"global post {type(m).__name__}")),
               mm.register_module_forward_hook(lambda m, a, k, o: o * 2, with_kwargs=True)]
    try:
        seq = M.nn.Sequential(lin, M.nn.ReLU())
        x = M.ones(1, 2)
        out = seq(x)
        plain = M.nn.ReLU()(x)  # doubled by the global hook too
    finally:
        for h in handles:
            h.remove()
    after = M.nn.ReLU()(x)
    return log, out.detach().numpy().shape, plain.numpy(), after.numpy()


def test_global_forward_hooks_run_before_local_ones_like_torch():
    got, want = run_forward_trace(flow), run_forward_trace(torch)
    assert got[0] == want[0]
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])
    assert got[2].tolist() == [[2.0, 2.0]] and got[3].tolist() == [[1.0, 1.0]]


def test_global_always_call_hook_runs_when_forward_raises():
    for M in (flow, torch):
        seen = []

        class Boom(M.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        h = M.nn.modules.module.register_module_forward_hook(lambda m, a, o: seen.append(o), always_call=True)
        try:
            with pytest.raises(ValueError, match="boom"):
                Boom()(M.ones(1))
        finally:
            h.remove()
        assert seen == [None]


def run_backward_trace(M):
    mm = M.nn.modules.module
    log = []
    lin = M.nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: log.append("local"))
    lin.register_full_backward_pre_hook(lambda m, go: log.append("local pre"))

    def scale_grad_input(m, gi, go):
        log.append(f"global {type(m).__name__} {[tuple(g.shape) if g is not None else None for g in gi]}")
        return tuple(g * 10 if g is not None else None for g in gi)

    handles = [mm.register_module_full_backward_hook(scale_grad_input),
               mm.register_module_full_backward_pre_hook(lambda m, go: log.append("global pre"))]
    try:
        x = M.tensor(np.arange(6.0, dtype="float32").reshape(2, 3), requires_grad=True)
        lin(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return log, x.grad.numpy(), lin.weight.detach().numpy()


def test_global_backward_hooks_run_before_local_ones_and_may_replace_grad_input():
    torch.manual_seed(0)
    t_log, t_grad, t_w = run_backward_trace(torch)
    f_log, f_grad, f_w = run_backward_trace(flow)
    assert f_log == t_log
    # the global hook scaled grad_input by 10: x.grad = 10 * ones @ W
    np.testing.assert_allclose(f_grad, 10 * np.ones((2, 2), "float32") @ f_w, rtol=1e-6)
    np.testing.assert_allclose(t_grad, 10 * np.ones((2, 2), "float32") @ t_w, rtol=1e-6)


def run_registration(M):
    mm = M.nn.modules.module
    seen, made = [], []

    def on_param(m, name, p):
        seen.append(("param", name))
        if name == "weight":
            made.append(M.nn.Parameter(M.zeros(p.shape)))
            return made[-1]
        return None

    def on_buffer(m, name, b):
        seen.append(("buffer", name))

    def on_module(m, name, sub):
        seen.append(("module", name))
        return M.nn.Tanh() if name == "act" else None

    handles = [mm.register_module_parameter_registration_hook(on_param),
               mm.register_module_buffer_registration_hook(on_buffer),
               mm.register_module_module_registration_hook(on_module)]
    try:
        net = M.nn.Module()
        net.lin = M.nn.Linear(2, 2)
        net.act = M.nn.ReLU()
        net.register_buffer("running", M.ones(2))
        net.running = M.zeros(2)  # reassigning a buffer registers it again
    finally:
        for h in handles:
            h.remove()
    net.other = M.nn.ReLU()  # hooks removed: not seen
    return seen, type(net.act).__name__, net.lin.weight is made[0]


def test_registration_hooks_see_and_may_replace_like_torch():
    got, want = run_registration(flow), run_registration(torch)
    assert got == want
    assert got[1] == "Tanh" and got[2]
