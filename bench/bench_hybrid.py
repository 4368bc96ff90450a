"""Hybrid layouts of examples/gpt_hybrid (the bench-size GPT of bench_training, SGD): tokens/s of DP, TP and 2-stage PP
(4 micro-batches), eager and inside an nn.Graph (--graph; PP in the zero-bubble ZB-H1 and the 1F1B schedules), on 2
ranks x 1 thread against one rank with 1 thread at the same global batch (the faster of its eager and graph runs),
and DP, TP and DPxTP on 4 ranks (oversubscribed on a 2-core machine); and the per-rank memory of ZeRO-2 against DP on
4 ranks with Adam (the model states after a step, and the peak tensor bytes with the activations). Each run's
tokens/s is its median step over 12 timed steps (examples/gpt_hybrid/train.py); the figure is the best of
BENCH_ROUNDS (3) interleaved rounds; prints the ratios.

    python bench/bench_hybrid.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "examples", "gpt_hybrid", "train.py")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
ARGS = ["--size", "bench", "--steps", "15", "--warmup", "3", "--opt", "sgd", "--lr", "0.01"]
GRAPH, ADAM = ("--graph",), ("--opt", "adam")
GRAPH_1F1B = ("--graph", "--schedule", "1f1b")  # GRAPH runs pipelines in the default zero-bubble schedule


def launch(nproc, layout, batch, extra=()):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, TRAIN] if nproc == 1 else [sys.executable, "-m", "oneflow_dist.launcher", "--nproc",
                                                      str(nproc), TRAIN]
    # extra goes last: its --opt overrides ARGS'
    out = subprocess.run(cmd + ["--layout", layout, "--batch", str(batch)] + ARGS + list(extra), env=env,
                         capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise SystemExit(out.stderr)
    rows = re.findall(r"^rank (\d+) layout \w+ tokens/s ([\d.]+) peak_mem_mib ([\d.]+) tensor_peak_mib ([\d.]+) "
                      r"state_mib ([\d.]+)$", out.stdout, re.M)
    # the slowest rank sets the pace; memory is the largest rank's
    return (min(float(r[1]) for r in rows), *(max(float(r[k]) for r in rows) for k in (2, 3, 4)))


def main():
    configs = [(1, "single", 8), (1, "single", 16), (1, "single", 8, GRAPH), (2, "dp", 16), (2, "dp", 16, GRAPH),
               (2, "tp", 8), (2, "tp", 8, GRAPH), (2, "pp", 8), (2, "pp", 8, GRAPH), (2, "pp", 8, GRAPH_1F1B),
               (4, "dp", 16), (4, "tp", 8), (4, "dpxtp", 16), (4, "dp", 16, ADAM), (4, "zero2", 16, ADAM)]
    best = {}
    for _ in range(ROUNDS):
        for c in configs:
            run = launch(*c)
            if run[0] > best.get(c, (0.0,))[0]:
                best[c] = run
    for c in configs:
        print(f"RESULT nproc={c[0]} layout={c[1]} batch={c[2]} {' '.join(c[3]) if c[3:] else ''} "
              f"tokens_per_s={best[c][0]:.1f} peak_rss_mib={best[c][1]:.1f} tensor_peak_mib={best[c][2]:.1f} "
              f"state_mib={best[c][3]:.1f}")
    one = {b: best[(1, "single", b)][0] for b in (8, 16)}
    # the 2-rank runs are measured against the faster one-rank run at batch 8 (eager or graph)
    base = max(one[8], best[(1, "single", 8, GRAPH)][0])

    def rel(*c):
        return f"{best[c][0] / base:.2f}x"
    print(f"one rank, batch 8: graph {best[(1, 'single', 8, GRAPH)][0] / one[8]:.2f}x eager")
    print(f"2 ranks x 1 thread, against the faster one-rank run at batch 8 (target >= 1.7): DP (batch 16) "
          f"{rel(2, 'dp', 16)} eager, {rel(2, 'dp', 16, GRAPH)} graph; TP (batch 8) {rel(2, 'tp', 8)} eager, "
          f"{rel(2, 'tp', 8, GRAPH)} graph; 2-stage PP (batch 8, 4 micro-batches) {rel(2, 'pp', 8)} eager, "
          f"{rel(2, 'pp', 8, GRAPH)} graph (zero-bubble; {rel(2, 'pp', 8, GRAPH_1F1B)} with 1F1B); DP (batch 16) "
          f"against one rank at batch 16: {best[(2, 'dp', 16)][0] / one[16]:.2f}x")
    print(f"4 ranks (oversubscribed): DP {best[(4, 'dp', 16)][0] / one[16]:.2f}x, TP "
          f"{best[(4, 'tp', 8)][0] / one[8]:.2f}x, DPxTP {best[(4, 'dpxtp', 16)][0] / one[16]:.2f}x one rank at "
          f"the same batch")
    dp, z2 = best[(4, "dp", 16, ADAM)], best[(4, "zero2", 16, ADAM)]
    print(f"ZeRO-2 on 4 ranks (Adam): per-rank model states (params, grads, optimizer state) {z2[3]:.1f} MiB = "
          f"{z2[3] / dp[3]:.2f}x DP's {dp[3]:.1f} MiB (target <= 0.6); tensor peak with the activations "
          f"{z2[2] / dp[2]:.2f}x; peak RSS {z2[1] / dp[1]:.2f}x; throughput {z2[0] / dp[0]:.2f}x DP's")


if __name__ == "__main__":
    main()
