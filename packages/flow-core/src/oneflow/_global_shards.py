"""Shard makers for the creation functions' ``placement=``/``sbp=``: for a call, the logical shape and a function
that makes the block of it one rank holds (``ranges``: ``(start, stop)`` per dim; None: the whole tensor), so
that a split global tensor is made shard by shard and no rank allocates or computes the whole tensor.

Random creations fill their block with the random kernels' ``shard`` attribute: the block gets the values the
whole tensor has at its positions and the generator advances by what the whole tensor uses, so the values, and
every later draw, equal a single process's with the same seed.
"""
from . import _C


def _local(shape, ranges):
    return list(shape) if ranges is None else [b - a for a, b in ranges]


def _shard_attr(shape, ranges):
    return None if ranges is None else [*shape, *(a for a, _ in ranges)]


def _filled(fn, args, kw):
    # empty, zeros, ones: fn(*size, ..., **named); size may come as size=
    from ._ops.creation import _kw_size

    if kw.get("out") is not None:
        return None
    kw = dict(kw)
    shape = _kw_size(args, kw.pop("size", None), fn.__name__)
    return shape, lambda ranges: fn(_local(shape, ranges), **kw)


def _full(fn, args, kw):
    import inspect

    from ._ops.creation import _sequence_arg, _shape

    bound = inspect.signature(fn).bind(*args, **kw)
    if bound.arguments.get("out") is not None:
        return None
    named = dict(bound.arguments)
    shape = _shape((_sequence_arg(named.pop("size"), "full", "size", 1),), "full")
    return shape, lambda ranges: fn(_local(shape, ranges), **named)


def _drawn(op, fill, shape, ranges, dtype, device, generator, *attrs):
    """A ``dtype`` block of ``shape`` filled in place by the random op ``fill`` (uniform_, normal_, random_)."""
    from ._ops.creation import _device
    from ._ops.creation_random import _gen

    t = _C._empty(_local(shape, ranges), dtype, _device(device))
    getattr(_C.ops, fill)(t, *attrs, generator=_gen(generator, op), shard=_shard_attr(shape, ranges))
    return t


def _unit(fill, *attrs):
    def plan(fn, args, kw):  # rand, randn: fn(*size, generator=, dtype=, device=, ..., **kw)
        from ._ops.creation import _kw_size, _reject

        kw = dict(kw)
        if kw.pop("out", None) is not None:
            return None
        gen, dtype, device = kw.pop("generator", None), kw.pop("dtype", None), kw.pop("device", None)
        for k in ("layout", "pin_memory"):
            kw.pop(k, None)
        shape = _kw_size(args, kw.pop("size", None), fn.__name__)
        _reject(kw, fn.__name__)
        dtype = dtype or _C.get_default_dtype()
        return shape, lambda ranges: _drawn(fn.__name__, fill, shape, ranges, dtype, device, gen, *attrs)

    return plan


def _named(kw):
    """The keyword-only arguments of randint/normal that the shard makers use (out is None: checked)."""
    out = {k: kw.pop(k, None) for k in ("generator", "dtype", "device", "out", "layout", "pin_memory")}
    return None if out["out"] is not None else out


def _randint(fn, args, kw):
    from ._ops.creation import _shape
    from ._ops.creation_random import _randint_args

    kw = dict(kw)
    named = _named(kw)
    if named is None:
        return None
    low, high, size = _randint_args(args, kw)
    shape, dtype = _shape((size,), "randint"), named["dtype"] or _C.int64
    return shape, lambda ranges: _drawn("randint", "random_", shape, ranges, dtype, named["device"],
                                        named["generator"], low, high)


def _normal(fn, args, kw):
    import builtins
    import inspect

    from ._ops.creation import _shape

    bound = inspect.signature(fn).bind(*args, **kw)
    bound.apply_defaults()
    a = bound.arguments
    if a["out"] is not None or a["size"] is None or any(isinstance(a[k], _C.TensorBase) for k in ("mean", "std")):
        return None  # tensor mean/std: the whole-tensor path
    shape, dtype = _shape((a["size"],), "normal"), a["dtype"] or _C.get_default_dtype()
    mean, std = builtins.float(a["mean"]), builtins.float(a["std"])
    return shape, lambda ranges: _drawn("normal", "normal_", shape, ranges, dtype, a["device"], a["generator"],
                                        mean, std)


