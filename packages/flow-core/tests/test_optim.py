"""oneflow.optim against torch.optim: parameters and state after several steps for every optimizer and option
combination, param groups, zero_grad, state_dict round trips (ours and PyTorch's), the fused update ops."""
import copy

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import to_np

SHAPES = [(3, 4), (5,), (), (2, 3, 2)]
NP_DTYPES = {flow.float64: np.float64, flow.float32: np.float32}


def make_params(shapes=SHAPES, dtype=np.float64):
    arrays = [np.asarray(np.random.randn(*s)).astype(dtype) for s in shapes]
    fp = [flow.nn.Parameter(flow.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return fp, tp


def set_grads(fp, tp, dtype=np.float64, none=()):
    for i, (f, t) in enumerate(zip(fp, tp)):
        if i in none:
            f.grad = None
            t.grad = None
            continue
        g = np.asarray(np.random.randn(*tuple(t.shape))).astype(dtype)
        f.grad = flow.tensor(g)
        t.grad = torch.tensor(g)


def close(a, b, rtol, atol):
    np.testing.assert_allclose(to_np(a).astype(np.float64), to_np(b).astype(np.float64), rtol=rtol, atol=atol)


def compare(fo, to, fp, tp, rtol, atol):
    for f, t in zip(fp, tp):
        close(f, t, rtol, atol)
    for f, t in zip(fp, tp):
        fs, ts = fo.state.get(f, {}), to.state.get(t, {})
        assert sorted(fs) == sorted(ts), (sorted(fs), sorted(ts))
        for k in ts:
            if isinstance(ts[k], torch.Tensor):
                assert isinstance(fs[k], flow.Tensor), k
                assert str(fs[k].dtype).split(".")[-1] == str(ts[k].dtype).split(".")[-1], k
                assert tuple(fs[k].shape) == tuple(ts[k].shape), k
                close(fs[k], ts[k], rtol, atol)
            else:
                assert fs[k] == ts[k], k


def run_both(name, kwargs, steps=8, dtype=np.float64, rtol=1e-6, atol=1e-9, none_at=None):
    fp, tp = make_params(dtype=dtype)
    fo = getattr(flow.optim, name)(fp, **kwargs)
    to = getattr(torch.optim, name)(tp, **kwargs)
    for s in range(steps):
        set_grads(fp, tp, dtype, none=(none_at(s) if none_at else ()))
        fo.step()
        to.step()
        compare(fo, to, fp, tp, rtol, atol)
    return fo, to, fp, tp


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.6), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, eps=1e-4, maximize=True, weight_decay=0.01)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, eps=1e-5, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.1, eps=1e-4, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, eps=1e-3, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("NAdam", dict(lr=0.02, betas=(0.5, 0.7), eps=1e-4)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    # beta2 small enough that the rectified branch (rho_t > 5) starts within the run
    ("RAdam", dict(lr=0.02, betas=(0.7, 0.8), eps=1e-4)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.01, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),  # averaging starts within the run
]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_matches_torch_float64(name, kwargs):
    run_both(name, kwargs)


@pytest.mark.parametrize("name,kwargs", CASES[::3])
def test_matches_torch_float32(name, kwargs):
    run_both(name, kwargs, dtype=np.float32, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                                  "RAdam", "Rprop", "ASGD"])
def test_grad_none_is_skipped(name):
    kwargs = dict(lr=0.1, momentum=0.9) if name == "SGD" else {}
    # parameter 1 has no grad for the first 3 steps, parameter 3 never: no state, unchanged
    fo, to, fp, tp = run_both(name, kwargs, steps=6, none_at=lambda s: (1, 3) if s < 3 else (3,))
    if name != "Adagrad":  # Adagrad creates its state eagerly, like PyTorch
        assert len(fo.state[fp[3]]) == 0


def test_defaults_match_torch():
    p = [flow.nn.Parameter(flow.zeros(2))]
    tp = [torch.nn.Parameter(torch.zeros(2))]
    for name in ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop",
                 "ASGD"]:
        assert getattr(flow.optim, name)(p).defaults == getattr(torch.optim, name)(tp).defaults, name


