"""The plan executor (oneflow._C.Plan): registry kernel calls over value slots, checked on meta tensors at
finalize(), intermediates planned into one arena by their live intervals; results equal eager execution."""
import itertools
import random
import time

import numpy as np
import pytest

import oneflow as flow
from oneflow import _C

ops = _C.ops


def mlp_plan(w1, b1, w2, batch=4):
    p = _C.Plan()
    x = p.add_input([batch, w1.shape[0]], flow.float32)
    cw1, cb1, cw2 = p.add_constant(w1), p.add_constant(b1), p.add_constant(w2)
    (h,) = p.add_step(ops.mm, [x, cw1])
    (h,) = p.add_step(ops.add, [h, cb1])
    (h,) = p.add_step(ops.relu, [h])
    (h,) = p.add_step(ops.mm, [h, cw2])
    (y,) = p.add_step(ops.tanh, [h])
    p.set_outputs([y])
    p.finalize()
    return p


def test_forward_equals_eager_bitwise_and_intermediates_share_the_arena():
    flow.manual_seed(0)
    w1, b1, w2 = flow.randn(8, 16), flow.randn(16), flow.randn(16, 3)
    p = mlp_plan(w1, b1, w2)
    x = flow.randn(4, 8)
    (y,) = p.run([x])
    expected = flow.tanh(flow.relu(x @ w1 + b1) @ w2)
    assert y.shape == (4, 3) and np.array_equal(y.numpy(), expected.numpy())
    mem = p.memory
    # the four intermediates are planned; mm -> add -> relu -> mm reuses memory as values die
    assert mem["arena_values"] == 4 and 0 < mem["arena_bytes"] < mem["naive_bytes"]
    assert [s["op"] for s in p.steps] == ["mm", "add", "relu", "mm", "tanh"]
    assert p.steps[-1]["offsets"] == [-1]  # the output escapes: never in the arena
    assert p.slot_meta(p.outputs[0]) == ((4, 3), flow.float32, flow.device("cpu"))


def test_outputs_of_one_run_survive_the_next_and_constants_are_shared():
    flow.manual_seed(1)
    w1, b1, w2 = flow.randn(8, 16), flow.randn(16), flow.randn(16, 3)
    p = mlp_plan(w1, b1, w2)
    x1, x2 = flow.randn(4, 8), flow.randn(4, 8)
    (y1,) = p.run([x1])
    keep = y1.numpy().copy()
    (y2,) = p.run([x2])
    assert np.array_equal(y1.numpy(), keep) and not np.array_equal(y2.numpy(), keep)
    with flow.no_grad():
        w2.mul_(2)  # an eager change to a bound tensor is seen by the next run
    (y3,) = p.run([x1])
    np.testing.assert_array_equal(y3.numpy(), flow.tanh(flow.relu(x1 @ w1 + b1) @ w2).numpy())


def test_an_elementwise_step_writes_over_a_first_input_that_dies_there():
    flow.manual_seed(4)
    w1, b1, w2 = flow.randn(8, 16), flow.randn(16), flow.randn(16, 3)
    p = mlp_plan(w1, b1, w2)
    off = [s["offsets"][0] for s in p.steps]
    # relu's input (the add's result) dies at the relu: same bytes; the add broadcasts its bias, so it keeps its
    # own (an op may expand a broadcast operand into its output before reading the other)
    assert off[2] == off[1] and off[1] != off[0] and off[0] >= 0
    x = flow.randn(4, 8)
    np.testing.assert_array_equal(p.run([x])[0].numpy(), flow.tanh(flow.relu(x @ w1 + b1) @ w2).numpy())
    # a first input read again later keeps its bytes: relu(h) + h
    q = _C.Plan()
    xi = q.add_input([4, 8], flow.float32)
    (h,) = q.add_step(ops.mm, [xi, q.add_constant(w1)])
    (r,) = q.add_step(ops.relu, [h])
    (y,) = q.add_step(ops.add, [r, h])
    (z,) = q.add_step(ops.tanh, [y])
    q.set_outputs([z])
    q.finalize()
    o = [s["offsets"][0] for s in q.steps]
    assert o[1] != o[0] and o[2] == o[1]  # the add's first input (relu's result) dies there; h is read after relu
    h_ = x @ w1
    np.testing.assert_array_equal(q.run([x])[0].numpy(), flow.tanh(flow.relu(h_) + h_).numpy())


