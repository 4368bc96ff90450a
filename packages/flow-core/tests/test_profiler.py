"""oneflow.profiler / oneflow.autograd.profiler: events, counts, nesting, schedules, traces and tables.

Op counts are checked against what the dispatch layer sees (a logging mode run on the same code) and against
hand counts; schedule semantics against torch.profiler's schedule and its step/on_trace_ready behaviour."""
import collections
import gzip
import json
import os
import re
import warnings

import pytest

import oneflow as flow
from oneflow._dispatch import DispatchMode, current_modes
from oneflow.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from oneflow.profiler._op_names import ONEFLOW_ONLY

torch = pytest.importorskip("torch")
import torch.profiler as tprof  # noqa: E402


class Counting(DispatchMode):
    """Counts registry ops by name, as the profiler should see them."""

    def __init__(self):
        self.counts = collections.Counter()

    def __flow_dispatch__(self, op, inputs, attrs):
        self.counts[op.name] += 1
        return op.redispatch(inputs, attrs)


def train_steps(x, w, n):
    for _ in range(n):
        (x @ w).relu().sum().backward()


def op_counts(events):
    """Event counts of registry ops, by registry op name."""
    return collections.Counter(e.name.split("::", 1)[1] for e in events if e.kind == "op")


def ancestors(e):
    while e.cpu_parent is not None:
        e = e.cpu_parent
        yield e


@pytest.fixture
def leaves():
    return flow.randn(3, 4, requires_grad=True), flow.randn(4, 5, requires_grad=True)


# ---- recording ----------------------------------------------------------------------------------------------
def test_forward_backward_counts_match_dispatched_ops(leaves):
    x, w = leaves
    with Counting() as seen:
        train_steps(x, w, 3)
    x.grad = w.grad = None  # the same run again: the first step's gradients are taken over, later ones added
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_steps(x, w, 3)
    assert op_counts(prof.events()) == seen.counts
    avg = {e.key: e for e in prof.key_averages()}
    # per step: one mm forward, two in backward (x and w both need gradients); one relu, its threshold_backward
    assert avg["aten::mm"].count == 9
    assert avg["aten::relu"].count == 3 and avg["aten::threshold_backward"].count == 3
    assert avg["autograd::engine::evaluate_function: MmBackward0"].count == 3
    assert avg["MmBackward0"].count == 3 and avg["AccumulateGrad"].count == 6


def test_backward_ops_sit_under_their_autograd_node(leaves):
    x, w = leaves
    with profile() as prof:
        train_steps(x, w, 1)
    events = prof.events()
    mms = [e for e in events if e.name == "aten::mm"]
    fwd = [e for e in mms if e.cpu_parent is None]
    bwd = [e for e in mms if e.cpu_parent is not None]
    assert len(fwd) == 1 and len(bwd) == 2
    for e in bwd:
        assert e.cpu_parent.name == "MmBackward0"
        assert e.cpu_parent.cpu_parent.name == "autograd::engine::evaluate_function: MmBackward0"
    # the forward op carries the sequence number of the node it created, as in PyTorch
    node = bwd[0].cpu_parent
    assert fwd[0].sequence_nr == node.sequence_nr >= 0
    assert x.grad is not None and w.grad is not None


def test_backward_of_graph_built_before_profiling_and_explicit_gradient(leaves):
    x, w = leaves
    y = (x @ w).tanh().sum()
    with profile() as prof:
        y.backward(flow.tensor(2.0))
    names = [e.name for e in prof.events()]
    assert "autograd::engine::evaluate_function: SumBackward0" in names
    assert "TanhBackward0" in names and "aten::tanh_backward" in names
    tb = next(e for e in prof.events() if e.name == "aten::tanh_backward")
    assert tb.cpu_parent.name == "TanhBackward0"


