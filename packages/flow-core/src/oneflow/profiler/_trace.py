"""Writing results out: Chrome trace JSON, folded stacks, and the TensorBoard trace handler.

The Chrome trace holds one complete event (``"ph": "X"``) per range with ``ts``/``dur`` in microseconds from the
profile's start (``baseTimeNanoseconds`` gives that start as Unix time, as PyTorch's traces do), metadata events
naming the process and threads, and ``fwdbwd`` flow arrows from each forward op to the autograd node it created.
"""
import gzip
import json
import os
import socket
import time

_CATEGORY = {"op": "cpu_op", "node": "cpu_op", "user": "user_annotation"}


def _args(e):
    args = {"External id": e.id, "Ev Idx": e.id}
    if e.sequence_nr >= 0:
        args["Sequence number"] = e.sequence_nr
        args["Fwd thread id"] = e.fwd_thread
    if e.input_shapes:
        args["Input Dims"] = e.input_shapes
        args["Input type"] = e.input_dtypes
    if e.cpu_memory_usage:
        args["CPU Mem"] = e.cpu_memory_usage
    if e.flops:
        args["flops"] = e.flops
    if e.args is not None:
        args["Record function args"] = e.args
    return args


def chrome_trace(events, base_epoch_ns=None, metadata=None, trace_name=None, pid=None):
    """The trace as a dict ready for ``json.dump``."""
    pid = os.getpid() if pid is None else pid
    trace = []
    trace.append({"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python"}})
    trace.append({"ph": "M", "name": "process_labels", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": "CPU"}})
    for tid in sorted({e.thread for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid,
                      "args": {"name": f"thread {tid} (python)"}})
    # forward op -> its backward node: the first event of each sequence number that is an op, and the node range
    # named like the node (not the evaluate_function wrapper), as PyTorch draws the arrow
    forward = {}
    flows = []
    for e in events:
        trace.append({"ph": "X", "cat": _CATEGORY.get(e.kind, "cpu_op"), "name": e.trace_name, "pid": pid,
                      "tid": e.thread, "ts": round(e.time_range.start, 3),
                      "dur": round(e.time_range.elapsed_us(), 3), "args": _args(e)})
        if e.sequence_nr < 0:
            continue
        if e.kind == "op" and e.sequence_nr not in forward:
            forward[e.sequence_nr] = e
        elif e.kind == "node" and not e.name.startswith("autograd::") and e.sequence_nr in forward:
            flows.append((forward.pop(e.sequence_nr), e))
    for i, (fwd, bwd) in enumerate(flows, 1):
        trace.append({"ph": "s", "id": i, "pid": pid, "tid": fwd.thread, "ts": round(fwd.time_range.start, 3),
                      "cat": "fwdbwd", "name": "fwdbwd"})
        trace.append({"ph": "f", "id": i, "pid": pid, "tid": bwd.thread, "ts": round(bwd.time_range.start, 3),
                      "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
    out = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms"}
    if base_epoch_ns is not None:
        out["baseTimeNanoseconds"] = base_epoch_ns
    out.update(metadata or {})
    out["traceEvents"] = trace
    if trace_name is not None:
        out["traceName"] = trace_name
    return out


def write_chrome_trace(events, path, base_epoch_ns=None, metadata=None):
    """Writes ``chrome_trace(events)`` to ``path`` (gzip-compressed when it ends with ``.gz``)."""
    path = os.fspath(path)
    data = chrome_trace(events, base_epoch_ns=base_epoch_ns, metadata=metadata, trace_name=path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)


def write_stacks(events, path, metric):
    """One folded-stack line per event with a stack: outermost frame first, the event's name as the leaf."""
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            if not e.stack:
                continue
            value = int(getattr(e, metric, 0) or 0)
            # ';' separates frames in the folded format, so it cannot appear inside one
            frames = [s.replace(";", ",") for s in reversed(e.stack)] + [e.name.replace(";", ",")]
            f.write(";".join(frames) + f" {value}\n")


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An ``on_trace_ready`` callback writing each finished cycle to
    ``dir_name/<worker_name>.<milliseconds since epoch>.pt.trace.json[.gz]``, the layout TensorBoard's profiler
    plugin reads. ``worker_name`` defaults to ``<hostname>_<pid>``; ``use_python_export`` is accepted and ignored
    (there is a single exporter)."""

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        suffix = ".pt.trace.json.gz" if use_gzip else ".pt.trace.json"
        stamp = time.time_ns() // 1_000_000
        # two cycles ending within one millisecond would overwrite each other: move the later one along
        while os.path.exists(os.path.join(dir_name, f"{worker}.{stamp}{suffix}")):
            stamp += 1
        prof.export_chrome_trace(os.path.join(dir_name, f"{worker}.{stamp}{suffix}"))

    return handler
