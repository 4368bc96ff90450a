"""Graphs whose runtime state the tests save, and the child process that loads one in a fresh interpreter.

Run as ``python saved_graphs.py RUNTIME_STATE INPUTS RESULT KIND``: it builds a graph of KIND ("infer" or
"train") from freshly initialised modules, makes any tracing fail, loads the runtime state, runs the saved inputs
through it and saves the results, the seconds the load and first call took, and the compile count.
"""
import os
import signal
import subprocess
import sys
import time

import oneflow as flow

from models import TrainGraph, cnn


class InferGraph(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x, scale=2.0):
        y = self.model(x)
        return {"logits": y, "pair": (y.sum() * scale, [y.argmax(1)]), "note": "plain"}


def make(kind):
    model = cnn()
    if kind == "infer":
        return InferGraph(model.eval())
    return TrainGraph(model, flow.optim.Adam(model.parameters(), lr=1e-2))


def run_child(*args, timeout=120):
    """Runs this file in a fresh interpreter (its own process group, killed on timeout); returns its output."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{out}")
    return out


def _main(state_path, inputs_path, result_path, kind):
    from oneflow_graph import graph as graph_module
    from oneflow_graph import tracer

    def no_trace(*a, **k):
        raise AssertionError("the tracer ran in a graph loaded from a runtime state")

    graph_module.trace = tracer.trace = no_trace
    flow.manual_seed(12345)  # other initial values than the saving process's: the state must bring them
    g = make(kind)
    inputs = flow.load(inputs_path)
    t0 = time.perf_counter()
    g.load_runtime_state_dict(flow.load(state_path))
    first = g(*inputs[0])
    seconds = time.perf_counter() - t0
    outs = [first] + [g(*x) for x in inputs[1:]]
    flow.save({"outs": outs, "seconds": seconds, "compiles": g._compile_count,
               "params": {k: v for k, v in g.model.state_dict().items()}}, result_path)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import saved_graphs  # the classes under their importable name, as the saving process knew them

    saved_graphs._main(*sys.argv[1:5])
