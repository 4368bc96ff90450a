"""The 1F1B pipeline schedule (PipeDream-Flush, as Megatron-LM runs it): each stage's order of forward and
backward micro-batch steps, and a simulation of it with unit step times that gives the makespan, the bubble
fraction and the largest number of micro-batches whose activations a stage holds at once."""


def one_f_one_b(stages, micro_batches):
    """Per stage, its steps in order: ``("F", j)`` / ``("B", j)`` for micro-batch ``j``. Stage ``i`` runs
    ``min(stages - i - 1, micro_batches)`` warm-up forwards, then alternates one forward and one backward, then
    drains the remaining backwards."""
    if stages < 1 or micro_batches < 1:
        raise ValueError(f"one_f_one_b: stages and micro_batches must be >= 1, got {stages} and {micro_batches}")
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


def simulate(orders, forward_time=1.0, backward_time=2.0):
    """Runs the schedule: a forward of micro-batch j on stage i waits for stage i-1's forward of j, a backward
    for stage i+1's backward of j, and each stage runs its steps in order. Returns
    ``{"makespan", "busy", "bubble_fraction", "max_in_flight": [per stage]}``."""
    stages = len(orders)
    done = {}  # (kind, stage, micro-batch) -> finish time
    clock = [0.0] * stages
    pos = [0] * stages
    in_flight, peak = [0] * stages, [0] * stages
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(stages):
            if pos[i] == len(orders[i]):
                continue
            kind, j = orders[i][pos[i]]
            dep = (("F", i - 1, j) if i > 0 else None) if kind == "F" else (("B", i + 1, j) if i < stages - 1
                                                                              else ("F", i, j))
            if dep is not None and dep not in done:
                continue
            start = max(clock[i], done.get(dep, 0.0))
            clock[i] = start + (forward_time if kind == "F" else backward_time)
            done[(kind, i, j)] = clock[i]
            in_flight[i] += 1 if kind == "F" else -1
            peak[i] = max(peak[i], in_flight[i])
            pos[i] += 1
            remaining -= 1
            progressed = True
        if not progressed:
            raise RuntimeError("simulate: the schedule deadlocks (a step waits for one that never runs)")
    micro = len(orders[0]) // 2
    makespan = max(clock)
    busy = micro * (forward_time + backward_time)
    return {"makespan": makespan, "busy": busy, "bubble_fraction": (makespan - busy) / makespan,
            "max_in_flight": peak}