def test_autograd_grad_drops_skipped_nodes_and_unhooks(leaves):
    x, w = leaves
    y = (x @ w).sum()
    with profile() as prof:
        (gx,) = flow.autograd.grad(y, [x])
    assert gx.shape == x.shape
    names = [e.name for e in prof.events()]
    assert not any("AccumulateGrad" in n for n in names)  # grad() runs no accumulator
    assert names.count("MmBackward0") == 1
    # every range closed inside its parent: no event outlives the one enclosing it
    for e in prof.events():
        if e.cpu_parent is not None:
            assert e.cpu_parent.time_range.start <= e.time_range.start
            assert e.time_range.end <= e.cpu_parent.time_range.end
    # after profiling nothing observes autograd or dispatch any more
    assert flow.autograd._engine_observers == [] and current_modes() == []
    (x @ w).sum().backward()
    assert x.grad is not None


def test_record_function_nesting_and_self_time(leaves):
    x, w = leaves

    @record_function("decorated")
    def block():
        return x.exp()

    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                y = x @ w
                y = y.relu()
            block()
        block()
    events = prof.events()
    by_name = collections.defaultdict(list)
    for e in events:
        by_name[e.name].append(e)
    outer, inner = by_name["outer"][0], by_name["inner"][0]
    assert inner.cpu_parent is outer and outer.cpu_parent is None
    assert {e.name for e in inner.cpu_children} == {"aten::mm", "aten::relu"}
    assert [getattr(d.cpu_parent, "name", None) for d in by_name["decorated"]] == ["outer", None]
    assert all(e.cpu_children[0].name == "aten::exp" for e in by_name["decorated"])
    assert outer.is_user_annotation and not by_name["aten::mm"][0].is_user_annotation
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - sum(c.cpu_time_total
                                                                             for c in e.cpu_children))
    for a in prof.key_averages():
        assert a.self_cpu_time_total <= a.cpu_time_total + 1e-9
    # outside a profiler, record_function costs nothing and records nothing
    with record_function("idle"):
        x.exp()


def test_nested_profilers_are_rejected():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    assert current_modes() == []


def test_events_only_after_stop():
    with profile() as prof:
        flow.ones(2) + 1
        with pytest.raises(RuntimeError):
            prof.events()
    assert len(prof.events()) == 2


# ---- schedules ----------------------------------------------------------------------------------------------
SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2),
             dict(wait=0, warmup=0, active=1), dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
             dict(wait=5, warmup=1, active=2, skip_first=2, skip_first_wait=1),
             dict(wait=2, warmup=2, active=1, repeat=3, skip_first_wait=1)]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_matches_torch(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = schedule(**kw), tprof.schedule(**kw)
    assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)]
    assert [ours(i).value for i in range(40)] == [theirs(i).value for i in range(40)]


def test_schedule_rejects_bad_arguments():
    with pytest.raises(AssertionError):
        schedule(wait=0, warmup=0, active=0)
    with pytest.raises(AssertionError):
        schedule(wait=-1, warmup=1, active=1)
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=1, warmup=0, active=1)
    assert [a.name for a in ProfilerAction] == [a.name for a in tprof.ProfilerAction]


