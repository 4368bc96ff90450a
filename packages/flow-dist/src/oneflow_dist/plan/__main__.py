"""``python -m oneflow_dist.plan --model gpt --layers 48 --hidden 6144 --ranks 1024 --layout dp=8,tp=8,pp=16``:
prints the per-rank memory, the bytes per collective per step and the pipeline bubble of that layout, next to
the Megatron-LM papers' formulas (see :mod:`oneflow_dist.plan`)."""
import argparse
import sys

from . import Config, megatron_activation_bytes, simulate


def _layout(text):
    out = {"dp": 1, "tp": 1, "pp": 1}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in out or not value.isdigit() or int(value) < 1:
            raise argparse.ArgumentTypeError(f"--layout takes dp=N,tp=N,pp=N with positive N, got {part!r}")
        out[key] = int(value)
    return out


def _gib(n):
    return f"{n / 2**30:8.2f} GiB"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m oneflow_dist.plan", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["gpt"], default="gpt")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, help="attention heads (default: hidden / 128)")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=51200)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--global-batch", type=int, default=512)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--layout", type=_layout, default={"dp": 1, "tp": 1, "pp": 1}, help="dp=N,tp=N,pp=N")
    ap.add_argument("--zero", type=int, default=0, choices=[0, 1, 2, 3])
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--recompute", default="none", choices=["none", "full"])
    a = ap.parse_args(argv)
    cfg = Config(layers=a.layers, hidden=a.hidden, heads=a.heads or max(1, a.hidden // 128), seq=a.seq,
                 vocab=a.vocab, micro_batch=a.micro_batch, global_batch=a.global_batch, ranks=a.ranks,
                 zero=a.zero, dtype=a.dtype, recompute=a.recompute, **a.layout)
    try:
        r = simulate(cfg)
    except ValueError as e:
        ap.error(str(e))
    m = r["micro_batches"]
    print(f"GPT {cfg.layers} layers, hidden {cfg.hidden}, {cfg.heads} heads, seq {cfg.seq}, vocab {cfg.vocab}: "
          f"~{r['model_parameters_approx'] / 1e9:.2f} B parameters")
    print(f"layout dp={cfg.dp} tp={cfg.tp} pp={cfg.pp} on {cfg.ranks} ranks, ZeRO-{cfg.zero}, {cfg.dtype}, "
          f"recompute {cfg.recompute}; {m} micro-batches of {cfg.micro_batch} per step (1F1B)")
    act = r["layer"]["activation_bytes"]
    print(f"per layer per micro-batch (traced on meta): {r['layer']['parameters'] / 1e6:.2f} M parameters per "
          f"rank, activations {act / 2**20:.1f} MiB; Korthikanti et al. {megatron_activation_bytes(cfg) / 2**20:.1f}"
          f" MiB with 1-byte dropout masks, {megatron_activation_bytes(cfg, 2) / 2**20:.1f} MiB with masks in the "
          f"activations' dtype (as here)")
    w = r["stages"][r["worst_stage"]]
    print(f"per-rank memory, stage {w['stage']} (the largest; {w['in_flight']} micro-batches in flight):")
    for k, v in w["memory"].items():
        print(f"  {k:<12}{_gib(v)}")
    print("communication per rank per step (ring minimum):")
    for k, v in r["comm_per_step"].items():
        print(f"  {k:<18}{v['count']:6d} x  total {_gib(v['bytes'])}")
    if not r["comm_per_step"]:
        print("  none (one rank)")
    print(f"pipeline bubble: {r['bubble_fraction']:.4f} simulated, (p-1)/(m+p-1) = {r['bubble_formula']:.4f}")
    print(f"zero-bubble (ZB-H1) bubble, F = B = W: {r['zero_bubble_fraction']:.4f} simulated, "
          f"(p-1)/(3m+p-1) = {r['zero_bubble_formula']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
