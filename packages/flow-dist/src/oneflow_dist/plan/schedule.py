"""Pipeline schedules: each stage's order of forward and backward micro-batch steps, and a simulation of it that
gives the makespan, the bubble fraction and how many micro-batches a stage holds at once.

:func:`one_f_one_b` is 1F1B (PipeDream-Flush, as Megatron-LM runs it), each backward one step ``("B", j)``.
:func:`zero_bubble_h1` is ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism"): the backward split into ``B``
(the input gradient, which the previous stage waits for) and ``W`` (the weight gradients, which nobody waits
for), the ``W`` steps run later to fill the time a stage would wait."""


def _check(name, stages, micro_batches):
    if stages < 1 or micro_batches < 1:
        raise ValueError(f"{name}: stages and micro_batches must be >= 1, got {stages} and {micro_batches}")


def one_f_one_b(stages, micro_batches):
    """Per stage, its steps in order: ``("F", j)`` / ``("B", j)`` for micro-batch ``j``. Stage ``i`` runs
    ``min(stages - i - 1, micro_batches)`` warm-up forwards, then alternates one forward and one backward, then
    drains the remaining backwards."""
    _check("one_f_one_b", stages, micro_batches)
    orders = []
    for i in range(stages):
        warm = min(stages - i - 1, micro_batches)
        order = [("F", j) for j in range(warm)]
        f, b = warm, 0
        while f < micro_batches:
            order.append(("F", f))
            f += 1
            order.append(("B", b))
            b += 1
        order += [("B", j) for j in range(b, micro_batches)]
        orders.append(order)
    return orders


def zero_bubble_h1(stages, micro_batches):
    """ZB-H1: per stage, its steps in order, ``("F", j)``, ``("B", j)`` (input gradient) and ``("W", j)``
    (weight gradients) for micro-batch ``j``.

    The forwards and input-gradient backwards are 1F1B's order (so a stage holds the activations of as many
    micro-batches between their ``F`` and ``B`` as under 1F1B: ``min(stages - i, micro_batches)`` on stage
    ``i``), and stage ``i`` runs micro-batch ``j``'s ``W`` after its ``B`` of micro-batch ``j + i``: the later
    stages, which 1F1B leaves holding fewer micro-batches, keep up to ``i`` weight-gradient steps waiting, and
    the ``B`` steps of the drain run back to back down the stages with the ``W`` steps filling what was 1F1B's
    bubble. With every step of the same length the bubble is ``(stages - 1) * (F + B - W)`` of the makespan,
    a third of 1F1B's ``(stages - 1) * (F + B + W)``."""
    _check("zero_bubble_h1", stages, micro_batches)
    orders = []
    for i, base in enumerate(one_f_one_b(stages, micro_batches)):
        order, w = [], 0
        for step in base:
            order.append(step)
            if step[0] == "B" and step[1] - i >= w:
                order.append(("W", w))
                w += 1
        order += [("W", j) for j in range(w, micro_batches)]
        orders.append(order)
    return orders


def zero_bubble_h1_bubble(stages, micro_batches, forward_time=1.0, backward_time=1.0, weight_time=1.0):
    """The bubble fraction the ZB-H1 paper gives: idle ``(p - 1) * (F + B - W)`` per stage over a makespan of
    ``m * (F + B + W)`` plus that (for ``W <= F + B``, steps of the same length on every stage)."""
    idle = (stages - 1) * (forward_time + backward_time - weight_time)
    return idle / (micro_batches * (forward_time + backward_time + weight_time) + idle)


def simulate(orders, forward_time=1.0, backward_time=2.0, weight_time=0.0):
    """Runs the schedule: a forward of micro-batch j on stage i waits for stage i-1's forward of j, a backward
    (``B``) for stage i+1's backward of j (the last stage: its own forward of j), a weight-gradient step
    (``W``) for the stage's own backward of j, and each stage runs its steps in order. ``backward_time`` is a
    ``B`` step, ``weight_time`` a ``W`` step; in a schedule without ``W`` steps (1F1B) each ``B`` step runs the
    whole backward, ``backward_time + weight_time``. Returns ``{"makespan", "busy", "bubble_fraction",
    "max_in_flight", "max_unfinished"}``: per stage, the most micro-batches between their ``F`` and ``B`` at
    once (the activations the backward reads), and between their ``F`` and their last backward step (``W``
    when there is one: what the weight gradients still read). Raises RuntimeError when a stage's step waits
    for one that never runs, and ValueError for an unknown step kind or a stage whose steps are not each
    micro-batch's once."""
    stages = len(orders)
    split = any(k == "W" for o in orders for k, _ in o)
    kinds = ("F", "B", "W") if split else ("F", "B")
    micro = sum(1 for k, _ in orders[0] if k == "F")
    for i, o in enumerate(orders):
        if sorted(o) != sorted((k, j) for k in kinds for j in range(micro)):
            raise ValueError(f"simulate: stage {i}'s steps must be each of {kinds} once for micro-batches 0 .. "
                             f"{micro - 1}, got {o}")
    length = {"F": forward_time, "B": backward_time if split else backward_time + weight_time, "W": weight_time}
    done = {}  # (kind, stage, micro-batch) -> finish time
    clock = [0.0] * stages
    pos = [0] * stages
    in_flight, unfinished = [0] * stages, [0] * stages
    peak, peak_unfinished = [0] * stages, [0] * stages
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(stages):
            if pos[i] == len(orders[i]):
                continue
            kind, j = orders[i][pos[i]]
            if kind == "F":
                dep = ("F", i - 1, j) if i > 0 else None
            elif kind == "B":
                dep = ("B", i + 1, j) if i < stages - 1 else ("F", i, j)
            else:
                dep = ("B", i, j)
            if dep is not None and dep not in done:
                continue
            start = max(clock[i], done.get(dep, 0.0))
            clock[i] = start + length[kind]
            done[(kind, i, j)] = clock[i]
            in_flight[i] += {"F": 1, "B": -1, "W": 0}[kind]
            unfinished[i] += 1 if kind == "F" else -1 if kind == kinds[-1] else 0
            peak[i] = max(peak[i], in_flight[i])
            peak_unfinished[i] = max(peak_unfinished[i], unfinished[i])
            pos[i] += 1
            remaining -= 1
            progressed = True
        if not progressed:
            raise RuntimeError("simulate: the schedule deadlocks (a step waits for one that never runs)")
    makespan = max(clock)
    busy = micro * (forward_time + backward_time + weight_time)
    return {"makespan": makespan, "busy": busy, "bubble_fraction": (makespan - busy) / makespan,
            "max_in_flight": peak, "max_unfinished": peak_unfinished}