def run_loop(mod, steps, work, **kw):
    """Runs ``steps`` profiled steps under ``mod.profiler``; returns, per on_trace_ready call, the step number and
    the event counts of the cycle (step marks are keyed ``ProfilerStep*`` in both)."""
    cycles = []

    def ready(p):
        counts = collections.Counter(e.name for e in p.events())
        cycles.append((p.step_num, counts["ProfilerStep*"], counts["aten::add"]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mod.profiler.profile(activities=[mod.profiler.ProfilerActivity.CPU], on_trace_ready=ready, **kw) as p:
            for _ in range(steps):
                work()
                p.step()
    return cycles


@pytest.mark.parametrize("kw", SCHEDULES[:4])
def test_profile_step_cycles_match_torch(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours_fn, theirs_fn = flow.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    a, b = flow.ones(2), torch.ones(2)
    ours = run_loop(flow, 9, lambda: a + a, schedule=ours_fn)
    theirs = run_loop(torch, 9, lambda: b + b, schedule=theirs_fn)
    assert ours == theirs and ours


def test_profile_without_schedule_matches_torch():
    a, b = flow.ones(2), torch.ones(2)
    assert run_loop(flow, 3, lambda: a + a) == run_loop(torch, 3, lambda: b + b) == [(3, 0, 3)]


def test_only_active_steps_are_intercepted():
    a = flow.ones(2)
    modes = []
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1)) as p:
        for step in range(6):
            modes.append(len(current_modes()))
            for _ in range(step + 1):  # step i issues i + 1 adds
                a + a
            p.step()
    assert modes == [0, 0, 1, 1, 0, 0]
    assert flow.autograd._engine_observers == []
    avg = {e.key: e for e in p.key_averages()}
    assert avg["aten::add"].count == 3 + 4  # steps 2 and 3 only
    assert avg["ProfilerStep*"].count == 2
    steps = [e for e in p.events() if e.name == "ProfilerStep*"]
    assert [s.trace_name for s in steps] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert [len(s.cpu_children) for s in steps] == [3, 4]


def test_acc_events_keeps_earlier_cycles():
    a = flow.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = schedule(wait=0, warmup=0, active=1)
    for acc, expected in ((False, [1, 1, 1, 1, 0]), (True, [1, 2, 3, 4, 4])):
        seen = []
        ready = lambda p: seen.append(sum(e.count for e in p.key_averages() if e.key == "aten::add"))  # noqa: E731
        with profile(schedule=sched, acc_events=acc, on_trace_ready=ready) as p:
            for _ in range(4):
                a + a
                p.step()
        assert seen == expected


# ---- output -------------------------------------------------------------------------------------------------
def test_chrome_trace_is_valid_json_with_events(tmp_path, leaves):
    x, w = leaves
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            train_steps(x, w, 1)
    for name in ("trace.json", "trace.json.gz"):
        path = tmp_path / name
        prof.export_chrome_trace(str(path))
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as f:
            data = json.load(f)
        xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
        assert len(xs) == len(prof.events())
        assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and e["pid"] == os.getpid() for e in xs)
        mm = [e for e in xs if e["name"] == "aten::mm"]
        assert len(mm) == 3 and mm[0]["args"]["Input Dims"] == [[3, 4], [4, 5]]
        assert mm[0]["cat"] == "cpu_op"
        step = next(e for e in xs if e["name"] == "step")
        assert step["cat"] == "user_annotation"
        assert step["ts"] <= mm[0]["ts"] and mm[0]["ts"] + mm[0]["dur"] <= step["ts"] + step["dur"] + 1e-3
        flows = [e for e in data["traceEvents"] if e["ph"] in "sf"]
        assert flows and len(flows) % 2 == 0
        assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in data["traceEvents"])


def test_tensorboard_trace_handler_writes_one_file_per_cycle(tmp_path):
    a = flow.ones(2)
    for gz in (False, True):
        out = tmp_path / ("gz" if gz else "plain")
        handler = flow.profiler.tensorboard_trace_handler(str(out), worker_name="w0", use_gzip=gz)
        with profile(schedule=schedule(wait=1, warmup=1, active=1, repeat=2), on_trace_ready=handler) as p:
            for _ in range(7):
                a * a
                p.step()
        files = sorted(os.listdir(out))
        suffix = r"\.pt\.trace\.json" + (r"\.gz" if gz else "")
        assert len(files) == 2 and all(re.fullmatch(r"w0\.\d+" + suffix, f) for f in files)
        opener = gzip.open if gz else open
        with opener(out / files[0], "rt") as f:
            names = [e["name"] for e in json.load(f)["traceEvents"]]
        assert "aten::mul" in names and "ProfilerStep#2" in names


def test_table_rows_and_columns(leaves):
    x, w = leaves
    with profile(record_shapes=True, profile_memory=True) as prof:
        train_steps(x, w, 2)
    avg = prof.key_averages()
    table = avg.table(sort_by="cpu_time_total", row_limit=5, header="my header")
    lines = table.splitlines()
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem",
                "Self CPU Mem", "# of Calls"):
        assert col in lines[3]
    assert "Input Shapes" not in table
    assert lines[1] == "my header" and lines[-1].startswith("Self CPU time total:")
    rows = [line for line in lines[5:-2]]
    assert len(rows) == 5
    totals = sorted(avg, key=lambda e: e.cpu_time_total, reverse=True)[:5]
    assert [r.split()[0] for r in rows] == [e.key.split()[0] for e in totals]
    mm_row = next(r for r in avg.table(row_limit=-1).splitlines() if r.strip().startswith("aten::mm "))
    assert mm_row.split()[-1] == "6"
    shaped = prof.key_averages(group_by_input_shape=True).table(row_limit=-1)
    assert "Input Shapes" in shaped and "[[3, 4], [4, 5]]" in shaped
    with pytest.raises(ValueError):
        avg.table(sort_by="no_such_column")
    units = re.findall(r"\d\.\d{3}(s|ms|us)\b", avg.table(time_unit="us"))
    assert units and set(units) == {"us"}