def _block_attr(ranges):
    """The creation ops' ``shard`` attribute: ``[start0, stop0, start1, stop1, ...]`` (None: the whole)."""
    return None if ranges is None else [i for r in ranges for i in r]


def _bound(fn, args, kw):
    import inspect

    bound = inspect.signature(fn).bind(*args, **kw)
    if bound.arguments.get("out") is not None:
        return None
    return bound.arguments


def _ranged(fn, args, kw):
    """arange, linspace, logspace: the block is computed by the op's own formula at its logical indices, so it
    holds exactly the whole result's values there."""
    import inspect

    from ._ops import ranges as _ranges
    from ._ops._creation_args import _UNSET

    a = _bound(fn, args, kw)
    if a is None:
        return None
    shape = list(fn(*args, **dict(kw, device="meta")).shape)  # checks the arguments, allocates nothing
    sig = inspect.signature(fn).parameters
    v = {k: a.get(k, sig[k].default) for k in ("start", "end", "steps", "step", "base") if k in sig}
    dtype, device = a.get("dtype"), a.get("device")
    if fn.__name__ == "arange":
        start, end = (0, v["start"]) if v["end"] is _UNSET else (v["start"], v["end"])
        return shape, lambda ranges: _ranges.arange_block(start, end, v["step"], dtype, device, _block_attr(ranges))
    block = getattr(_ranges, fn.__name__ + "_block")
    pos = [v[k] for k in ("start", "end", "steps", "base") if k in v]
    return shape, lambda ranges: block(*pos, dtype, device, _block_attr(ranges))


def _eye(fn, args, kw):
    a = _bound(fn, args, kw)
    if a is None:
        return None
    from ._ops.creation import _device

    n, m, dtype = a["n"], a.get("m"), a.get("dtype")
    shape = list(_C.ops.eye(n, m, dtype=dtype, device="meta").shape)
    return shape, lambda ranges: _C.ops.eye(n, m, dtype=dtype, device=_device(a.get("device")),
                                            shard=_block_attr(ranges))


def _randperm(fn, args, kw):
    # A permutation's every entry depends on all of the Fisher-Yates draws before it, so each rank computes the
    # whole permutation as a single process would (n int64s, freed at once) and keeps only its shard; the
    # generator advances as a single process's does.
    kw = dict(kw)
    if kw.get("out") is not None:
        return None
    n = args[0] if args else kw.pop("n")

    def make(ranges):
        whole = fn(n, *args[1:], **kw)
        if ranges is None:
            return whole
        (a, b), = ranges
        return _C.ops.clone(whole[a:b])

    return [int(n)], make


def _tensor(fn, args, kw):
    # tensor(data, placement=, sbp=): the host data is sliced per rank before any tensor is made
    from ._ops.tensor_data import shard_of_data

    if len(args) != 1:
        return None
    if fn.__name__ == "tensor" and isinstance(args[0], _C.TensorBase):
        import warnings

        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "oneflow.tensor(sourceTensor).", UserWarning, stacklevel=4)
    shape, make = shard_of_data(args[0], kw.get("dtype"))
    return shape, lambda ranges: _C.ops.lift_fresh(make(tuple(slice(a, b) for a, b in ranges) if ranges else None))


# the creation function's name -> its shard maker: (fn, args, kw) -> (shape, make(ranges)), or None for the
# whole-tensor path
MAKERS = {"empty": _filled, "zeros": _filled, "ones": _filled, "full": _full, "rand": _unit("uniform_", 0.0, 1.0),
          "randn": _unit("normal_", 0.0, 1.0), "randint": _randint, "normal": _normal,
          "arange": _ranged, "linspace": _ranged, "logspace": _ranged, "eye": _eye,
          "randperm": _randperm, "tensor": _tensor, "as_tensor": _tensor}
