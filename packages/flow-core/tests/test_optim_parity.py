"""oneflow.optim against torch.optim where they used to differ: argument errors (tensor lr and betas, fused,
capturable, differentiable), step hooks, handles, load_state_dict casting of "step", step counters of fused
groups, unpickling old scalar state, tensor learning rates in the schedulers, the scheduler's checks of the
optimizer's step, and swa_utils (decay checks, SWALR state, multi_avg_fn groups)."""
import copy
import warnings

import numpy as np
import pytest
import torch
import torch.optim.swa_utils as tswa

import oneflow as flow
import oneflow.optim.swa_utils as fswa
from helpers import to_np

LIBS = (flow, torch)
ALL = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adagrad", "Adadelta",
       "LBFGS"]
CAPTURABLE = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adadelta"]


def param(lib, values=(0.5, -1.0, 2.0), dtype=None):
    t = lib.tensor(np.asarray(values, dtype=np.float32))
    return lib.nn.Parameter(t if dtype is None else t.to(dtype))


def outcome(fn):
    """('ok', value) or (exception type name, message) of fn(), with warnings recorded as (category, message)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
            res = (type(e).__name__, str(e))
    return res, [(x.category.__name__, str(x.message)) for x in w]


def same_outcome(fn, normalize=lambda s: s):
    """fn(flow) and fn(torch) raise the same error (type and message) or both succeed; returns the outcomes."""
    (fr, _), (tr, _) = outcome(lambda: fn(flow)), outcome(lambda: fn(torch))
    assert fr[0] == tr[0], (fr, tr)
    if fr[0] != "ok":
        assert normalize(fr[1]) == normalize(tr[1]), (fr, tr)
    return fr, tr


# ---- constructor errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_tensor_lr_must_have_one_element(name):
    fr, _ = same_outcome(lambda L: getattr(L.optim, name)([param(L)], lr=L.tensor([0.1, 0.2])))
    assert fr == ("ValueError", "Tensor lr must be 1-element")
    # a 1-element tensor is accepted and steps like the float
    for L in LIBS:
        p = param(L)
        opt = getattr(L.optim, name)([p], lr=L.tensor(0.01)) if name != "LBFGS" else None
        if opt is not None:
            p.grad = L.ones(3)
            opt.step()


@pytest.mark.parametrize("kwargs,error", [
    (lambda L: dict(lr=L.tensor(0.01), foreach=True), "ValueError"),
    # an int beta in range: neither both floats nor both tensors
    (lambda L: dict(betas=(0.9, 0)), "ValueError"),
    (lambda L: dict(betas=(0, 0.99)), "ValueError"),
    (lambda L: dict(betas=(L.tensor(0.9), 0.99)), "ValueError"),
    (lambda L: dict(betas=(L.tensor(0.9), L.tensor([0.99]), 0.5)), "ok"),
    (lambda L: dict(betas=(L.tensor(0.9), L.tensor(0.99)), foreach=True), "ValueError"),
    # the range check comes first and cannot reduce a 2-element tensor to a bool
    (lambda L: dict(betas=(L.tensor(0.9), L.tensor([0.99, 0.9]))), "RuntimeError"),
])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_tensor_hyperparameter_errors(name, kwargs, error):
    fr, _ = same_outcome(lambda L: getattr(L.optim, name)([param(L)], **kwargs(L)))
    assert fr[0] == error


def test_adam_tensor_betas_step_like_floats():
    results = {}
    for L in LIBS:
        for kind in ("float", "tensor"):
            p = param(L)
            betas = (0.8, 0.9) if kind == "float" else (L.tensor([0.8]), L.tensor(0.9))
            opt = L.optim.Adam([p], lr=0.1, betas=betas)
            # tensor betas are kept as 0-dim tensors
            assert kind == "float" or all(b.dim() == 0 for b in opt.param_groups[0]["betas"])
            for i in range(3):
                p.grad = L.tensor(np.array([1.0, -2.0, 0.5], dtype=np.float32) * (i + 1))
                opt.step()
            results[(L.__name__, kind)] = to_np(p.detach()) if L is flow else p.detach().numpy()
    for kind in ("float", "tensor"):
        np.testing.assert_allclose(results[("oneflow", kind)], results[("torch", kind)], rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
@pytest.mark.parametrize("flags", [dict(fused=True, foreach=True), dict(fused=True, differentiable=True)])
def test_fused_flag_errors(name, flags):
    fr, _ = same_outcome(lambda L: getattr(L.optim, name)([param(L)], **flags))
    assert fr[0] == "RuntimeError"


# ---- step-time flag checks -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CAPTURABLE)
def test_capturable_needs_a_capturable_device(name):
    def run(L):
        p = param(L)
        opt = getattr(L.optim, name)([p], capturable=True)
        p.grad = L.ones(3)
        opt.step()

    # the messages agree up to the list of devices each framework supports
    fr, _ = same_outcome(run, normalize=lambda m: m.split(" must be on supported devices")[0])
    assert fr[0] == "AssertionError" and fr[1].startswith("If capturable=True, ")


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Rprop", "ASGD", "NAdam"])
def test_differentiable_step(name):
    # a leaf that requires grad cannot be updated in place by a (grad-mode) differentiable step
    def leaf(L):
        p = param(L)
        opt = getattr(L.optim, name)([p], lr=0.1, differentiable=True)
        p.grad = L.ones(3)
        opt.step()

    fr, _ = same_outcome(leaf)
    assert fr == ("RuntimeError", "a leaf Variable that requires grad is being used in an in-place operation.")

    # tensors that do not require grad step as usual
    def plain(L):
        p = param(L)
        p.requires_grad_(False)
        opt = getattr(L.optim, name)([p], lr=0.1, differentiable=True)
        for i in range(2):
            p.grad = L.tensor(np.array([0.3, -1.0, 2.0], dtype=np.float32) * (i + 1))
            opt.step()
        return p.detach().numpy().copy() if L is torch else to_np(p.detach())

    np.testing.assert_allclose(plain(flow), plain(torch), rtol=2e-5)
    # a step autograd would have to record is out of reach of flow's (non-differentiable) fused update ops
    x = flow.nn.Parameter(flow.ones(3))
    y = x * 2
    opt = getattr(flow.optim, name)([y], lr=0.1, differentiable=True)
    y.grad = flow.ones(3)
    with pytest.raises(NotImplementedError, match="not differentiable"):
        opt.step()


# ---- hooks, handles, messages ----------------------------------------------------------------------------
def test_step_hooks_get_args_with_the_optimizer():
    def run(L):
        p = param(L)
        opt = L.optim.SGD([p], lr=0.1)
        seen = []
        opt.register_step_pre_hook(lambda o, args, kw: seen.append(("pre", len(args), args[0] is o, sorted(kw))))
        opt.register_step_post_hook(lambda o, args, kw: seen.append(("post", len(args), args[0] is o, sorted(kw))))
        p.grad = L.ones(3)
        opt.step()
        opt.step(None)
        opt.step(closure=None)
        return seen

    assert run(flow) == run(torch)

    def replacing(L):
        # a pre hook hands step new (args, kwargs); args keep the optimizer first
        p = param(L)
        opt = L.optim.SGD([p], lr=0.1)
        opt.register_step_pre_hook(lambda o, args, kw: ((args[0], lambda: 7.0), {}))
        p.grad = L.ones(3)
        return opt.step()

    assert replacing(flow) == replacing(torch) == 7.0


def test_handles_and_messages():
    for L in LIBS:
        h = L.optim.SGD([param(L)], lr=0.1).register_step_pre_hook(lambda *a: None)
        assert type(h).__name__ == "RemovableHandle" and isinstance(h.id, int)
    fr, _ = same_outcome(lambda L: L.optim.SGD([param(L)], lr=0.1).add_param_group([param(L)]),
                         normalize=lambda m: m)
    assert fr == ("TypeError", "param_group must be a dict, but got <class 'list'>")
    fr, _ = same_outcome(lambda L: L.optim.SGD(param(L), lr=0.1), normalize=lambda m: m.replace("torch", "oneflow"))
    assert fr[1].endswith("but got oneflow.FloatTensor")
    # the same instance attributes (pickling or copying keeps them)
    fo, to = flow.optim.Adam([param(flow)]), torch.optim.Adam([param(torch)])
    assert sorted(copy.deepcopy(fo).__dict__) == sorted(copy.deepcopy(to).__dict__)
    assert fo._zero_grad_profile_name == to._zero_grad_profile_name
    assert callable(flow.optim.Optimizer.profile_hook_step)


def test_profile_hook_step_on_a_custom_optimizer():
    seen = {}
    for L in LIBS:
        calls = seen.setdefault(L.__name__, [])

        class Plain(L.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=0.5))

            @L.optim.Optimizer.profile_hook_step
            def step(self, closure=None):
                calls.append("step")

        opt = Plain([param(L)])
        opt.register_step_pre_hook(lambda o, a, k: calls.append(len(a)))
        opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
        opt.step()
    # the hooks see the optimizer among the args in both; PyTorch wraps such a step a second time when the
    # optimizer is built (it runs the hooks twice), flow wraps a step only once
    assert seen["oneflow"] == [1, "step", "post"]
    assert seen["torch"] == [1, 1, "step", "post", "post"]


# ---- state and state_dict ---------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [dict(), dict(fused=True), dict(capturable=True)])
def test_load_state_dict_casts_step_of_fused_and_capturable_groups(flags):
    def run(L):
        p = param(L, dtype=L.float64)
        opt = L.optim.Adam([p], lr=0.1, **flags)
        sd = opt.state_dict()
        sd["state"] = {0: {"step": L.tensor(3.0, dtype=L.float64), "exp_avg": L.zeros(3),
                           "exp_avg_sq": L.zeros(3)}}
        opt.load_state_dict(sd)
        return {k: str(v.dtype).split(".")[-1] for k, v in opt.state[p].items()}

    assert run(flow) == run(torch)


@pytest.mark.parametrize("name,flags", [("Adam", dict(fused=True)), ("AdamW", dict(fused=True)),
                                        ("Adagrad", dict(fused=True)), ("Adam", dict()), ("Adagrad", dict())])
def test_step_counter_dtype_under_float64_default(name, flags):
    dtypes = []
    for L in LIBS:
        old = L.get_default_dtype()
        L.set_default_dtype(L.float64)
        try:
            p = L.nn.Parameter(L.ones(2))
            opt = getattr(L.optim, name)([p], lr=0.1, **flags)
            p.grad = L.ones(2)
            opt.step()
            dtypes.append(str(opt.state[p]["step"].dtype).split(".")[-1])
        finally:
            L.set_default_dtype(old)
    assert dtypes[0] == dtypes[1]


@pytest.mark.parametrize("name,keys", [("ASGD", ("step", "eta", "mu")), ("NAdam", ("step", "mu_product"))])
def test_unpickling_turns_scalar_state_into_tensors(name, keys):
    def steps(opt, p, n):
        for i in range(n):
            p.grad = flow.tensor(np.array([1.0, -0.5, 0.25], dtype=np.float32) * (i + 1))
            opt.step()

    cls = getattr(flow.optim, name)
    pa, pb = param(flow), param(flow)
    oa, ob = cls([pa], lr=0.05, **({"t0": 1} if name == "ASGD" else {})), None
    steps(oa, pa, 2)
    state = {k: v for k, v in oa.__getstate__().items()}
    state["state"] = {pb: {k: (float(v) if k in keys else v.clone()) for k, v in oa.state[pa].items()}}
    state["param_groups"] = [dict(oa.param_groups[0], params=[pb])]
    with flow.no_grad():
        pb.copy_(pa)
    ob = cls.__new__(cls)
    ob.__setstate__(state)
    assert all(isinstance(ob.state[pb][k], flow.Tensor) for k in keys)
    steps(oa, pa, 2)
    steps(ob, pb, 2)
    np.testing.assert_allclose(to_np(pb.detach()), to_np(pa.detach()), rtol=1e-6)


# ---- schedulers with tensor learning rates ---------------------------------------------------------------
SCHEDS = {
    "step": lambda S, o: S.StepLR(o, 2, 0.5),
    "cosine": lambda S, o: S.CosineAnnealingLR(o, 5),
    "lambda": lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
    "onecycle": lambda S, o: S.OneCycleLR(o, 1.0, total_steps=12),
    "cyclic": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=2),
    "warm_restarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, 3),
    "sequential": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)], [3]),
    "plateau": lambda S, o: S.ReduceLROnPlateau(o, patience=0),
}


@pytest.mark.parametrize("name", sorted(SCHEDS))
def test_tensor_lr_through_schedulers(name):
    def run(L):
        groups = [{"params": [param(L)], "lr": L.tensor(0.1)}, {"params": [param(L)], "lr": L.tensor(0.05)}]
        opt = L.optim.Adam(groups, lr=L.tensor(0.01))
        lr0 = opt.param_groups[0]["lr"]
        sched = SCHEDS[name](L.optim.lr_scheduler, opt)
        history = []
        for _ in range(8):
            last = sched.get_last_lr()
            history.append([(type(x).__name__, round(float(x), 6)) for x in last])
            assert last[0] is not opt.param_groups[0]["lr"]  # copies, never the group's tensor
            opt.step()
            sched.step(1.0) if name == "plateau" else sched.step()
        kept = opt.param_groups[0]["lr"] is lr0  # filled in place: the group keeps its tensor
        initial = [type(g["initial_lr"]).__name__ for g in opt.param_groups if "initial_lr" in g]
        return history, kept, initial

    assert run(flow) == run(torch)


def test_scheduler_checks_the_optimizer_step():
    def overridden(L):
        opt = L.optim.SGD([param(L)], lr=0.1)
        sched = L.optim.lr_scheduler.StepLR(opt, 2)
        opt.step = lambda *a, **k: None
        sched.step()

    def stepped_before_the_scheduler(L):
        p = param(L)
        opt = L.optim.SGD([p], lr=0.1)
        p.grad = L.ones(3)
        opt.step()  # before the scheduler exists: does not count
        L.optim.lr_scheduler.StepLR(opt, 2).step()

    def right_order(L):
        p = param(L)
        opt = L.optim.SGD([p], lr=0.1)
        sched = L.optim.lr_scheduler.StepLR(opt, 2)
        sched2 = L.optim.lr_scheduler.ExponentialLR(opt, 0.5)  # a second scheduler wraps nothing again
        p.grad = L.ones(3)
        opt.step()
        sched.step()
        sched2.step()

    for fn, start in [(overridden, "Seems like `optimizer.step()` has been overridden"),
                      (stepped_before_the_scheduler, "Detected call of `lr_scheduler.step()` before"),
                      (right_order, None)]:
        (_, fw), (_, tw) = outcome(lambda: fn(flow)), outcome(lambda: fn(torch))
        assert fw == tw
        assert (start is None and fw == []) or (len(fw) == 1 and fw[0][1].startswith(start))


# ---- swa_utils -------------------------------------------------------------------------------------------
def test_swa_decay_and_strategy_errors():
    sw = {flow: fswa, torch: tswa}
    for bad in (-0.1, 1.5):
        for getter in ("get_ema_multi_avg_fn", "get_ema_avg_fn"):
            fr, _ = same_outcome(lambda L: getattr(sw[L], getter)(bad))
            assert fr[0] == "ValueError" and fr[1].startswith("Invalid decay value")
    fr, _ = same_outcome(lambda L: sw[L].SWALR(L.optim.SGD([param(L)], lr=1.0), 0.1, anneal_strategy="exp"))
    assert fr == ("ValueError", "anneal_strategy must be one of 'cos' or 'linear', instead got exp")


def test_swalr_state_dict():
    sw = {flow: fswa, torch: tswa}

    def run(L):
        opt = L.optim.SGD([param(L)], lr=1.0)
        sched = sw[L].SWALR(opt, 0.1, anneal_epochs=5, anneal_strategy="linear")
        for _ in range(2):
            opt.step()
            sched.step()
        sd = copy.deepcopy(sched.state_dict())
        opt2 = L.optim.SGD([param(L)], lr=1.0)
        opt2.load_state_dict(opt.state_dict())
        sched2 = sw[L].SWALR(opt2, 0.1, anneal_epochs=5)  # cos: the loaded state says linear
        sched2.load_state_dict(sd)
        lrs = []
        for _ in range(4):
            opt2.step()
            sched2.step()
            lrs.append(round(sched2.get_last_lr()[0], 10))
        return sorted(sd), lrs

    assert run(flow) == run(torch)


def test_multi_avg_fn_sees_one_dtype_group_at_a_time():
    sw = {flow: fswa, torch: tswa}

    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.BatchNorm1d(2))
        calls = []

        def multi(averaged, current, n):
            calls.append((len(averaged), str(averaged[0].dtype).split(".")[-1], int(n)))
            for a, c in zip(averaged, current):
                a.copy_(c)

        avg = sw[L].AveragedModel(model, multi_avg_fn=multi, use_buffers=True)
        avg.update_parameters(model)
        avg.update_parameters(model)
        avg.update_parameters(model)
        return sorted(calls)

    assert run(flow) == run(torch)