def test_profile_memory_shows_allocations():
    big = flow.ones(256, 1024)  # 1 MiB of float32
    with profile(profile_memory=True) as prof:
        with record_function("alloc"):
            y = big + 1
        with record_function("free"):
            del y
            flow.ones(1)
    events = {e.name: e for e in prof.events()}
    assert events["aten::add"].cpu_memory_usage >= 1 << 20
    assert events["alloc"].cpu_memory_usage >= 1 << 20 and events["alloc"].self_cpu_memory_usage == 0
    assert events["free"].cpu_memory_usage <= -(1 << 19)
    with profile() as plain:
        big + 1
    assert all(e.cpu_memory_usage == 0 for e in plain.events())
    assert "CPU Mem" in prof.key_averages().table() and "CPU Mem" not in plain.key_averages().table()


def test_flops_and_shapes():
    a, b = flow.randn(8, 16), flow.randn(16, 4)
    with profile(with_flops=True) as prof:
        a @ b
        a * a
    events = {e.name: e for e in prof.events()}
    assert events["aten::mm"].flops == 2 * 8 * 16 * 4 and events["aten::mm"].input_shapes == [[8, 16], [16, 4]]
    assert events["aten::mul"].flops == 8 * 16
    assert "FLOPs" in prof.key_averages().table()


def test_with_stack_and_export_stacks(tmp_path):
    a = flow.ones(3)
    with profile(with_stack=True) as prof:
        a.exp()
    (exp,) = [e for e in prof.events() if e.name == "aten::exp"]
    assert "test_with_stack_and_export_stacks" in exp.stack[0] and __file__ in exp.stack[0]
    assert not any("oneflow/profiler" in s or "_dispatch.py" in s for s in exp.stack)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    line = path.read_text().splitlines()[0]
    frames, value = line.rsplit(" ", 1)
    assert frames.endswith("test_with_stack_and_export_stacks;aten::exp") and value.isdigit()
    grouped = prof.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in grouped
    with profile() as no_stack:
        a.exp()
    with pytest.raises(RuntimeError):
        no_stack.export_stacks(str(path))


def test_cuda_activity_is_accepted_with_a_warning():
    assert flow.profiler.supported_activities() == {ProfilerActivity.CPU}
    with pytest.warns(UserWarning, match="CPU"):
        p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with p:
        flow.ones(2).exp()
    assert [e.name for e in p.events()][-1] == "aten::exp"


# ---- the legacy API -----------------------------------------------------------------------------------------
def test_autograd_profiler_profile(leaves):
    from oneflow.autograd.profiler import EventList, FunctionEventAvg

    x, w = leaves
    with flow.autograd.profiler.profile(record_shapes=True) as prof:
        with flow.autograd.profiler.record_function("fwd"):
            y = (x @ w).sum()
        y.backward()
    assert isinstance(prof.function_events, EventList)
    assert isinstance(prof.key_averages()[0], FunctionEventAvg)
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.function_events))
    assert prof.total_average().count == len(prof.function_events)
    assert "aten::mm" in prof.key_averages().table() and "fwd" in str(prof)
    with flow.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    with pytest.raises(RuntimeError):
        off.function_events


def test_op_names_follow_aten():
    names = {o["name"]: o["traits"] for o in flow.list_ops()}
    wrong = [n for n, traits in names.items()
             if flow.profiler._op_names.namespace(n, traits) == "aten" and not hasattr(torch.ops.aten, n)]
    assert wrong == [], "registry ops shown as aten:: but unknown to ATen; add them to _op_names.ONEFLOW_ONLY"
    assert not [n for n in ONEFLOW_ONLY if hasattr(torch.ops.aten, n)]