def test_param_groups_different_lrs():
    fp, tp = make_params()
    fo = flow.optim.SGD([{"params": fp[:2]}, {"params": fp[2:], "lr": 0.5, "momentum": 0.5}], lr=0.1, momentum=0.9)
    to = torch.optim.SGD([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.5, "momentum": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in fo.param_groups] == [0.1, 0.5]
    assert fo.param_groups[1]["momentum"] == 0.5 and fo.param_groups[0]["nesterov"] is False
    for _ in range(5):
        set_grads(fp, tp)
        fo.step()
        to.step()
        compare(fo, to, fp, tp, 1e-6, 1e-9)


def test_add_param_group_and_errors():
    fp, tp = make_params()
    fo = flow.optim.Adam(fp[:2], lr=0.01)
    to = torch.optim.Adam(tp[:2], lr=0.01)
    fo.add_param_group({"params": fp[2:], "lr": 0.1})
    to.add_param_group({"params": tp[2:], "lr": 0.1})
    for _ in range(4):
        set_grads(fp, tp)
        fo.step()
        to.step()
        compare(fo, to, fp, tp, 1e-6, 1e-9)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        fo.add_param_group({"params": [fp[0]]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        fo.add_param_group([fp[0]])
    with pytest.raises(TypeError, match="ordering of tensors in sets"):
        fo.add_param_group({"params": {flow.nn.Parameter(flow.zeros(1))}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        fo.add_param_group({"params": [1.0]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        fo.add_param_group({"params": [flow.nn.Parameter(flow.zeros(2)) * 2]})
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        flow.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        flow.optim.SGD(fp[0], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        flow.optim.Adam(fp, lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        flow.optim.Adam(fp, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        flow.optim.SGD(fp, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid rho value"):
        flow.optim.Adadelta(fp, rho=1.5)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        flow.optim.SGD([fp[0], fp[0]], lr=0.1)


def test_duplicate_param_in_group_updates_once_and_named_params():
    p = flow.nn.Parameter(flow.ones(3))
    with pytest.warns(UserWarning):
        o = flow.optim.SGD([p, p], lr=0.5)
    p.grad = flow.ones(3)
    o.step()
    np.testing.assert_allclose(to_np(p), 0.5 * np.ones(3))
    o = flow.optim.SGD([("w", p)], lr=0.5)
    assert o.param_groups[0]["param_names"] == ["w"]
    assert o.state_dict()["param_groups"][0]["param_names"] == ["w"]


def test_zero_grad():
    p = flow.nn.Parameter(flow.ones(3))
    o = flow.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    assert p.grad is not None
    o.zero_grad()
    assert p.grad is None
    (p * 2).sum().backward()
    g = p.grad
    o.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    o.zero_grad(set_to_none=True)
    assert p.grad is None


def test_step_with_closure_and_real_backward():
    fp, tp = make_params(shapes=[(4, 3), (3,)])
    x = np.random.randn(5, 4)
    fo = flow.optim.Adam(fp, lr=0.05)
    to = torch.optim.Adam(tp, lr=0.05)

    def fclosure():
        fo.zero_grad()
        loss = ((flow.tensor(x) @ fp[0] + fp[1]) ** 2).sum()
        loss.backward()
        return loss

    def tclosure():
        to.zero_grad()
        loss = ((torch.tensor(x) @ tp[0] + tp[1]) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(6):
        fl = fo.step(fclosure)
        tl = to.step(tclosure)
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-9)
        compare(fo, to, fp, tp, 1e-8, 1e-10)


def clone_state_dict(sd):
    """A deep copy with every tensor cloned, as flow.save/flow.load would give."""
    return copy.deepcopy(sd)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(centered=True, momentum=0.5)), ("Adagrad", dict(lr_decay=0.01)), ("Adadelta", dict()),
    ("LAMB", dict(weight_decay=0.1)), ("Adamax", dict()), ("NAdam", dict()), ("RAdam", dict()), ("Rprop", dict()),
    ("ASGD", dict(t0=2)),
])
def test_state_dict_round_trip(name, kwargs):
    cls = getattr(flow.optim, name)
    arrays = [np.asarray(np.random.randn(*s)) for s in SHAPES]
    pa = [flow.nn.Parameter(flow.tensor(a)) for a in arrays]
    oa = cls([{"params": pa[:2]}, {"params": pa[2:], "lr": 0.005}], **kwargs)
    grads = [[np.asarray(np.random.randn(*s)) for s in SHAPES] for _ in range(8)]
    for s in range(4):
        for p, g in zip(pa, grads[s]):
            p.grad = flow.tensor(g)
        oa.step()
    sd = oa.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    pb = [flow.nn.Parameter(p.detach().clone()) for p in pa]
    ob = cls([{"params": pb[:2]}, {"params": pb[2:], "lr": 0.005}], **kwargs)
    ob.load_state_dict(clone_state_dict(sd))
    assert ob.param_groups[1]["lr"] == 0.005 and ob.param_groups[0]["params"][0] is pb[0]
    for s in range(4, 8):
        for p, q, g in zip(pa, pb, grads[s]):
            p.grad = flow.tensor(g)
            q.grad = flow.tensor(g)
        oa.step()
        ob.step()
    for p, q in zip(pa, pb):
        if name in ("NAdam", "ASGD"):
            # loading casts the one-element states other than step (mu_product; eta, mu) to the parameter's
            # dtype (float64 here), as PyTorch's load_state_dict does; the original keeps them in float32
            np.testing.assert_allclose(to_np(p), to_np(q), rtol=1e-7)
        else:
            np.testing.assert_array_equal(to_np(p), to_np(q))


def _torch_sd_to_flow(sd):
    out = {"state": {}, "param_groups": copy.deepcopy(sd["param_groups"])}
    for k, st in sd["state"].items():
        out["state"][k] = {n: flow.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for n, v in st.items()}
    return out


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(amsgrad=True)),
                                         ("RMSprop", dict(centered=True)), ("Adagrad", dict())])
def test_load_pytorch_state_dict_and_format(name, kwargs):
    fp, tp = make_params()
    fo = getattr(flow.optim, name)(fp, **kwargs)
    to = getattr(torch.optim, name)(tp, **kwargs)
    for _ in range(3):
        set_grads(fp, tp)
        to.step()
    fsd_keys = None
    fo.load_state_dict(_torch_sd_to_flow(to.state_dict()))
    for f, t in zip(fp, tp):  # copy torch's params
        with flow.no_grad():
            f.copy_(flow.tensor(t.detach().numpy()))
    for _ in range(3):
        set_grads(fp, tp)
        fo.step()
        to.step()
        compare(fo, to, fp, tp, 1e-6, 1e-9)
    fsd, tsd = fo.state_dict(), to.state_dict()
    fsd_keys = [sorted(g) for g in fsd["param_groups"]]
    assert fsd_keys == [sorted(g) for g in tsd["param_groups"]]
    assert sorted(fsd["state"]) == sorted(tsd["state"])


def test_load_state_dict_errors_and_casting():
    fp, _ = make_params()
    o = flow.optim.Adam(fp)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        o.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        o.load_state_dict({"state": {}, "param_groups": [dict(o.state_dict()["param_groups"][0], params=[0])]})
    # state saved in float32 for float64 params is cast to the param dtype; the step counter is kept
    sd = o.state_dict()
    sd["state"] = {0: {"step": flow.tensor(3.0), "exp_avg": flow.zeros(3, 4, dtype=flow.float32),
                       "exp_avg_sq": flow.zeros(3, 4, dtype=flow.float32)}}
    o.load_state_dict(sd)
    assert o.state[fp[0]]["exp_avg"].dtype == flow.float64
    assert o.state[fp[0]]["step"].dtype == flow.float32
    # an old-style float step is turned back into a tensor
    sd["state"][0]["step"] = 3
    o.load_state_dict(sd)
    assert isinstance(o.state[fp[0]]["step"], flow.Tensor) and o.state[fp[0]]["step"].item() == 3.0


def lamb_reference(ws, gs_seq, lr, betas, eps, wd, adam_w_mode, bias_correction, amsgrad):
    ws = [w.copy() for w in ws]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    vmax = [np.zeros_like(w) for w in ws]
    b1, b2 = betas
    for t, gs in enumerate(gs_seq, 1):
        for i, (w, g) in enumerate(zip(ws, gs)):
            if not adam_w_mode and wd:
                g = g + wd * w
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vv = v[i]
            if amsgrad:
                vmax[i] = np.maximum(vmax[i], v[i])
                vv = vmax[i]
            bc1 = 1 - b1 ** t if bias_correction else 1.0
            bc2 = 1 - b2 ** t if bias_correction else 1.0
            u = (m[i] / bc1) / (np.sqrt(vv) / np.sqrt(bc2) + eps)
            if adam_w_mode and wd:
                u = u + wd * w
            wn, un = np.linalg.norm(w), np.linalg.norm(u)
            trust = wn / un if wn > 0 and un > 0 else 1.0
            ws[i] = w - lr * trust * u
    return ws, m, v


@pytest.mark.parametrize("kwargs", [
    dict(), dict(weight_decay=0.1), dict(weight_decay=0.1, adam_w_mode=False),
    dict(do_bias_correction=False, lr=0.01), dict(amsgrad=True, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.01),
])
def test_lamb_against_formula(kwargs):
    shapes = SHAPES + [(300, 200)]  # the last one spans several chunks (partial norms summed)
    arrays = [np.asarray(np.random.randn(*s)) for s in shapes]
    arrays[2] = np.zeros(())  # a zero weight: trust ratio 1
    params = [flow.nn.Parameter(flow.tensor(a)) for a in arrays]
    o = flow.optim.LAMB(params, **kwargs)
    gs_seq = [[np.asarray(np.random.randn(*s)) for s in shapes] for _ in range(6)]
    for gs in gs_seq:
        for p, g in zip(params, gs):
            p.grad = flow.tensor(g)
        o.step()
    full = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, adam_w_mode=True, do_bias_correction=True,
                amsgrad=False)
    full.update(kwargs)
    ws, m, v = lamb_reference(arrays, gs_seq, full["lr"], full["betas"], full["eps"], full["weight_decay"],
                              full["adam_w_mode"], full["do_bias_correction"], full["amsgrad"])
    for p, w, mm, vv in zip(params, ws, m, v):
        np.testing.assert_allclose(to_np(p), w, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(o.state[p]["exp_avg"].numpy(), mm, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(o.state[p]["exp_avg_sq"].numpy(), vv, rtol=1e-9, atol=1e-12)
        assert o.state[p]["step"].item() == 6.0


def test_low_precision_params():
    for dt in (flow.bfloat16, flow.float16):
        a = np.random.randn(64).astype(np.float32)
        p = flow.nn.Parameter(flow.tensor(a).to(dt))
        ref = torch.nn.Parameter(torch.tensor(a, dtype=torch.float64))
        o = flow.optim.Adam([p], lr=0.01)
        to = torch.optim.Adam([ref], lr=0.01)
        for _ in range(5):
            g = np.random.randn(64).astype(np.float32)
            p.grad = flow.tensor(g).to(dt)
            ref.grad = torch.tensor(g, dtype=torch.float64)
            o.step()
            to.step()
        assert p.dtype == dt and o.state[p]["exp_avg"].dtype == dt
        np.testing.assert_allclose(to_np(p.float()), ref.detach().numpy(), rtol=2e-2, atol=2e-2)


def test_noncontiguous_grad_and_state():
    w = np.random.randn(4, 6)
    p = flow.nn.Parameter(flow.tensor(w))
    tp = torch.nn.Parameter(torch.tensor(w))
    o = flow.optim.SGD([p], lr=0.1, momentum=0.9)
    to = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    for _ in range(3):
        g = np.random.randn(6, 4)
        p.grad = flow.tensor(g).t()  # a transposed (non-contiguous) gradient
        tp.grad = torch.tensor(g).t()
        o.step()
        to.step()
    close(p, tp, 1e-9, 1e-12)
    # a non-contiguous state tensor is updated through (written back)
    buf_t = flow.zeros(6, 4, dtype=flow.float64).t()
    o.state[p]["momentum_buffer"] = buf_t
    to.state[tp]["momentum_buffer"] = torch.zeros(4, 6, dtype=torch.float64)
    g = np.random.randn(4, 6)
    p.grad, tp.grad = flow.tensor(g), torch.tensor(g)
    o.step()
    to.step()
    close(buf_t, to.state[tp]["momentum_buffer"], 1e-9, 1e-12)
    close(p, tp, 1e-9, 1e-12)


def test_fused_ops_registered_and_one_call_per_group(monkeypatch):
    infos = {i["name"]: i for i in flow.list_ops()}
    for op in ["sgd_update_", "adam_update_", "rmsprop_update_", "adagrad_update_", "adadelta_update_",
               "lamb_update_", "adamax_update_", "nadam_update_", "radam_update_", "rprop_update_", "asgd_update_"]:
        assert "optimizer" in infos[op]["traits"], op
        assert not infos[op]["differentiable"]
    calls = []
    orig = flow.optim.Optimizer._run

    def counting(name, lists, **attrs):
        calls.append((name, [len(x) for x in lists]))
        return orig(name, lists, **attrs)

    monkeypatch.setattr(flow.optim.Optimizer, "_run", staticmethod(counting))
    params = [flow.nn.Parameter(flow.randn(3)) for _ in range(10)]
    o = flow.optim.Adam([{"params": params[:6]}, {"params": params[6:]}])
    for p in params:
        p.grad = flow.randn(3)
    o.step()
    # params, grads, exp_avgs, exp_avg_sqs, steps, max_exp_avg_sqs (empty without amsgrad)
    assert calls == [("adam_update_", [6] * 5 + [0]), ("adam_update_", [4] * 5 + [0])]


def test_fused_op_direct_and_errors():
    p = flow.zeros(3, dtype=flow.float64)
    g = flow.ones(3, dtype=flow.float64)
    lr = flow.tensor(0.5, dtype=flow.float64)
    v0 = p._version
    flow._C.ops.sgd_update_([p], [g], [], lr)
    np.testing.assert_array_equal(to_np(p), [-0.5, -0.5, -0.5])
    assert p._version > v0
    with pytest.raises(RuntimeError, match="sgd_update_: argument 'momentum_buffers' has 0 tensors but 'params' has 1"):
        flow._C.ops.sgd_update_([p], [g], [], lr, momentum=0.9)
    with pytest.raises(RuntimeError, match=r"sgd_update_: grads\[0\] has shape"):
        flow._C.ops.sgd_update_([p], [flow.ones(4, dtype=flow.float64)], [], lr)
    with pytest.raises(TypeError, match=r"momentum_buffers\[0\] has dtype"):
        flow._C.ops.sgd_update_([p], [g], [flow.zeros(3)], lr, momentum=0.9)
    with pytest.raises(TypeError, match=r"params\[0\] must be floating point"):
        flow._C.ops.sgd_update_([flow.zeros(3, dtype=flow.int64)], [g], [], lr)
    with pytest.raises(RuntimeError, match=r"params\[1\] appears twice"):
        flow._C.ops.sgd_update_([p, p], [g, g], [], lr)
    with pytest.raises(IndexError, match="fresh index"):
        flow._C.ops.sgd_update_([p], [g], [flow.zeros(3, dtype=flow.float64)], lr, momentum=0.9, fresh=[3])
    with pytest.raises(RuntimeError, match=r"adam_update_: steps\[0\] \(the step counter\)"):
        flow._C.ops.adam_update_([p], [g], [flow.zeros_like(p)], [flow.zeros_like(p)], [flow.zeros(2)], [], lr)
    # a float32 gradient for a float64 parameter is cast
    flow._C.ops.sgd_update_([p], [flow.ones(3)], [], lr)
    np.testing.assert_array_equal(to_np(p), [-1.0, -1.0, -1.0])
    # empty lists: nothing to do
    flow._C.ops.adam_update_([], [], [], [], [], [], lr)


def test_large_group_parallel_path():
    # > the parallel grain, several chunks per tensor: same as torch
    fp, tp = make_params(shapes=[(300, 300), (70000,), (10,)], dtype=np.float32)
    fo = flow.optim.AdamW(fp, lr=0.01, amsgrad=True)
    to = torch.optim.AdamW(tp, lr=0.01, amsgrad=True)
    for _ in range(3):
        set_grads(fp, tp, np.float32)
        fo.step()
        to.step()
    compare(fo, to, fp, tp, 2e-5, 2e-6)


def test_repr_and_hooks():
    p = flow.nn.Parameter(flow.zeros(2))
    o = flow.optim.SGD([p], lr=0.1)
    tp = torch.nn.Parameter(torch.zeros(2))
    assert repr(o) == repr(torch.optim.SGD([tp], lr=0.1))
    seen = []
    h1 = o.register_step_pre_hook(lambda opt, a, k: seen.append("pre"))
    h2 = o.register_step_post_hook(lambda opt, a, k: seen.append("post"))
    p.grad = flow.ones(2)
    o.step()
    assert seen == ["pre", "post"]
    h1.remove()
    h2.remove()
    o.step()
    assert seen == ["pre", "post"]


@pytest.mark.parametrize("cls,option,default", [
    ("SGD", "nesterov", False), ("Adam", "amsgrad", False), ("Adam", "decoupled_weight_decay", False),
    ("AdamW", "decoupled_weight_decay", True), ("RMSprop", "centered", False), ("RMSprop", "momentum", 0),
    ("Adadelta", "maximize", False), ("Adagrad", "fused", None)])
def test_unpickling_fills_group_options_older_pickles_lack(cls, option, default):
    opt = getattr(flow.optim, cls)([flow.nn.Parameter(flow.ones(2))], lr=0.1)
    state = {k: v for k, v in opt.__dict__.items()}
    state["param_groups"] = [{k: v for k, v in g.items() if k != option} for g in opt.param_groups]
    restored = getattr(flow.optim, cls).__new__(getattr(flow.optim, cls))
    restored.__setstate__(state)
    assert restored.param_groups[0][option] == default


def test_adam_variants_nan_and_state_checks():
    # Adamax's exp_inf = max(beta2 * exp_inf, |g| + eps) keeps a NaN gradient's NaN, as torch.maximum does
    fp, tp = make_params(shapes=[(4,)])
    fo, to = flow.optim.Adamax(fp), torch.optim.Adamax(tp)
    g = np.array([1.0, np.nan, -2.0, 0.5])
    fp[0].grad, tp[0].grad = flow.tensor(g), torch.tensor(g)
    fo.step()
    to.step()
    np.testing.assert_array_equal(np.isnan(to_np(fo.state[fp[0]]["exp_inf"])), [False, True, False, False])
    close(fp[0], tp[0].detach(), 1e-12, 0)  # NaN in the same place, equal elsewhere (assert_allclose: NaN == NaN)
    # NAdam's mu_product must be a one-element tensor
    p, gr = flow.zeros(3, dtype=flow.float64), flow.ones(3, dtype=flow.float64)
    st = [flow.zeros(3, dtype=flow.float64) for _ in range(2)]
    with pytest.raises(RuntimeError, match=r"mu_products\[0\] \(one-element state\)"):
        flow._C.ops.nadam_update_([p], [gr], [st[0]], [st[1]], [flow.zeros(())], [flow.ones(2)],
                                  flow.tensor(0.1, dtype=flow.float64))
