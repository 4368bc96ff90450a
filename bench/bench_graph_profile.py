"""Where a compiled graph's step time goes: the steps of bench_graph.py's workloads timed one by one and summed
per op kind, with the op counts, the memory plan, how many elementwise ops form chains that a fusion pass
could merge (an elementwise op reading a same-shaped elementwise result that nothing else reads), and the share
of the step in matrix products and convolutions: their FLOP rate against one large sgemm's on the same machine,
and the most that removing every other op could gain (graph rewrites cannot make the products themselves
faster).

The steps are timed by the core plan's own clock (``_C.Plan.run_profiled``, each step's wall time inside one
run of the plan), or as the Python loop where a graph runs on it; bench_graph.py says how fast a whole step is.

    python bench/bench_graph_profile.py gpt resnet18
"""
import collections
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_graph as bg  # noqa: E402  (sets the thread counts, finds oneflow_graph)
from oneflow import _C  # noqa: E402
from oneflow_graph import effects, executor  # noqa: E402


def _captured_inputs(step):
    """Runs ``step`` once and returns the flat inputs its graph's plan got."""
    got = {}
    run = executor.Plan.run

    def spy(self, flat):
        got["inputs"] = list(flat)
        return run(self, flat)

    executor.Plan.run = spy
    try:
        step()
    finally:
        executor.Plan.run = run
    return got["inputs"]


def _time_steps(plan, ir, inputs, rounds):
    """Seconds per op kind and per node of one run, averaged over ``rounds`` runs: the core plan's own per-step
    clock (``_C.Plan.run_profiled``) when the graph runs on it, else the Python loop's."""
    if plan.native:
        return _time_native(plan, ir, inputs, rounds)
    spent, per_node = collections.Counter(), [0.0] * len(ir.nodes)
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        for _ in range(rounds):
            env = list(plan._template)
            given = list(inputs) + plan.hoisted_values()
            for s, t in zip(plan._input_slots, given):
                env[s] = t
            for k, ((fn, ins, attrs, outs, frees), node) in enumerate(zip(plan._steps, ir.nodes)):
                t0 = time.perf_counter()
                r = fn([env[i] for i in ins], attrs)
                dt = time.perf_counter() - t0
                spent[node.name] += dt
                per_node[k] += dt / rounds
                for s, t in ([(outs, r)] if outs.__class__ is int else zip(outs, r)):
                    if s > 0:
                        env[s] = t
                for s in frees:
                    env[s] = None
    finally:
        _C._set_grad_enabled(prev)
    return {k: v / rounds for k, v in spent.items()}, per_node


def _time_native(plan, ir, inputs, rounds):
    given = list(inputs) + plan.hoisted_values()
    per_node = [0.0] * len(ir.nodes)
    for _ in range(rounds):
        _, ns = plan._native.run_profiled(given)
        for k, t in enumerate(ns):
            per_node[k] += t / 1e9 / rounds
    spent = collections.Counter()
    for node, t in zip(ir.nodes, per_node):
        spent[node.name] += t
    return spent, per_node


def _chains(ir):
    """Lengths of the elementwise chains (one reader per intermediate, same shapes) of ``ir``."""
    uses = collections.Counter(id(v) for n in ir.nodes for v in n.inputs if v is not None)
    returned = {id(v) for v in ir.output_values()}

    def elementwise(n):
        return "elementwise" in effects.traits(n.op) and not n.mutates and len(n.new_outputs()) == 1

    chain_of, chains = {}, []
    for n in ir.nodes:
        if not elementwise(n):
            continue
        src = next((v for v in n.inputs if v is not None and v.kind == "node" and id(v.producer) in chain_of
                    and uses[id(v)] == 1 and id(v) not in returned and v.shape == n.outputs[0].shape), None)
        chain = chain_of[id(src.producer)] if src is not None else []
        if src is None:
            chains.append(chain)
        chain.append(n.name)
        chain_of[id(n)] = chain
    return chains


def _product_flops(node):
    """Multiply-add FLOPs of a matrix-product or convolution node (2 x output elements x contracted length;
    direct convolution's count, which Winograd's kernels beat), or 0."""
    name = node.op.name
    if name == "convolution":
        w = node.inputs[1].shape
        return 2 * node.outputs[0].numel() * math.prod(w[1:])
    if name == "convolution_backward_input":
        return 2 * node.inputs[0].numel() * math.prod(node.inputs[1].shape[1:])
    if name == "convolution_backward_weight":
        return 2 * node.inputs[0].numel() * math.prod(node.attrs["weight_sizes"][1:])
    if name in ("mm", "_batch_matmul", "matmul", "bmm"):
        k = node.inputs[0].shape[-1]
    elif name == "addmm":
        k = node.inputs[1].shape[-1]
    elif name == "_mm_t_colsum":  # grad (M, N), input (M, K) -> grad^T @ input (N, K) and grad's column sums
        k = node.inputs[0].shape[0]
    else:
        return 0
    return 2 * node.outputs[0].numel() * k


def _sgemm_rate(n=1024, repeat=5):
    """FLOP/s of one large square float32 matmul on this machine (the GEMM kernels' ceiling here)."""
    a, b = bg.flow.randn(n, n), bg.flow.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2 * n ** 3 / best


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _gemm_bound(ir, spent_by_node, total):
    """How much of a step the matrix products and convolutions take, at what rate, and the most any rewrite
    around them could gain (the step with everything else removed)."""
    flops = sum(_product_flops(n) for n in ir.nodes)
    if not flops:
        return
    mm_time = sum(t for n, t in zip(ir.nodes, spent_by_node) if _product_flops(n))
    rate, peak = flops / mm_time, _sgemm_rate()
    print(f"  matrix products and convolutions: {flops / 1e9:.1f} GFLOP in {mm_time * 1e3:.1f} ms "
          f"({mm_time / total * 100:.0f}% of the step) at {rate / 1e9:.0f} GFLOP/s, {rate / peak * 100:.0f}% of a "
          f"1024^3 sgemm here ({peak / 1e9:.0f} GFLOP/s); removing all other work would make the step at most "
          f"x{total / mm_time:.2f} faster")


def profile(name, rounds=3):
    label = bg.WORKLOADS[name][0]
    step, graph = bg.graph_step(name)
    step()
    inputs = _captured_inputs(step)  # the steady-state plan's inputs
    entry = graph._last
    ir, plan = entry.ir, entry.plan
    spent, per_node = _time_steps(plan, ir, inputs, rounds)
    counts = collections.Counter(n.name for n in ir.nodes)
    total = sum(spent.values())
    print(f"\n{label}: {len(ir.nodes)} steps, {total * 1e3:.1f} ms in kernels; memory plan {plan.memory_stats()}")
    for kind, s in sorted(spent.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {kind:<30} x{counts[kind]:<4d} {s * 1e3:9.2f} ms  {s / total * 100:5.1f}%")
    _gemm_bound(ir, per_node, total)
    chains = _chains(ir)
    fusable = [c for c in chains if len(c) > 1]
    top = collections.Counter(" > ".join(c) for c in fusable).most_common(4)
    print(f"  elementwise ops: {sum(map(len, chains))}; in chains of 2 or more: {sum(map(len, fusable))} "
          f"({len(fusable)} chains) {top}")


if __name__ == "__main__":
    names = sys.argv[1:] or list(bg.WORKLOADS)
    unknown = [n for n in names if n not in bg.WORKLOADS]
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; choose from {list(bg.WORKLOADS)}")
    for n in names:
        profile(n)