def test_run_profiled_returns_the_outputs_and_one_wall_time_per_step():
    flow.manual_seed(2)
    w1, b1, w2 = flow.randn(64, 512), flow.randn(512), flow.randn(512, 3)
    p = mlp_plan(w1, b1, w2, batch=256)
    x = flow.randn(256, 64)
    t0 = time.perf_counter_ns()
    (y,), ns = p.run_profiled([x])
    wall = time.perf_counter_ns() - t0
    np.testing.assert_array_equal(y.numpy(), p.run([x])[0].numpy())
    assert len(ns) == p.num_steps == 5 and all(isinstance(t, int) and t > 0 for t in ns)
    assert sum(ns) <= wall  # the steps' clocks run inside the call
    with pytest.raises(TypeError, match="expected 1 inputs, got 0"):
        p.run_profiled([])


def test_an_output_that_views_an_intermediate_keeps_it_out_of_the_arena():
    p = _C.Plan()
    x = p.add_input([2, 3], flow.float32)
    (e,) = p.add_step(ops.exp, [x])
    (v,) = p.add_step(ops.view, [e], {"size": [6]})
    (s,) = p.add_step(ops.sin, [x])  # would reuse exp's memory if exp's value were in the arena
    p.set_outputs([v, s])
    p.finalize()
    assert p.steps[0]["offsets"] == [-1]
    a = flow.randn(2, 3)
    v1, s1 = p.run([a])
    v2, _ = p.run([a * 2])
    np.testing.assert_allclose(v1.numpy(), np.exp(a.numpy()).reshape(6), rtol=1e-6)
    np.testing.assert_allclose(s1.numpy(), np.sin(a.numpy()), rtol=1e-6)
    np.testing.assert_allclose(v2.numpy(), np.exp(2 * a.numpy()).reshape(6), rtol=1e-6)


def test_in_place_steps_update_bound_parameters_like_an_optimizer_step():
    flow.manual_seed(2)
    w = flow.randn(5, 3)
    g, buf, lr = flow.randn(5, 3), flow.zeros(5, 3), flow.tensor(0.1)
    w_eager, buf_eager = w.clone(), buf.clone()
    p = _C.Plan()
    slots = [p.add_constant(t) for t in (w, buf, lr)]
    grad = p.add_input([5, 3], flow.float32)
    p.add_step(ops.sgd_update_, [slots[0], grad, slots[1], slots[2]], {"momentum": 0.9, "_list_lengths": [1, 1, 1]},
               num_outputs=0)
    (scaled,) = p.add_step(ops.mul_, [slots[0], p.add_constant(flow.tensor(1.0))])  # an in-place variant
    p.set_outputs([])
    p.finalize()
    version = w._version
    for _ in range(3):
        assert p.run([g]) == []
        ops.sgd_update_([w_eager], [g], [buf_eager], lr, momentum=0.9)
    np.testing.assert_array_equal(w.numpy(), w_eager.numpy())
    np.testing.assert_array_equal(buf.numpy(), buf_eager.numpy())
    assert w._version > version


def test_an_update_step_beside_arena_intermediates_runs_its_own_kernel():
    # the gradient is an intermediate in the arena; the update step has no outputs to place there
    flow.manual_seed(3)
    w, lr = flow.randn(4, 3), flow.tensor(0.5)
    w_eager = w.clone()
    p = _C.Plan()
    cw, clr = p.add_constant(w), p.add_constant(lr)
    x = p.add_input([4, 3], flow.float32)
    (g,) = p.add_step(ops.mul, [x, x])
    (g,) = p.add_step(ops.tanh, [g])
    p.add_step(ops.sgd_update_, [cw, g, clr], {"_list_lengths": [1, 1, 0]}, num_outputs=0)
    p.set_outputs([])
    p.finalize()
    assert p.memory["arena_bytes"] > 0
    xs = flow.randn(4, 3)
    for _ in range(2):
        p.run([xs])
        ops.sgd_update_([w_eager], [flow.tanh(xs * xs)], [], lr)
    np.testing.assert_array_equal(w.numpy(), w_eager.numpy())


def test_a_wrapped_number_constant_promotes_as_a_python_number():
    # a Python number the binding wrapped (float64, 0-dim) must not make a float32 result float64
    two = flow.tensor(2.0, dtype=flow.float64)
    two._is_wrapped_number = True
    p = _C.Plan()
    x = p.add_input([3], flow.float32)
    (y,) = p.add_step(ops.div, [x, p.add_constant(two)])
    (z,) = p.add_step(ops.exp, [y])
    p.set_outputs([z])
    p.finalize()
    assert p.slot_meta(y)[1] == flow.float32
    xs = flow.tensor([1.0, 2.0, 3.0])
    (out,) = p.run([xs])
    assert out.dtype == flow.float32
    np.testing.assert_array_equal(out.numpy(), flow.exp(xs / 2.0).numpy())


def test_creation_views_and_value_dependent_ops_run_with_unknown_shapes_unplanned():
    p = _C.Plan()
    x = p.add_input([6], flow.float32)
    (z,) = p.add_step(ops.zeros, [], {"size": [6], "dtype": flow.float32})
    (m,) = p.add_step(ops.maximum, [x, z])
    (nz,) = p.add_step(ops.nonzero, [m])  # its shape depends on the values
    (n,) = p.add_step(ops.sum, [nz])
    (k,) = p.add_step(ops.mul, [n, n])
    p.set_outputs([m, k])
    p.finalize()
    assert p.slot_meta(nz) is None and p.slot_meta(n) is None and p.memory["unplanned_values"] == 1  # n
    a = flow.tensor([1.0, -2.0, 3.0, 0.0, -1.0, 5.0])
    m1, k1 = p.run([a])
    np.testing.assert_array_equal(m1.numpy(), np.maximum(a.numpy(), 0))
    assert k1.item() == (0 + 2 + 5) ** 2


def test_elementwise_results_keep_the_layout_eager_gives_them():
    p = _C.Plan()
    x = p.add_input([3, 4], flow.float32)
    (t,) = p.add_step(ops.transpose, [x], {"dim0": 0, "dim1": 1})
    (e,) = p.add_step(ops.exp, [t])
    (r,) = p.add_step(ops.relu, [e])
    p.set_outputs([r])
    p.finalize()
    a = flow.randn(3, 4)
    (r1,) = p.run([a])
    eager = flow.relu(flow.exp(a.t()))
    assert r1.stride() == eager.stride() and np.array_equal(r1.numpy(), eager.numpy())


def test_bad_plans_and_inputs_raise_clear_errors():
    p = _C.Plan()
    x = p.add_input([2, 3], flow.float32)
    with pytest.raises(IndexError, match="slot 7 is not a value"):
        p.add_step(ops.relu, [7])
    with pytest.raises(TypeError, match="has no attribute 'alpah'"):
        p.add_step(ops.add, [x, x], {"alpah": 2})
    with pytest.raises(TypeError, match="expected a registry op"):
        p.add_step(len, [x])
    with pytest.raises(ValueError, match="give num_outputs"):
        p.add_step(ops.unbind, [x])
    (y,) = p.add_step(ops.matmul, [x, x])  # (2, 3) @ (2, 3): caught on meta tensors, naming the step
    p.set_outputs([y])
    with pytest.raises(RuntimeError, match=r"plan step 0 \(matmul\)"):
        p.finalize()
    q = mlp_plan(flow.randn(8, 16), flow.randn(16), flow.randn(16, 3))
    with pytest.raises(TypeError, match="expected 1 inputs, got 2"):
        q.run([flow.randn(4, 8), flow.randn(4, 8)])
    with pytest.raises(RuntimeError, match=r"input 0 is \[4, 9\].*built for \[4, 8\]"):
        q.run([flow.randn(4, 9)])
    with pytest.raises(RuntimeError, match="after finalize"):
        q.add_input([1], flow.float32)
    r = _C.Plan()
    r.add_input([1], flow.float32)
    with pytest.raises(RuntimeError, match="before finalize"):
        r.run([flow.zeros(1)])


def test_caller_offsets_are_checked_for_overlap():
    def build(offsets):
        p = _C.Plan()
        x = p.add_input([16], flow.float32)
        (a,) = p.add_step(ops.exp, [x])
        (b,) = p.add_step(ops.sin, [a])
        (c,) = p.add_step(ops.add, [a, b])  # a and b are alive together
        (e,) = p.add_step(ops.cos, [c])
        (f,) = p.add_step(ops.neg, [e])
        p.set_outputs([f])
        for k, o in enumerate(offsets):
            p.set_offsets(k, [o])
        p.finalize()
        return p

    with pytest.raises(ValueError, match="overlap"):
        build([0, 0, -1, -1, -1])
    with pytest.raises(ValueError, match="overlap"):
        build([0, 64, 0, -1, -1])  # c is written at step 2 while a is still read there
    with pytest.raises(ValueError, match="cannot live in the arena"):
        build([0, 64, 128, 192, 256])  # f is an output
    with pytest.raises(ValueError, match="multiples of 64"):
        build([0, 70, 128, -1, -1])
    p = build([0, 64, 128, 0, -1])  # e reuses a's place: a is dead after step 2
    assert p.memory["arena_bytes"] == 192 and p.memory["arena_values"] == 4
    x = flow.randn(16)
    (f,) = p.run([x])
    a = np.exp(x.numpy())
    np.testing.assert_allclose(f.numpy(), -np.cos(a + np.sin(a)), rtol=1e-5)


def brute_force_ok(intervals, sizes, offsets, total):
    for i, j in itertools.combinations(range(len(sizes)), 2):
        live = intervals[i][0] <= intervals[j][1] and intervals[j][0] <= intervals[i][1]
        overlap = offsets[i] < offsets[j] + sizes[j] and offsets[j] < offsets[i] + sizes[i]
        if live and overlap:
            return False
    return all(o % 64 == 0 and o + s <= total for o, s in zip(offsets, sizes))


def random_buffers(rng, most):
    """Up to ``most`` buffers: live intervals within steps 0..26 and sizes, some not multiples of 64."""
    n = rng.randint(1, most)
    intervals = []
    for _ in range(n):
        a = rng.randint(0, 20)
        intervals.append((a, a + rng.randint(0, 6)))
    return intervals, [rng.choice([4, 64, 100, 256, 1000, 4096]) for _ in range(n)]


