"""clamp / clip / clamp_min / clamp_max with tensor bounds (PyTorch's ``clamp.Tensor`` overloads). Number
bounds (and 0-dim tensor bounds that need no gradient) go straight to the registry's scalar-bounded ops; a
dimensioned bound, or one that requires grad, is broadcast against the input and applied with ``where``, which
gives PyTorch's gradients: the input gets them where it lies within the bounds, a bound where it is the value
taken (at a tie, the input)."""
from .. import _C

ops = _C.ops

__all__ = ["clamp", "clip", "clamp_min", "clamp_max"]


def _tensor_bound(b):
    return isinstance(b, _C.TensorBase) and (b.dim() > 0 or b.requires_grad)


def _clamp_by_tensors(input, lo, hi):
    import oneflow as flow

    # one promotion over all three, as torch's clamp.Tensor (a 0-dim bound does not outrank the input)
    dtype = _C._result_type([input] + [b for b in (lo, hi) if b is not None])
    r = input.to(dtype)

    def bound(b):
        return b.to(dtype) if isinstance(b, _C.TensorBase) else flow.tensor(b, dtype=dtype)

    # a NaN bound gives NaN, as in PyTorch: comparisons with it are false, so it is tested for explicitly
    if lo is not None:
        lo = bound(lo)
        r = flow.where(flow.logical_or(r < lo, flow.isnan(lo)), lo, r)
    if hi is not None:
        hi = bound(hi)
        r = flow.where(flow.logical_or(r > hi, flow.isnan(hi)), hi, r)
    return r


def _dispatch(name, input, lo, hi, out=None):
    if lo is None and hi is None:
        raise RuntimeError(f"{name}: At least one of 'min' or 'max' must not be None")
    if not (_tensor_bound(lo) or _tensor_bound(hi)):
        kw = {} if out is None else {"out": out}
        if name == "clamp_min":
            return ops.clamp_min(input, lo, **kw)
        if name == "clamp_max":
            return ops.clamp_max(input, hi, **kw)
        return getattr(ops, name)(input, lo, hi, **kw)
    r = _clamp_by_tensors(input, lo, hi)
    if out is not None:
        return out.copy_(r)
    return r


def _inplace(name, self, lo, hi):
    import oneflow as flow

    if not (_tensor_bound(lo) or _tensor_bound(hi)):
        if name == "clamp_min":
            return ops.clamp_min_(self, lo)
        if name == "clamp_max":
            return ops.clamp_max_(self, hi)
        return getattr(ops, name + "_")(self, lo, hi)
    r = _clamp_by_tensors(self, lo, hi)
    if not flow.can_cast(r.dtype, self.dtype):
        raise RuntimeError(f"result type {_type_name(r.dtype)} can't be cast to the desired output type "
                           f"{_type_name(self.dtype)}")
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(r.shape)}")
    return self.copy_(r)


def _type_name(dtype):
    from ._names import torch_dtype_name

    return torch_dtype_name(dtype)


def clamp(input, min=None, max=None, *, out=None):
    """Clamps ``input`` into ``[min, max]`` elementwise; ``min``/``max`` may be numbers or tensors that
    broadcast against ``input``. Where ``min > max`` the result is ``max``; a NaN bound gives NaN."""
    return _dispatch("clamp", input, min, max, out)


def clip(input, min=None, max=None, *, out=None):
    """Alias of :func:`clamp`."""
    return _dispatch("clip", input, min, max, out)


def clamp_min(input, min, *, out=None):
    """``clamp(input, min=min)``."""
    return _dispatch("clamp_min", input, min, None, out)


def clamp_max(input, max, *, out=None):
    """``clamp(input, max=max)``."""
    return _dispatch("clamp_max", input, None, max, out)


TENSOR_METHODS = {
    "clamp": lambda self, min=None, max=None: _dispatch("clamp", self, min, max),
    "clip": lambda self, min=None, max=None: _dispatch("clip", self, min, max),
    "clamp_min": lambda self, min: _dispatch("clamp_min", self, min, None),
    "clamp_max": lambda self, max: _dispatch("clamp_max", self, None, max),
    "clamp_": lambda self, min=None, max=None: _inplace("clamp", self, min, max),
    "clip_": lambda self, min=None, max=None: _inplace("clip", self, min, max),
    "clamp_min_": lambda self, min: _inplace("clamp_min", self, min, None),
    "clamp_max_": lambda self, max: _inplace("clamp_max", self, None, max),
}
