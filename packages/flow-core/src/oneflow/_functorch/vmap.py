"""``vmap`` (PyTorch's ``torch.vmap`` / ``torch.func.vmap``) as a per-sample loop.

This is not a batching-rule transform: the function runs once per batch element on slices of the batched
inputs, and the results are stacked along ``out_dims``. Values and gradients match a real vmap; what differs:

* cost grows with the batch size (no vectorisation), and ``chunk_size`` only partitions the loop;
* the function may do things a batching transform refuses (``.item()``, data-dependent Python control flow,
  outputs whose shape depends on the values, as long as they can be stacked);
* a batch of size 0 runs the function once on zero-filled slices, only to learn the outputs' shapes;
* ``out_dims=None`` is accepted for an output that is equal for every batch element (torch instead asks that it
  does not depend on the batched inputs).

In-place ops on the slices write through to the batched inputs, as they do under torch's vmap. With the default
``randomness='error'`` every op inside goes through a Python dispatch mode that looks for random ops, which costs
a little per op; 'different' and 'same' do without it.
"""
import functools

from .. import _C
from .._ops.binary import equal
from .._ops.index import stack
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_map, tree_unflatten
from .randomness import SameDraws, check_randomness_arg, guard

__all__ = ["vmap"]


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return

    def check(d):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             "a python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")

    tree_map(check, out_dims)


def _process_inputs(in_dims, args, func):
    """(batch size, flat in_dims with negatives resolved, flat args, args' TreeSpec), validated as torch does."""
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but in_dim "
                             "must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, _C.TensorBase):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None "
                             "as the respective in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_in_dims[i] = d % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _slice(arg, d, b):
    """Batch element b of ``arg`` (a view, so in-place ops reach the input)."""
    return arg if d is None else arg.select(d, b)


def _zero_slice(arg, d):
    """A zero-filled stand-in for an element of an empty batch."""
    if d is None:
        return arg
    shape = tuple(arg.shape[:d]) + tuple(arg.shape[d + 1:])
    return arg.new_zeros(shape)


def _flat_out_dims(out_dims, first, out_spec, func):
    def incompatible():
        raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                         f"with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {out_spec}.")

    if isinstance(first, _C.TensorBase):  # a lone tensor also takes a one-element out_dims tuple, as in torch
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = _broadcast_to_and_flatten(out_dims, out_spec)
    if flat is None:
        incompatible()
    return flat


def _same_for_all(values):
    first = values[0]
    for v in values[1:]:
        if v is first:
            continue
        if isinstance(first, _C.TensorBase) and isinstance(v, _C.TensorBase):
            if tuple(v.shape) != tuple(first.shape) or not bool(equal(v.detach(), first.detach())):
                return False
        elif isinstance(first, _C.TensorBase) or isinstance(v, _C.TensorBase) or not v == first:
            return False
    return True


def _combine(outputs, out_dims, func, batch_size):
    """Stacks the per-element outputs along their out_dims (an empty batch along a size-0 dim)."""
    name = _get_name(func)
    flats = [tree_flatten(o) for o in outputs]
    out_spec = flats[0][1]
    if any(spec != out_spec for _, spec in flats[1:]):
        raise RuntimeError(f"vmap({name}, ...): `{name}` returned outputs of different structures for different "
                           "batch elements")
    flat_out_dims = _flat_out_dims(out_dims, outputs[0], out_spec, func)
    combined = []
    for i, d in enumerate(flat_out_dims):
        values = [flat[i] for flat, _ in flats]
        if d is None:
            if isinstance(values[0], _C.TensorBase) and not _same_for_all(values):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            combined.append(values[0])
            continue
        if not all(isinstance(v, _C.TensorBase) for v in values):
            bad = next(v for v in values if not isinstance(v, _C.TensorBase))
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(bad)}. Did you "
                             "mean to set out_dims= to None for output?")
        stacked = stack(values, d)
        combined.append(stacked if batch_size else stacked.narrow(d, 0, 0))
    return tree_unflatten(combined, out_spec)


def _vmap_impl(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    _check_out_dims(out_dims, func)
    batch_size, flat_in_dims, flat_args, args_spec = _process_inputs(in_dims, args, func)
    same = SameDraws(randomness)
    outputs = []
    with guard(randomness):
        if batch_size == 0:
            sample = [_zero_slice(a, d) for a, d in zip(flat_args, flat_in_dims)]
            outputs.append(func(*tree_unflatten(sample, args_spec), **kwargs))
        step = chunk_size or batch_size or 1
        for start in range(0, batch_size, step):  # chunks only group the loop; each element runs on its own
            for b in range(start, min(start + step, batch_size)):
                same.rewind()
                sample = [_slice(a, d, b) for a, d in zip(flat_args, flat_in_dims)]
                outputs.append(func(*tree_unflatten(sample, args_spec), **kwargs))
    return _combine(outputs, out_dims, func, batch_size)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Returns a function that maps ``func`` over a dimension of its inputs and stacks the results.

    Args:
        func: a Python function of tensors (pytrees of them; other values pass through with in_dim None).
        in_dims (int or tuple): which dimension of each input is the batch; a tuple matches the positional
            arguments (nested to match pytrees), None means "not batched; pass to every call". Default 0.
        out_dims (int, None or tuple): where the batch dimension goes in each output; None for an output that is
            the same for every element. Default 0.
        randomness (str): 'error' (random ops inside ``func`` raise), 'different' (each element draws anew) or
            'same' (every element sees the same draws).
        chunk_size (int, optional): the number of elements per chunk in torch; accepted and validated (> 0). This
            vmap is a per-sample loop (see the module docstring), so it does not change results.

    Keyword arguments of the returned function are passed to every call, unbatched.
    """
    check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_impl(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapped
