"""The text table of ``EventList.table()``, laid out as PyTorch's profiler prints it.

Columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then CPU Mem and Self CPU Mem when memory
was profiled, # of Calls, Input Shapes when events carry them, Source Location when they carry stacks, and
Total <unit>FLOPs when FLOPs were estimated. Percentages are shares of the summed self CPU time of all events.
"""
_COLUMN = 12
_SPACING = 2
_TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}
_FLOP_UNITS = ("", "K", "M", "G", "T", "P")


def format_time(us, unit=None):
    """``1.234ms``-style text for a duration in microseconds, in ``unit`` or the largest that keeps it >= 1."""
    if unit is None:
        unit = "s" if abs(us) >= 1e6 else "ms" if abs(us) >= 1e3 else "us"
    if unit not in _TIME_UNITS:
        raise ValueError(f"time_unit should be one of {list(_TIME_UNITS)}, got {unit!r}")
    return f"{us / _TIME_UNITS[unit]:.3f}{unit}"


def format_memory(nbytes):
    """``1.50 KB``-style text for a byte count (negative for net frees)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{int(nbytes)} B"


def _share(part, total):
    return f"{100.0 * part / total:.2f}%" if total else "0.00%"


def _flops_scale(events):
    """The unit prefix and multiplier that keep the largest FLOP count readable."""
    top = max((e.flops or 0 for e in events), default=0)
    k = 0
    while k + 1 < len(_FLOP_UNITS) and top >= 1000 ** (k + 1):
        k += 1
    return _FLOP_UNITS[k], 1.0 / 1000 ** k


def _clip(text, width):
    text = str(text)
    return text if len(text) <= width else text[:max(width - 3, 0)] + "..."


def build_table(events, *, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
                max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None,
                profile_memory=False, with_flops=False):
    """The table text (see the module docstring)."""
    events = list(events)
    # shares are of all events' time, also when only top-level ones are listed
    self_total = sum(e.self_cpu_time_total for e in events)
    if top_level_events_only:
        events = [e for e in events if e.cpu_parent is None]
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        if events and not hasattr(events[0], attr):
            raise ValueError(f"cannot sort by {sort_by!r}: events have no such attribute")
        events.sort(key=lambda e: getattr(e, attr), reverse=True)
    shown = events[:row_limit] if row_limit is not None and row_limit >= 0 else events

    has_shapes = any(e.input_shapes for e in events)
    has_stack = any(e.stack for e in events)
    name_w = min(max((len(e.key) for e in events), default=4) + 4, max_name_column_width)
    shapes_w = min(max((len(str(e.input_shapes)) for e in events), default=0) + 4, max_shapes_column_width)
    src_w = min(max((len(s) for e in events for s in (e.stack or ())), default=0) + 4, max_src_column_width)
    flop_prefix, flop_mult = _flops_scale(events)

    columns = [("Name", name_w), ("Self CPU %", _COLUMN), ("Self CPU", _COLUMN), ("CPU total %", _COLUMN),
               ("CPU total", _COLUMN), ("CPU time avg", _COLUMN)]
    if profile_memory:
        columns += [("CPU Mem", _COLUMN), ("Self CPU Mem", _COLUMN)]
    columns.append(("# of Calls", _COLUMN))
    if has_shapes:
        columns.append(("Input Shapes", shapes_w))
    if has_stack:
        columns.append(("Source Location", src_w))
    if with_flops:
        columns.append((f"Total {flop_prefix}FLOPs", _COLUMN))

    def line(cells):
        return "".join(_clip(c, w).rjust(w) + " " * _SPACING for c, (_, w) in zip(cells, columns)).rstrip() + "\n"

    rule = "".join("-" * w + " " * _SPACING for _, w in columns).rstrip() + "\n"
    out = []
    if header is not None:
        out += ["=" * len(rule.rstrip()) + "\n", header + "\n"]
    if top_level_events_only:
        out += ["=" * len(rule.rstrip()) + "\n", "This report only display top-level ops statistics\n"]
    out += [rule, line([c for c, _ in columns]), rule]
    for e in shown:
        cells = [_clip(e.key, name_w - _SPACING), _share(e.self_cpu_time_total, self_total),
                 format_time(e.self_cpu_time_total, time_unit), _share(e.cpu_time_total, self_total),
                 format_time(e.cpu_time_total, time_unit), format_time(e.cpu_time, time_unit)]
        if profile_memory:
            cells += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        if has_shapes:
            cells.append(_clip(e.input_shapes, shapes_w - _SPACING))
        stack = list(e.stack or ())
        if has_stack:
            cells.append(_clip(stack[0], src_w - _SPACING) if stack else "")
        if with_flops:
            cells.append(f"{e.flops * flop_mult:.3f}" if e.flops else "--")
        out.append(line(cells))
        for frame in stack[1:]:  # further frames on rows of their own, as PyTorch prints them
            pad = [""] * len(columns)
            pad[[n for n, _ in columns].index("Source Location")] = _clip(frame, src_w - _SPACING)
            out.append(line(pad))
    out.append(rule)
    out.append(f"Self CPU time total: {format_time(self_total, time_unit)}\n")
    return "".join(out)
