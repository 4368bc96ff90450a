"""Random creation ops and in-place random fills (kernels in ops/random.cpp).

Every function takes ``generator=`` (a ``oneflow.Generator``; the default generator when None). The C++ ops
receive the generator as its integer handle (``Generator._handle``) in their ``generator`` attribute.
"""
import builtins
import importlib

from .. import _C, _global_creation
from ._names import torch_dtype_name
from .creation import _device, _finish, _kw_size, _reject, _shape

_random = importlib.import_module("oneflow.random")  # sets oneflow.random to the module, over the "random" op
manual_seed = _random.manual_seed
seed = _random.seed
initial_seed = _random.initial_seed
get_rng_state = _random.get_rng_state
set_rng_state = _random.set_rng_state
Generator = _C.Generator
default_generator = _C.default_generator
random = _random

__all__ = ["rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like",
           "randn_like", "randint_like", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "Generator", "default_generator", "random"]


def _gen(generator, op):
    """The generator's handle for the op's `generator` attribute (None: the default generator)."""
    if generator is None:
        return None
    if not isinstance(generator, _C.Generator):
        raise TypeError(f"{op}(): argument 'generator' must be oneflow.Generator, not {type(generator).__name__}")
    return generator._handle


def _float_dtype(dtype, op):
    return dtype or _C.get_default_dtype()


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False, **kw):
    """Uniform samples from [0, 1) of the given size (default float dtype)."""
    if kw and _global_creation.requested(kw):  # placement=/sbp=: a global tensor (flow-dist)
        return _global_creation.make_global(rand, size, dict(
            kw, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad, out=out, layout=layout,
            pin_memory=pin_memory))
    shape = _kw_size(size, kw.pop("size", None), "rand")
    _reject(kw, "rand")
    t = _C._empty(shape, _float_dtype(dtype, "rand"), _device(device))
    _C.ops.uniform_(t, 0.0, 1.0, generator=_gen(generator, "rand"))
    return _finish(t, requires_grad, out)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False, **kw):
    """Standard normal samples of the given size (default float dtype)."""
    if kw and _global_creation.requested(kw):  # placement=/sbp=: a global tensor (flow-dist)
        return _global_creation.make_global(randn, size, dict(
            kw, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad, out=out, layout=layout,
            pin_memory=pin_memory))
    shape = _kw_size(size, kw.pop("size", None), "randn")
    _reject(kw, "randn")
    t = _C._empty(shape, _float_dtype(dtype, "randn"), _device(device))
    _C.ops.normal_(t, 0.0, 1.0, generator=_gen(generator, "randn"))
    return _finish(t, requires_grad, out)


def _int(v, op, name):
    if isinstance(v, _C.TensorBase):
        v = v.item()
    if isinstance(v, builtins.float):
        if v != int(v):
            raise TypeError(f"{op}(): argument '{name}' must be int, not float")
        v = int(v)
    return v.__index__()


def randint(*args, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
            pin_memory=False, **kw):
    """Integers uniformly from [low, high): ``randint(high, size)`` or ``randint(low, high, size)`` (int64)."""
    low, high, size = _randint_args(args, kw)
    t = _C._empty(_shape((size,), "randint"), dtype or _C.int64, _device(device))
    _C.ops.random_(t, low, high, generator=_gen(generator, "randint"))
    return _finish(t, requires_grad, out)


def _randint_args(args, kw):
    """``(low, high, size)`` of a randint call's positional ``args`` and extra keywords ``kw``."""
    low = kw.pop("low", None)
    high = kw.pop("high", None)
    size = kw.pop("size", None)
    _reject(kw, "randint")
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint() received an invalid combination of arguments: expected (low, high, size) or "
                        "(high, size)")
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: expected randint(low=0, high, size)")
    low = 0 if low is None else _int(low, "randint", "low")
    return low, _int(high, "randint", "high"), size


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    """A random permutation of 0..n-1 (int64 unless ``dtype``)."""
    t = _C.ops.randperm(n, dtype=dtype, generator=_gen(generator, "randperm"), device=_device(device))
    return _finish(t, requires_grad, out)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              generator=None):
    """Uniform [0, 1) samples shaped (and, by default, strided) like ``input``."""
    t = rand(list(input.shape), dtype=dtype or input.dtype, device=device or input.device, generator=generator)
    return _like_finish(input, t, memory_format, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               generator=None):
    """Standard normal samples shaped (and, by default, strided) like ``input``."""
    t = randn(list(input.shape), dtype=dtype or input.dtype, device=device or input.device, generator=generator)
    return _like_finish(input, t, memory_format, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, memory_format=None,
                 layout=None, generator=None):
    """Integers from [low, high) shaped like ``input`` (its dtype unless ``dtype``); ``randint_like(input, high)``."""
    if high is None:
        low, high = 0, low
    t = randint(low, high, list(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                generator=generator)
    return _like_finish(input, t, memory_format, requires_grad)


def _like_finish(input, t, memory_format, requires_grad):
    from .creation import like_layout

    t = like_layout(input, t, memory_format)
    return t.requires_grad_() if requires_grad else t


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False, layout=None, pin_memory=False):
    """Normal samples: ``normal(mean_tensor, std_tensor)``, ``normal(mean_tensor, std=1.0)``,
    ``normal(mean, std_tensor)`` (shape of the broadcast tensors) or ``normal(mean, std, size)``."""
    handle = _gen(generator, "normal")
    mt, st = isinstance(mean, _C.TensorBase), isinstance(std, _C.TensorBase)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with float mean and std, "
                            "size is required")
        t = _C._empty(_shape((size,), "normal"), dtype or _C.get_default_dtype(), _device(device))
        _C.ops.normal_(t, builtins.float(mean), builtins.float(std), generator=handle)
        return _finish(t, requires_grad, out)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments: size is only allowed with float "
                        "mean and std")
    # the registry op checks dtypes, broadcasting and std >= 0, and samples
    r = _C.ops._normal_tensor(mean if mt else builtins.float(mean), std if st else builtins.float(std),
                              generator=handle)
    return _finish(r, False, out)


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (or ``p`` when given), same dtype and shape as ``input``."""
    if isinstance(p, _C.TensorBase):
        return _finish(_C.ops.bernoulli(p.expand(list(input.shape)), generator=_gen(generator, "bernoulli")),
                       False, out)
    r = _C.ops.bernoulli(input, p, generator=_gen(generator, "bernoulli"))
    return _finish(r, False, out)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``num_samples`` category indices per row of ``input`` (1-D or 2-D non-negative weights, not
    necessarily normalised), drawn with or without replacement; int64, shape ``(num_samples,)`` or
    ``(rows, num_samples)``.

    With replacement: the inverse CDF of uniform draws (a zero-weight category is never drawn). Without:
    the exponential race (the smallest ``-log(1 - u) / w`` win), which gives the sequential draw
    distribution; once the positive weights are used up, zero-weight categories follow, as in PyTorch.
    """
    import oneflow as flow

    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{torch_dtype_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    w = input.detach().reshape(-1, n).to(flow.float64)
    if not bool(((w >= 0) & flow.isfinite(w)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((w.sum(-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = w.shape[0]
    if replacement:
        cdf = w.cumsum(-1)
        u = rand(rows, num_samples, generator=generator, dtype=flow.float64) * cdf[:, -1:]
        idx = flow.searchsorted(cdf, u, right=True)
        # u * total can round up to the total: stay on the last category with weight
        last = (n - 1) - (w > 0).flip(-1).to(flow.int64).argmax(-1, keepdim=True)
        idx = flow.minimum(idx, last)
    else:
        u = rand(rows, n, generator=generator, dtype=flow.float64)
        idx = flow.topk(-flow.log1p(-u) / w, num_samples, dim=-1, largest=False).indices
    if input.dim() == 1:
        idx = idx.reshape(num_samples)
    return _finish(idx, False, out)


# ---- in-place fills on tensors ---------------------------------------------------------------------------
def _uniform_(self, *args, generator=None, **kw):
    """Fills with uniform samples from [from, to) (defaults 0, 1)."""
    frm = kw.pop("from", args[0] if len(args) > 0 else 0.0)
    to = kw.pop("to", args[1] if len(args) > 1 else 1.0)
    _reject(kw, "uniform_")
    return _C.ops.uniform_(self, frm, to, generator=_gen(generator, "uniform_"))


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fills with normal samples N(mean, std^2)."""
    return _C.ops.normal_(self, mean, std, generator=_gen(generator, "normal_"))


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fills with exponential samples of rate ``lambd``."""
    return _C.ops.exponential_(self, lambd, generator=_gen(generator, "exponential_"))


def _random_(self, *args, generator=None, **kw):
    """``random_()``: integers over the dtype's range; ``random_(to)``: [0, to); ``random_(from, to)``."""
    if len(args) > 2:
        raise TypeError("random_() takes at most 2 positional arguments")
    to_given = "to" in kw
    frm = kw.pop("from", None)
    to = kw.pop("to", None)
    _reject(kw, "random_")
    if len(args) == 1:
        if frm is None and not to_given:
            frm, to = 0, args[0]
        else:
            frm = args[0]
    elif len(args) == 2:
        frm, to = args
    return _C.ops.random_(self, frm, to, generator=_gen(generator, "random_"))


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fills with 0/1 samples of probability ``p`` (a float or a tensor broadcastable to self)."""
    h = _gen(generator, "bernoulli_")
    if isinstance(p, _C.TensorBase):
        return _C.ops.copy_(self, _C.ops.bernoulli(p.expand(list(self.shape)), generator=h))
    return _C.ops.bernoulli_(self, builtins.float(p), generator=h)


def _bernoulli(self, p=None, *, generator=None):
    """bernoulli(p=None, *, generator=None) -> Tensor

    0/1 samples shaped like ``self``: each 1 with probability ``p``, or with the probability in ``self`` when
    ``p`` is None (see :func:`oneflow.bernoulli`)."""
    return bernoulli(self, p, generator=generator)


TENSOR_METHODS = {"uniform_": _uniform_, "normal_": _normal_, "exponential_": _exponential_, "random_": _random_,
                  "bernoulli_": _bernoulli_, "bernoulli": _bernoulli, "multinomial": multinomial}
