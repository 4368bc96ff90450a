"""What the passes may assume about an op, read from the registry's traits and schema.

An op is *pure* when its outputs depend only on its inputs and attributes and it writes none of its inputs: such
ops may be removed when unused, merged when repeated and evaluated at compile time. In-place ops, optimizer
updates and batch norm in training (which updates its running statistics) write their inputs; random ops read
and advance the generator, so removing or merging them would change every later random number.
"""
_traits = {}

# Ops that read and write state outside their inputs: flow-embedding's lookup reads its store's rows (which the
# sparse update op changes between calls) and inserts the rows it has not seen. Folding one at compile time,
# merging two, recomputing one for checkpointing or dropping an unused one would change what the store holds.
EXTERNAL_STATE = frozenset({"one_embedding_lookup"})


def traits(op):
    t = _traits.get(op.name)
    if t is None:
        t = _traits[op.name] = frozenset(op.traits)
    return t


def is_random(op):
    return "random" in traits(op)


def _updates_running_stats(op, attrs):
    return op.name == "native_batch_norm" and bool(attrs.get("training"))


def has_side_effects(op):
    """Whether the op talks to the outside (the ``side_effect`` trait: collectives, custom ops declared so):
    it must run where the program issued it, once, even when nothing reads its result."""
    return "side_effect" in traits(op)


def mutated_inputs(op, inputs, attrs):
    """Positions in ``inputs`` (the flat tensor list the dispatcher passes) whose memory ``op`` writes."""
    t = traits(op)
    if "optimizer" in t:
        # every list but the gradients and the lr is updated: parameters and their state
        from oneflow._dispatch import split_inputs

        groups = split_inputs(op, inputs, attrs)
        out, pos = [], 0
        for name, group in groups.items():
            n = len(group) if isinstance(group, list) else 1
            if name not in ("grads", "lr"):
                out.extend(range(pos, pos + n))
            pos += n
        return [i for i in out if inputs[i] is not None]
    if op.is_inplace or op.name.endswith("_"):
        return [0] if inputs and inputs[0] is not None else []
    if _updates_running_stats(op, attrs):
        return [i for i in (3, 4) if len(inputs) > i and inputs[i] is not None]
    return []


def is_effectful(op, attrs):
    """Whether the op must run even when nothing reads its outputs (it writes memory or uses the generator)."""
    t = traits(op)
    # "side_effect": ops that talk to the outside (flow-dist's collectives, oneflow.library custom ops)
    return (op.is_inplace or op.name.endswith("_") or "optimizer" in t or "random" in t or "side_effect" in t
            or op.name in EXTERNAL_STATE or _updates_running_stats(op, attrs))


# Ops whose output is new, uninitialised memory: two of them are never the same value.
FRESH_MEMORY = frozenset({"empty", "empty_strided"})


def is_pure(op, attrs):
    return not is_effectful(op, attrs) and op.name not in FRESH_MEMORY


def is_view(op):
    return "view" in traits(op)


# Ops that read only the shape, dtype and device of their tensor input (``fill`` makes a tensor like ``self``):
# with static shapes their result is a constant.
METADATA_ONLY = frozenset({"fill"})
