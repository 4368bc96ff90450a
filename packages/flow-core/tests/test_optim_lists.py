"""The fused optimizer updates take separate tensor lists (params, grads, one per state) and the learning rate as
a 0-dim tensor: what dispatch handlers see, the lr read at run time, and the errors on bad input."""
import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow._dispatch import DispatchMode, split_inputs

ops = flow._C.ops


class Recorder(DispatchMode):
    """Records the update ops it sees (op, inputs, attrs) and runs them."""

    def __init__(self):
        self.calls = []

    def __flow_dispatch__(self, op, inputs, attrs):
        if op.name.endswith("_update_"):
            self.calls.append((op, list(inputs), dict(attrs)))
        return op.redispatch(inputs, attrs)


def f64(*values):
    return flow.tensor(np.array(values, dtype=np.float64))


def lr_tensor(v):
    return flow.tensor(v, dtype=flow.float64)


def test_a_mode_sees_adam_update_with_its_lists_apart():
    shapes = [(2, 3), (4,), (5, 1)]
    params = [flow.nn.Parameter(flow.randn(*s)) for s in shapes]
    for p in params:
        p.grad = flow.randn(*p.shape)
    opt = flow.optim.Adam(params, lr=0.01, amsgrad=True)
    with Recorder() as rec:
        opt.step()
    [(op, inputs, attrs)] = rec.calls
    assert op.name == "adam_update_"
    # one length per list: params, grads, exp_avgs, exp_avg_sqs, steps, max_exp_avg_sqs
    assert attrs["_list_lengths"] == [3] * 6
    assert len(inputs) == 3 * 6 + 1
    lists = split_inputs(op, inputs, attrs)
    assert list(lists) == ["params", "grads", "exp_avgs", "exp_avg_sqs", "steps", "max_exp_avg_sqs", "lr"]
    assert all(a is b for a, b in zip(lists["params"], params))
    assert all(a is p.grad for a, p in zip(lists["grads"], params))
    for key, name in [("exp_avgs", "exp_avg"), ("steps", "step"), ("max_exp_avg_sqs", "max_exp_avg_sq")]:
        assert all(a is opt.state[p][name] for a, p in zip(lists[key], params)), key
    assert lists["lr"].dim() == 0 and lists["lr"].dtype == flow.float64 and lists["lr"].item() == 0.01
    # the reserved attribute is no Python parameter of the op
    assert "_list_lengths" in op.attr_names
    assert "_list_lengths" not in [a["name"] for a in op.arguments]
    # without amsgrad the unused list is empty, and the lengths say so
    opt = flow.optim.Adam(params, lr=0.01)
    with Recorder() as rec:
        opt.step()
    assert rec.calls[0][2]["_list_lengths"] == [3] * 5 + [0]
    # ops whose one list is their last tensor parameter keep no lengths (their inputs say it)
    assert "_list_lengths" not in ops.cat.attr_names
    x, y = flow.ones(2), flow.ones(3)
    tensors = split_inputs(ops.cat, [x, y], {"dim": 0})["tensors"]
    assert len(tensors) == 2 and tensors[0] is x and tensors[1] is y
    with pytest.raises(ValueError, match="adam_update_: 19 inputs do not fit"):
        split_inputs(op, inputs, dict(attrs, _list_lengths=[3] * 5))


def test_meta_and_redispatch_take_the_lengths_back():
    p, g = f64(1, 2), f64(1, 1)
    with Recorder() as rec:
        ops.sgd_update_([p], [g], [], lr_tensor(0.5))
    op, inputs, attrs = rec.calls[0]
    assert op.meta(inputs, attrs) == []
    op.redispatch(inputs, attrs)  # the same call again
    np.testing.assert_array_equal(p.numpy(), [0.0, 1.0])
    # lengths that do not match the inputs raise before any tensor is read
    with pytest.raises(RuntimeError, match="sgd_update_: the inputs do not hold list 'params'"):
        op.redispatch(inputs, dict(attrs, _list_lengths=[5, 0, 0]))
    with pytest.raises(RuntimeError, match="sgd_update_: missing input 'lr'"):
        op.redispatch(inputs, dict(attrs, _list_lengths=[2, 1, 0]))
    with pytest.raises(RuntimeError, match="sgd_update_: .*_list_lengths"):
        op.redispatch(inputs, dict(attrs, _list_lengths=[1, 1]))
    np.testing.assert_array_equal(p.numpy(), [0.0, 1.0])


def test_changing_the_lr_tensor_in_place_changes_a_recorded_update():
    # what a traced graph does: replay the recorded call; the lr is an input, so no new op or attribute
    p = f64(0, 0)
    lr = lr_tensor(0.5)
    with Recorder() as rec:
        ops.sgd_update_([p], [f64(1, 2)], [], lr)
    op, inputs, attrs = rec.calls[0]
    np.testing.assert_array_equal(p.numpy(), [-0.5, -1.0])
    lr.fill_(0.25)
    op.redispatch(inputs, attrs)
    np.testing.assert_array_equal(p.numpy(), [-0.75, -1.5])


def test_an_optimizer_keeps_one_lr_tensor_per_group_and_refills_it():
    p = flow.nn.Parameter(flow.zeros(2, dtype=flow.float64))
    opt = flow.optim.SGD([p], lr=0.5)
    seen = []
    for lr in (0.5, 0.5, 0.125):
        opt.param_groups[0]["lr"] = lr
        p.grad = f64(1, 2)
        with Recorder() as rec:
            opt.step()
        op, inputs, attrs = rec.calls[0]
        seen.append((inputs[-1], attrs))
    np.testing.assert_array_equal(p.detach().numpy(), [-1.125, -2.25])
    assert seen[0][0] is seen[1][0] is seen[2][0]  # the same tensor, refilled in place
    assert seen[0][1] == seen[2][1]  # the same attributes
    # a scheduler's change reaches the op
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    p.grad = f64(1, 2)
    opt.step()
    sched.step()
    with Recorder() as rec:
        p.grad = f64(1, 2)
        opt.step()
    assert rec.calls[0][1][-1].item() == 0.0625


def test_a_tensor_lr_given_by_the_user():
    def run(lr, lib):
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64))
        opt = lib.optim.Adam([p], lr=lr, foreach=False)
        for k in range(3):
            p.grad = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64) * (k + 1)
            opt.step()
        return np.array(p.detach().tolist())

    by_float = run(0.01, flow)
    np.testing.assert_array_equal(run(flow.tensor(0.01, dtype=flow.float64), flow), by_float)
    np.testing.assert_array_equal(run(flow.tensor([0.01], dtype=flow.float64), flow), by_float)  # 1-element
    np.testing.assert_allclose(by_float, run(torch.tensor(0.01, dtype=torch.float64), torch), rtol=0, atol=1e-15)


def adam_args(n=2, **change):
    lists = dict(params=[f64(1, 2, 3) for _ in range(n)], grads=[f64(1, 1, 1) for _ in range(n)],
                 exp_avgs=[f64(0, 0, 0) for _ in range(n)], exp_avg_sqs=[f64(0, 0, 0) for _ in range(n)],
                 steps=[flow.zeros(()) for _ in range(n)], max_exp_avg_sqs=[], lr=lr_tensor(0.1))
    lists.update(change)
    return lists


@pytest.mark.parametrize("change,error,pattern", [
    (dict(exp_avgs=[f64(0, 0, 0)]), RuntimeError, "adam_update_: argument 'exp_avgs' has 1 tensors but 'params' has 2"),
    (dict(grads=[f64(1, 1, 1), f64(1, 1)]), RuntimeError, r"adam_update_: grads\[1\] has shape \[2\] but params\[1\]"),
    (dict(steps=[flow.zeros(()), flow.zeros(2)]), RuntimeError, r"adam_update_: steps\[1\] \(the step counter\)"),
    (dict(lr=f64(0.1)), TypeError, "adam_update_: argument 'lr' must be a 0-dim floating-point tensor, got shape"),
    (dict(lr=flow.tensor(1)), TypeError, "adam_update_: argument 'lr' must be a 0-dim floating-point tensor"),
])
def test_bad_input_raises_naming_the_op_and_argument(change, error, pattern):
    args = adam_args(**change)
    with pytest.raises(error, match=pattern):
        ops.adam_update_(**args)
    # checked before anything is written
    assert all(p.tolist() == [1, 2, 3] for p in args["params"])
    assert all((s == 0).all().item() for s in args["steps"])


def test_unused_lists_may_be_empty_but_needed_ones_not():
    with pytest.raises(RuntimeError, match="'max_exp_avg_sqs' has 0 tensors but 'params' has 2"):
        ops.adam_update_(**adam_args(), amsgrad=True)
    args = adam_args(max_exp_avg_sqs=[f64(0, 0, 0), f64(0, 0, 0)])
    ops.adam_update_(**args, amsgrad=True)
    assert args["max_exp_avg_sqs"][0].tolist() != [0, 0, 0]
    with pytest.raises(RuntimeError, match="rmsprop_update_: argument 'grad_avgs'"):
        p = f64(1, 2)
        ops.rmsprop_update_([p], [f64(1, 1)], [f64(0, 0)], [flow.zeros(())], [], [], lr_tensor(0.1), centered=True)


GROUPING_OPTIMIZERS = {
    "sgd_momentum": lambda ps: flow.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adam": lambda ps: flow.optim.Adam(ps, lr=1e-3),
    "adamw_amsgrad": lambda ps: flow.optim.AdamW(ps, lr=1e-3, amsgrad=True),
    "adagrad": lambda ps: flow.optim.Adagrad(ps, lr=0.1),
    "rmsprop": lambda ps: flow.optim.RMSprop(ps, lr=1e-3, momentum=0.9),
    "lamb": lambda ps: flow.optim.LAMB(ps, lr=1e-3),
}


@pytest.mark.parametrize("name", sorted(GROUPING_OPTIMIZERS))
def test_a_parameters_update_is_bitwise_the_same_in_a_large_group_as_alone(name):
    # A group over the parallel grain runs its update on threads, a small one serially: both must run the same
    # kernel variant (nn.Graph's split updates and eager's whole one are compared bitwise).
    make = GROUPING_OPTIMIZERS[name]
    flow.manual_seed(0)
    shapes = [(512, 32), (300,), (512, 512), (4, 512), (7, 13)]
    grouped = [flow.nn.Parameter(flow.randn(*s)) for s in shapes]
    alone = [flow.nn.Parameter(p.detach().clone()) for p in grouped]
    opt = make(grouped)
    singles = [make([p]) for p in alone]
    for _ in range(4):
        for a, b in zip(grouped, alone):
            g = flow.randn(*a.shape) * 1e-3
            a.grad, b.grad = g.clone(), g.clone()
        opt.step()
        for s in singles:
            s.step()
    for a, b in zip(grouped, alone):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
