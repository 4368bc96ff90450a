#!/usr/bin/env python3
"""Crash fuzzer for the registry ops (``oneflow._C.ops``): random arguments shaped by each op's schema
(tensors of every dtype, 0-d, empty, transposed, expanded and strided; extreme ints and floats; odd strings),
in child processes that log each trial before making it, so a crash (a signal) or a hang names its trial.
Exceptions are the expected outcome; only crashes and hangs are reported.

    PYTHONPATH=packages/flow-core/src python dev/fuzz_ops.py --trials 20000        # all ops
    PYTHONPATH=packages/flow-core/src python dev/fuzz_ops.py --helpers --seed 500   # backward helpers only
    PYTHONPATH=packages/flow-core/src python dev/fuzz_ops.py --show 1234            # print trial 1234's arguments
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

EXPECTED = (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError, OverflowError, MemoryError,
            ZeroDivisionError, AttributeError, KeyError)
INTS = [-3, -1, 0, 1, 2, 3, 5, 2 ** 40, -(2 ** 40), 2 ** 62]
FLOATS = [0.0, -1.5, 2.5, float("nan"), float("inf"), -float("inf"), 1e30, 1e-30]
STRS = ["mean", "sum", "none", "", "xyz", "reflect", "constant", "linear", "nearest", "bilinear", "replicate",
        "circular", "max", "fro", "nuc", "reduced", "L", "U", "floor", "trunc", "tanh"]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 3), (4, 1, 3), (2, 3, 4, 5), (1, 1, 1, 1, 1), (7,), (3, 3), (1,), (2, 2, 2)]


def schemas(helpers_only):
    """[{name, args: [(type, name)], defaulted: [names]}] from the registry's schema strings."""
    import oneflow as flow

    out = []
    for o in flow.list_ops():
        if helpers_only and "backward_helper" not in o["traits"]:
            continue
        s = o["schema"]
        args, defaulted = [], []
        for a in re.split(r",\s*(?![^\[]*\])", s[s.index("(") + 1:s.rindex(") ->")]):
            a = a.strip()
            if not a:
                continue
            if a == "*":
                args.append(("*", "*"))
                continue
            decl, _, default = a.partition("=")
            ty, name = decl.rsplit(" ", 1)
            args.append((ty.replace("(strict)", ""), name))
            if default:
                defaulted.append(name)
        out.append({"name": o["name"], "args": args, "defaulted": defaulted})
    return out


class Gen:
    def __init__(self, rng):
        import numpy as np
        import oneflow as flow

        self.rng, self.np, self.flow = rng, np, flow
        self.dtypes = [flow.float32, flow.float64, flow.int64, flow.int32, flow.bool, flow.uint8, flow.float16,
                       flow.bfloat16, flow.int8, flow.int16]

    def tensor(self):
        rng, np, flow = self.rng, self.np, self.flow
        shape = rng.choice(SHAPES)
        data = rng.choice([np.random.default_rng(rng.randrange(1 << 30)).standard_normal(shape) * 3,
                           np.zeros(shape), np.full(shape, rng.choice(FLOATS + [7.0]))])
        t = flow.tensor(np.asarray(data, dtype=np.float64)).to(rng.choice(self.dtypes))
        r = rng.random()
        if r < 0.15 and t.dim() >= 2:
            t = t.transpose(0, 1)
        elif r < 0.25 and t.dim() >= 1 and t.shape[0] == 1:
            t = t.expand(3, *t.shape[1:])
        elif r < 0.3 and t.dim() >= 1 and t.shape[-1] > 1:
            t = t[..., ::2]
        return t

    def value(self, ty):
        rng = self.rng
        base = ty.rstrip("?")
        if ty.endswith("?") and rng.random() < 0.3:
            return None
        if base.startswith("Tensor") and base.endswith("[]"):
            return [None if ty.startswith("Tensor?") and rng.random() < 0.3 else self.tensor()
                    for _ in range(rng.randrange(4))]
        if base.startswith("Tensor"):
            return self.tensor()
        if base == "int":
            return rng.choice(INTS)
        if base == "int[]":
            return [rng.choice(INTS[:7] if rng.random() < 0.9 else INTS) for _ in range(rng.randrange(5))]
        if base == "float":
            return rng.choice(FLOATS)
        if base == "float[]":
            return [rng.choice(FLOATS) for _ in range(rng.randrange(4))]
        if base == "bool":
            return rng.random() < 0.5
        if base == "Scalar":
            return rng.choice([rng.choice(INTS[:7]), rng.choice(FLOATS), True])
        if base == "str":
            return rng.choice(STRS)
        if base == "ScalarType":
            return rng.choice(self.dtypes)
        return None


def trial(ops, seed):
    """(op name, args, kwargs) of trial `seed`."""
    rng = random.Random(seed)
    op = rng.choice(ops)
    gen = Gen(rng)
    args, kwargs, keyword = [], {}, False
    for ty, name in op["args"]:
        if ty == "*":
            keyword = True
        elif not (name in op["defaulted"] and rng.random() < 0.4):  # defaulted arguments are often left out
            v = gen.value(ty)
            if keyword:
                kwargs[name] = v
            else:
                args.append(v)
    return op["name"], args, kwargs


def child(ops_file, start, n, log):
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (12 << 30, 12 << 30))  # huge sizes fail to allocate, not swap
    import oneflow as flow

    ops = json.load(open(ops_file))
    with open(log, "a") as lf:
        for seed in range(start, start + n):
            name, args, kwargs = trial(ops, seed)
            lf.write(f"{seed} {name}\n")
            lf.flush()
            try:
                getattr(flow._C.ops, name)(*args, **kwargs)
            except EXPECTED:
                pass
            except Exception as e:  # noqa: BLE001
                lf.write(f"  unexpected {type(e).__name__}: {str(e)[:200]}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0, help="first trial")
    p.add_argument("--chunk", type=int, default=1000, help="trials per child process")
    p.add_argument("--helpers", action="store_true", help="only the backward-helper ops")
    p.add_argument("--timeout", type=int, default=120, help="seconds a child may take before counting as a hang")
    p.add_argument("--show", type=int, default=None, help="print one trial's op and arguments, then run it")
    p.add_argument("--_child", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a._child:
        child(a._child[0], int(a._child[1]), int(a._child[2]), a._child[3])
        return 0
    work = tempfile.mkdtemp(prefix="fuzz_ops-")
    ops_file, log = os.path.join(work, "ops.json"), os.path.join(work, "trials.log")
    json.dump(schemas(a.helpers), open(ops_file, "w"))
    if a.show is not None:
        name, args, kwargs = trial(json.load(open(ops_file)), a.show)
        print(name, args, kwargs, flush=True)
        child(ops_file, a.show, 1, log)
        return 0
    open(log, "w").close()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    seed, end, crashes = a.seed, a.seed + a.trials, 0
    while seed < end:
        n = min(a.chunk, end - seed)
        cmd = [sys.executable, __file__, "--_child", ops_file, str(seed), str(n), log]
        try:
            rc = subprocess.run(cmd, env=env, capture_output=True, timeout=a.timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        last = [ln for ln in open(log).read().splitlines() if not ln.startswith("  ")][-1]
        if rc != 0:
            crashes += 1
            print(f"crash ({rc}) at trial {last}: rerun with --show {last.split()[0]}", flush=True)
        seed = int(last.split()[0]) + 1
    print(f"{a.trials} trials, {crashes} crashes; log in {log}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