def test_assign_offsets_never_overlaps_live_buffers_and_reuses_dead_ones():
    rng = random.Random(0)
    for _ in range(200):
        intervals, sizes = random_buffers(rng, 12)
        total, offsets = _C._plan_assign_offsets(intervals, sizes)
        assert brute_force_ok(intervals, sizes, offsets, total)
        # never more than no reuse at all, never less than the peak of what is alive at once
        padded = [(s + 63) // 64 * 64 for s in sizes]
        assert total <= sum(padded)
        peak = max(sum(p for p, iv in zip(padded, intervals) if iv[0] <= t <= iv[1]) for t in range(27))
        assert total >= peak
    total, _ = _C._plan_assign_offsets([(0, 1), (2, 3)], [256, 256])
    assert total == 256  # disjoint lifetimes share one place


def test_assign_offsets_search_is_valid_never_larger_and_finds_what_first_fit_misses():
    rng = random.Random(1)
    gains = 0
    for _ in range(300):
        intervals, sizes = random_buffers(rng, 14)
        plain, _ = _C._plan_assign_offsets(intervals, sizes)
        total, offsets = _C._plan_assign_offsets(intervals, sizes, search=True)
        assert brute_force_ok(intervals, sizes, offsets, total)
        assert total <= plain
        gains += total < plain
    assert gains > 0
    # largest first: the late 192-byte buffer takes [0, 192), so the one living through step 3 goes to
    # [192, 320) and the step-0 one finds only a 64-byte hole below it: 448 bytes. The search packs them at
    # step 0's live peak, 3 x 128 = 384 bytes.
    intervals, sizes = [(0, 2), (0, 3), (3, 3), (0, 0)], [128, 128, 192, 128]
    assert _C._plan_assign_offsets(intervals, sizes)[0] == 448
    total, offsets = _C._plan_assign_offsets(intervals, sizes, search=True)
    assert total == 384 and brute_force_ok(intervals, sizes, offsets, total)


def test_memory_stats_report_the_live_peak_and_compress_memory_reaches_it():
    flow.manual_seed(3)
    w1, b1, w2 = flow.randn(8, 16), flow.randn(16), flow.randn(16, 3)
    plans = []
    for compress in (False, True):
        p = _C.Plan()
        x = p.add_input([4, 8], flow.float32)
        cw1, cb1, cw2 = p.add_constant(w1), p.add_constant(b1), p.add_constant(w2)
        (h,) = p.add_step(ops.mm, [x, cw1])
        (h,) = p.add_step(ops.add, [h, cb1])
        (h,) = p.add_step(ops.relu, [h])
        (y,) = p.add_step(ops.mm, [h, cw2])
        p.set_outputs([y])
        p.finalize(compress_memory=compress)
        plans.append(p)
    for p in plans:
        m = p.memory
        assert 0 < m["live_bytes"] <= m["arena_bytes"] <= m["naive_bytes"]
    assert plans[1].memory["arena_bytes"] == plans[1].memory["live_bytes"]
    x = flow.randn(4, 8)
    np.testing.assert_array_equal(plans[0].run([x])[0].numpy(), plans[1].run([x])[0].numpy())


def test_every_elementwise_op_written_over_its_dying_first_input_equals_eager():
    # the planner's in-place reuse relies on each elementwise kernel reading an element of its first input before
    # writing that element of its output: check every registry op it can apply to (float operands of one shape)
    rng = np.random.default_rng(0)
    checked = aliased = 0
    for name in sorted(n for n in dir(ops) if not n.startswith("__")):
        op = getattr(ops, name)
        traits = set(op.traits)
        if "elementwise" not in traits or "inplace" in traits or "random" in traits or name.endswith("_"):
            continue
        tensors = [a for a in op.arguments if a["is_tensor"]]
        if not tensors or any(a["type"] != "Tensor" for a in tensors):
            continue
        xs = [flow.tensor(rng.uniform(0.5, 1.5, (4, 33)).astype(np.float32)) for _ in tensors]
        p = _C.Plan()
        slots = [p.add_input([4, 33], flow.float32) for _ in xs]
        try:
            (h,) = p.add_step(ops.neg, [slots[0]])  # an intermediate that dies at the op
            (y,) = p.add_step(op, [h] + slots[1:])
            p.set_outputs([p.add_step(ops.mul, [y, p.add_constant(flow.tensor(1.0))])[0]])
            p.finalize()
            want = (op.redispatch([-xs[0]] + xs[1:], {}) * 1.0).numpy()
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            continue  # the op needs attributes, other dtypes or shapes: not this check's
        checked += 1
        offsets = [s["offsets"][0] for s in p.steps]
        aliased += offsets[0] >= 0 and offsets[0] == offsets[1]
        np.testing.assert_array_equal(p.run(xs)[0].numpy(), want, err_msg=name)
    assert checked > 100 and aliased > 90
