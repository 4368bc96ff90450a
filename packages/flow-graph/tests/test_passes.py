"""The passes on small traced IRs: what each removes, merges or folds, what it must leave alone, and that the
plan of the rewritten IR still computes what eager code does."""
import numpy as np

import oneflow as flow
from oneflow_graph import trace
from oneflow_graph.executor import Plan
from oneflow_graph.ir import CONSTANT
from oneflow_graph.passes import common_subexpression_elimination as cse
from oneflow_graph.passes import constant_folding as fold
from oneflow_graph.passes import dead_code_elimination as dce


def names(ir):
    return [n.name for n in ir.nodes]


def run(ir, *args):
    return Plan(ir).run(list(args))


# ---- dead-code elimination ---------------------------------------------------------------------------------
def test_dce_removes_unused_pure_ops_only():
    def f(x):
        unused = x.exp().sum()  # noqa: F841
        return x * 2

    x = flow.randn(3)
    ir = trace(f, (x,))
    assert names(ir) == ["exp", "sum", "mul"]
    assert dce(ir) == {"removed": 2}
    assert names(ir) == ["mul"]
    np.testing.assert_array_equal(run(ir, x).numpy(), (x * 2).numpy())


def test_dce_keeps_writes_to_variables_and_random_ops_and_drops_writes_to_dead_temporaries():
    state = flow.zeros(3)

    def f(x):
        state.add_(x)  # a variable: the write outlives the call
        t = x * 3
        t.mul_(2)  # a dead temporary: nothing reads it
        flow.rand(2)  # random: dropping it would change later draws
        return x + 1

    x = flow.ones(3)
    ir = trace(f, (x,))
    assert names(ir) == ["add_", "mul", "mul_", "empty", "uniform_", "add"]
    assert dce(ir) == {"removed": 2}
    assert names(ir) == ["add_", "empty", "uniform_", "add"]
    run(ir, x)
    assert state.tolist() == [1.0, 1.0, 1.0]


def test_dce_keeps_writes_seen_through_a_view():
    def f(x):
        t = x * 1
        v = t.view(3, 1)
        t.add_(5)  # the returned view shows this write
        return v

    x = flow.ones(3)
    ir = trace(f, (x,))
    dce(ir)
    assert names(ir) == ["mul", "view", "add_"]
    assert run(ir, x).view(-1).tolist() == [6.0, 6.0, 6.0]


# ---- common subexpressions ---------------------------------------------------------------------------------
def test_cse_merges_repeated_pure_ops():
    def f(x, y):
        return (x + y).exp() + (x + y).exp(), (x + y) * 1

    x, y = flow.randn(4), flow.randn(4)
    ir = trace(f, (x, y))
    assert names(ir).count("add") == 4 and names(ir).count("exp") == 2
    assert cse(ir) == {"merged": 3}
    assert names(ir).count("exp") == 1 and names(ir).count("add") == 2
    a, b = run(ir, x, y)
    np.testing.assert_array_equal(a.numpy(), ((x + y).exp() * 2).numpy())
    np.testing.assert_array_equal(b.numpy(), (x + y).numpy())


def test_cse_respects_attributes_writes_and_randomness():
    def f(x):
        a = x.sum(0)
        b = x.sum(1)  # other attributes: not the same value
        c = x * 2
        x.add_(1)  # x changes: the same op on it afterwards is a new value
        d = x * 2
        r1, r2 = flow.rand(3), flow.rand(3)  # two draws, never one
        t1 = x + 0
        t2 = x + 0
        t1.mul_(3)  # a result that is written to stays its own tensor
        return a, b, c, d, r1, r2, t1, t2

    x = flow.ones(3, 3)
    ir = trace(f, (x.clone(),))
    before = names(ir)
    assert cse(ir) == {"merged": 0}
    assert names(ir) == before
    xr = x.clone()
    a, b, c, d, r1, r2, t1, t2 = run(ir, xr)
    assert c.tolist() == [[2.0] * 3] * 3 and d.tolist() == [[4.0] * 3] * 3
    assert not np.array_equal(r1.numpy(), r2.numpy())
    assert t1.tolist() == [[6.0] * 3] * 3 and t2.tolist() == [[2.0] * 3] * 3


# ---- constant folding --------------------------------------------------------------------------------------
def test_constant_folding_evaluates_creation_chains_once():
    def f(x):
        k = flow.arange(3.0) * 2 + 1  # arange, mul, add: all constant
        return x * k

    x = flow.randn(3)
    ir = trace(f, (x,))
    assert names(ir) == ["arange", "mul", "add", "mul"]
    assert fold(ir) == {"folded": 3}
    assert names(ir) == ["mul"] and [c.kind for c in ir.constants] == [CONSTANT]
    assert ir.constants[0].tensor.tolist() == [1.0, 3.0, 5.0]
    np.testing.assert_array_equal(run(ir, x).numpy(), (x * flow.tensor([1.0, 3.0, 5.0])).numpy())


def test_python_numbers_are_constants_and_captured_tensors_variables():
    scale = flow.tensor(2.0)

    def f(x):
        return x * scale + 1

    ir = trace(f, (flow.ones(2),))
    assert [v.name for v in ir.variables] == ["captured0"] and len(ir.constants) == 1
    assert ir.constants[0].tensor.item() == 1
    plan = Plan(ir)
    assert plan.run([flow.ones(2)]).tolist() == [3.0, 3.0]
    scale.fill_(5.0)  # bound by reference: the plan sees the change
    assert plan.run([flow.ones(2)]).tolist() == [6.0, 6.0]


