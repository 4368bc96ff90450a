"""The plan simulator (python -m oneflow_dist.plan): the 1F1B schedule and its bubble, activation memory traced
on the meta device against Korthikanti et al.'s formula, per-rank memory under ZeRO, and collective bytes."""
import subprocess
import sys

import pytest

from oneflow_dist.plan import Config, megatron_activation_bytes, simulate
from oneflow_dist.plan.schedule import one_f_one_b, simulate as run_schedule, zero_bubble_h1, zero_bubble_h1_bubble
from oneflow_dist.plan.trace import layer_memory


@pytest.mark.parametrize("p,m", [(1, 1), (1, 4), (2, 4), (4, 8), (4, 2), (8, 8), (16, 64)])
def test_one_f_one_b_order_bubble_and_in_flight(p, m):
    orders = one_f_one_b(p, m)
    for i, order in enumerate(orders):
        assert sorted(order) == sorted([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
        assert all(order.index(("F", j)) < order.index(("B", j)) for j in range(m))
    r = run_schedule(orders)
    assert r["bubble_fraction"] == pytest.approx((p - 1) / (m + p - 1))
    assert r["max_in_flight"] == [min(p - i, m) for i in range(p)]  # 1F1B's bound on live activations


def test_a_deadlocking_order_is_reported():
    orders = one_f_one_b(2, 2)
    orders[1] = [("B", 0), ("F", 0), ("F", 1), ("B", 1)]  # a backward before its forward
    with pytest.raises(RuntimeError, match="deadlock"):
        run_schedule(orders)


@pytest.mark.parametrize("p,m", [(1, 1), (1, 3), (2, 1), (2, 4), (2, 8), (3, 5), (4, 2), (4, 4), (4, 8), (8, 16)])
def test_zero_bubble_h1_runs_every_step_once_in_order(p, m):
    orders = zero_bubble_h1(p, m)
    assert len(orders) == p
    for order in orders:
        assert sorted(order) == sorted((k, j) for k in "FBW" for j in range(m))
        assert all(order.index(("F", j)) < order.index(("B", j)) < order.index(("W", j)) for j in range(m))
        for k in "FBW":  # each kind in micro-batch order (W of j and j + 1 add into the same gradients)
            assert [j for kk, j in order if kk == k] == list(range(m))
    # its forwards and input-gradient backwards are 1F1B's order
    assert [[s for s in o if s[0] != "W"] for o in orders] == one_f_one_b(p, m)
    run_schedule(orders, 1.0, 1.0, 1.0)  # no deadlock


@pytest.mark.parametrize("p,m", [(2, 4), (2, 8), (4, 4), (4, 8)])
@pytest.mark.parametrize("f,b,w", [(1.0, 1.0, 1.0), (1.0, 1.0, 0.5), (2.0, 1.0, 1.0), (1.0, 1.2, 1.0)])
def test_zero_bubble_h1_bubble_is_the_papers_and_below_1f1b(p, m, f, b, w):
    zb = run_schedule(zero_bubble_h1(p, m), f, b, w)
    ofob = run_schedule(one_f_one_b(p, m), f, b, w)  # its B steps run B + W
    assert zb["busy"] == ofob["busy"] == m * (f + b + w)
    # Qi et al.: ZB-H1's bubble is (p - 1)(F + B - W) per stage, 1F1B's (p - 1)(F + B + W)
    assert zb["makespan"] == pytest.approx(m * (f + b + w) + (p - 1) * (f + b - w))
    assert ofob["makespan"] == pytest.approx(m * (f + b + w) + (p - 1) * (f + b + w))
    assert zb["bubble_fraction"] == pytest.approx(zero_bubble_h1_bubble(p, m, f, b, w))
    assert zb["bubble_fraction"] < ofob["bubble_fraction"]
    # activations between F and B: 1F1B's on every stage; between F and W: at most 1F1B's first stage's
    assert zb["max_in_flight"] == ofob["max_in_flight"] == [min(p - i, m) for i in range(p)]
    assert zb["max_unfinished"] == [min(p, m)] * p
    assert ofob["max_unfinished"] == ofob["max_in_flight"]


def test_zero_bubble_h1_on_two_stages():
    assert zero_bubble_h1(2, 4) == [
        [("F", 0), ("F", 1), ("B", 0), ("W", 0), ("F", 2), ("B", 1), ("W", 1), ("F", 3), ("B", 2), ("W", 2),
         ("B", 3), ("W", 3)],
        [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("W", 0), ("F", 2), ("B", 2), ("W", 1), ("F", 3), ("B", 3),
         ("W", 2), ("W", 3)]]


def test_schedule_errors():
    with pytest.raises(ValueError, match="zero_bubble_h1: stages and micro_batches must be >= 1"):
        zero_bubble_h1(2, 0)
    orders = zero_bubble_h1(2, 2)
    orders[1] = [s for s in orders[1] if s != ("W", 1)]
    with pytest.raises(ValueError, match="stage 1's steps must be each of"):
        run_schedule(orders)
    orders = zero_bubble_h1(2, 2)
    orders[0] = [("F", 0), ("F", 1), ("W", 0), ("B", 0), ("B", 1), ("W", 1)]  # a W before its B
    with pytest.raises(RuntimeError, match="deadlock"):
        run_schedule(orders)


@pytest.mark.parametrize("h,a,s,b,t", [(1024, 16, 512, 2, 1), (1024, 16, 512, 2, 4), (768, 12, 256, 3, 2),
                                       (2048, 32, 128, 1, 8)])
def test_traced_layer_matches_the_papers_formulas(h, a, s, b, t):
    params, act = layer_memory(h, a, s, b, tp=t)
    assert params == 3 * h * h // t + 3 * h // t + h * h // t + h + 4 * h * h // t + 4 * h // t + 4 * h * h // t \
        + h + 4 * h  # column-split weights/biases, row-split weights, replicated biases and LayerNorms
    cfg = Config(hidden=h, heads=a, seq=s, micro_batch=b, tp=t, ranks=t)
    # this framework keeps dropout masks in the activations' dtype (2 bytes) where the paper counts 1 byte;
    # beyond that the traced bytes are the formula's, up to LayerNorm's per-row statistics
    assert act == pytest.approx(megatron_activation_bytes(cfg, mask_bytes=2), rel=2e-3)
    assert act > megatron_activation_bytes(cfg, mask_bytes=1)


def big(**kw):
    base = dict(layers=48, hidden=6144, heads=48, seq=2048, vocab=51200, micro_batch=1, global_batch=512,
                ranks=1024, dp=8, tp=8, pp=16)
    base.update(kw)
    return Config(**base)


def test_first_stage_holds_all_layers_worth_of_activations_under_1f1b():
    r = simulate(big())
    first = r["stages"][0]
    assert first["in_flight"] == 16
    assert first["memory"]["activations"] == 48 * r["layer"]["activation_bytes"]  # p micro-batches x L/p layers
    assert r["bubble_fraction"] == pytest.approx(15 / (64 + 15))


def test_zero_shards_optimizer_state_then_gradients_then_parameters():
    mem = [simulate(big(zero=z))["stages"][0]["memory"] for z in range(4)]
    assert mem[1]["optimizer"] == pytest.approx(mem[0]["optimizer"] / 8)
    assert mem[1]["grads"] == mem[0]["grads"] and mem[2]["grads"] == pytest.approx(mem[0]["grads"] / 8)
    assert mem[2]["params"] == mem[0]["params"] and mem[3]["params"] == pytest.approx(mem[0]["params"] / 8)
    assert mem[0]["activations"] == mem[3]["activations"]


def test_collective_bytes_are_the_ring_minimum():
    cfg = big()
    r = simulate(cfg)
    hidden_bytes = 2048 * 1 * 6144 * 2
    comm = r["comm_per_step"]
    assert comm["tp all_reduce"]["count"] == 4 * 3 * 64  # 4 per layer, 3 layers per stage, 64 micro-batches
    assert comm["tp all_reduce"]["bytes"] == pytest.approx(4 * 3 * 64 * 2 * 7 / 8 * hidden_bytes)
    grads = r["stages"][0]["parameters"] * 2
    assert comm["dp all_reduce"]["bytes"] == pytest.approx(2 * 7 / 8 * grads)
    assert comm["pp send"]["bytes"] == 2 * 64 * hidden_bytes
    z2 = simulate(big(zero=2))["comm_per_step"]
    assert z2["dp reduce_scatter"]["bytes"] + z2["dp all_gather"]["bytes"] == pytest.approx(
        comm["dp all_reduce"]["bytes"])  # ZeRO-2 moves what an all-reduce moves
    assert "tp all_reduce" not in simulate(big(tp=1, dp=64))["comm_per_step"]


def test_full_recompute_keeps_only_layer_inputs():
    none, full = simulate(big()), simulate(big(recompute="full"))
    boundary = 2048 * 6144 * 2
    assert full["stages"][0]["memory"]["activations"] == 48 * boundary + none["layer"]["activation_bytes"]


@pytest.mark.parametrize("kw,words", [(dict(dp=4), "dp\\*tp\\*pp"), (dict(pp=32, dp=4), "divide layers"),
                                      (dict(global_batch=100), "multiple of"), (dict(zero=4), "zero must be"),
                                      (dict(heads=47), "must divide heads")])
def test_bad_configurations_are_named(kw, words):
    with pytest.raises(ValueError, match=words):
        simulate(big(**kw))


def test_command_line():
    cmd = [sys.executable, "-m", "oneflow_dist.plan", "--model", "gpt", "--layers", "48", "--hidden", "6144",
           "--ranks", "1024", "--layout", "dp=8,tp=8,pp=16"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "pipeline bubble: 0.1899 simulated, (p-1)/(m+p-1) = 0.1899" in p.stdout
    assert "zero-bubble (ZB-H1) bubble, F = B = W: 0.0725 simulated, (p-1)/(3m+p-1) = 0.0725" in p.stdout
    assert "activations" in p.stdout and "tp all_reduce" in p.stdout
    bad = subprocess.run(cmd[:-1] + ["dp=8,tp=8"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "dp*tp*pp" in bad.stderr