def test_constant_folding_leaves_written_random_and_large_results():
    def f(x):
        acc = flow.zeros(3)
        acc.add_(x)  # written each call: must be a fresh tensor each call
        noise = flow.rand(3)
        big = flow.ones(300, 300)
        return acc, noise, big.sum()

    x = flow.ones(3)
    ir = trace(f, (x,))
    stats = fold(ir, max_numel=1000)
    assert stats == {"folded": 0}
    first = run(ir, x)
    second = run(ir, x)
    assert first[0].tolist() == second[0].tolist() == [1.0, 1.0, 1.0]
    assert second[2].item() == 90000.0


def test_constant_outputs_are_copies():
    def f(x):
        return flow.full((2,), 3.0), x

    x = flow.ones(1)
    ir = trace(f, (x,))
    fold(ir)
    assert names(ir) == []
    plan = Plan(ir)
    a = plan.run([x])[0]
    a.add_(1)
    assert plan.run([x])[0].tolist() == [3.0, 3.0]


def test_fill_folds_whatever_its_input():
    # autograd's seed gradient: ones like the loss, a constant once the shape is known
    def f(x):
        loss = (x * x).sum()
        return flow._C.ops.fill(loss, 1.0), loss

    x = flow.randn(3)
    ir = trace(f, (x,))
    assert "fill" in names(ir)
    fold(ir)
    assert "fill" not in names(ir)
    one, loss = run(ir, x)
    assert one.item() == 1.0 and abs(loss.item() - (x * x).sum().item()) < 1e-6


# ---- the printer -------------------------------------------------------------------------------------------
def test_ir_prints_as_readable_ssa():
    w = flow.nn.Parameter(flow.randn(2, 2))

    def f(x):
        y = flow.matmul(x, w)
        y.relu_()
        return {"out": y}

    ir = trace(f, (flow.randn(3, 2),), names={id(w): "layer.weight"}, name="Demo_0")
    text = ir.format(show_locations=True)
    lines = text.splitlines()
    assert lines[0] == "graph Demo_0(%in0: float32[3, 2]) {"
    assert lines[1] == "  var %layer.weight: float32[2, 2]"
    mm = next(line for line in lines if "= mm(" in line)
    assert mm.startswith("  %") and ": float32[3, 2] = mm(%in0, %layer.weight)" in mm
    assert "test_passes.py" in mm  # the user's line that issued the op
    relu = next(line for line in lines if "relu_(" in line)
    assert "# writes %" in relu
    assert lines[-2].startswith("  return {'out': %") and lines[-1] == "}"


# ---- copy elision ------------------------------------------------------------------------------------------
def test_copy_elision_drops_clones_of_unshared_contiguous_intermediates():
    from oneflow_graph.passes import copy_elision

    def f(x):
        a = (x * 2).clone()  # x * 2 is read by nothing else: the clone is elided
        b = x + 1
        c = b.clone()  # b is returned too: both must stay distinct tensors
        d = (x * 3).t().clone()  # a non-contiguous source keeps its copy (eager .grad steals only contiguous)
        c.add_(1)
        return a, b, c, d

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    assert names(ir).count("clone") == 3
    assert copy_elision(ir) == {"removed": 1}
    assert names(ir).count("clone") == 2
    a, b, c, d = run(ir, x)
    np.testing.assert_array_equal(a.numpy(), (x * 2).numpy())
    np.testing.assert_array_equal(c.numpy(), ((x + 1) + 1).numpy())
    np.testing.assert_array_equal(b.numpy(), (x + 1).numpy())
    np.testing.assert_array_equal(d.numpy(), (x * 3).t().numpy())


def test_copy_elision_of_a_clone_of_a_clone_sends_readers_to_the_first_source():
    from oneflow_graph.passes import copy_elision

    def f(x):
        return (x * 2).clone().clone() + 1  # both clones go: the add reads x * 2 itself

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    assert copy_elision(ir) == {"removed": 2}
    alive = {id(n) for n in ir.nodes}
    assert all(v.producer is None or id(v.producer) in alive for n in ir.nodes for v in n.inputs if v is not None)
    np.testing.assert_array_equal(run(ir, x).numpy(), (x * 2 + 1).numpy())


def test_copy_elision_rebases_views_of_a_removed_clone_onto_its_source():
    from oneflow_graph.passes import copy_elision

    def f(x):
        return (x * 2).clone().reshape(6) + 1  # the clone goes: the reshape views x * 2 itself

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    assert copy_elision(ir) == {"removed": 1}
    (view,) = [n for n in ir.nodes if n.name == "reshape"]
    (mul,) = [n for n in ir.nodes if n.name == "mul"]
    # not the removed clone's result: the memory planner and the runtime state read what a view views
    assert view.outputs[0].alias_of is mul.outputs[0]
    np.testing.assert_array_equal(run(ir, x).numpy(), (x * 2).reshape(6).numpy() + 1)


def test_copy_elision_removes_the_gradient_copies_of_a_traced_training_step():
    from models import TrainGraph

    model = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.ReLU(), flow.nn.Linear(4, 2))
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    g(flow.randn(5, 3), flow.tensor([0, 1, 1, 0, 1]))
    report = dict(g._last.report)
    assert report["copy_elision"]["removed"] >= 2  # the bias gradients at least
