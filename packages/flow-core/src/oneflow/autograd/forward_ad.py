"""Forward-mode automatic differentiation (PyTorch's ``torch.autograd.forward_ad``).

Inside a ``dual_level``, ``make_dual(x, t)`` returns a view of ``x`` that carries the tangent ``t``; every op
applied to such dual tensors returns dual tensors whose tangents are the Jacobian-vector products of the op,
and ``unpack_dual`` reads them back::

    with forward_ad.dual_level():
        y = f(forward_ad.make_dual(x, v))
        jvp = forward_ad.unpack_dual(y).tangent

How it works: while a level is open a dispatch mode (``oneflow._dispatch``) sees every op. For an op with a
dual input it computes the output tangents by the double-vjp trick on that single op (see
``oneflow._functorch.forward_transforms``), then runs the op itself. Dispatch handlers run below autograd,
where nothing is recorded, so the double-vjp runs through ``_C._call_above_autograd`` with grad mode on (and
inference mode off): a self-contained computation on fresh tensors, recorded as at top level.

Limits, compared with torch:

* one level at a time (as in torch) and no forward-over-forward;
* every op with a dual input costs about three evaluations (the op and two backward passes), and needs a
  differentiable backward (ops whose backward is not, such as ``once_differentiable`` Functions, raise);
* the tangent of a view is its own tensor, not a view of the base's tangent: an in-place op through a view of a
  dual tensor does not update the base's tangent (in-place ops on the dual tensor itself do);
* dual tensors made inside a level are kept alive until the level exits (their tangents are looked up by
  object, and the object has to survive the trip through the dispatcher).
"""
import contextlib
from typing import NamedTuple, Optional

from .. import _C
from .._dispatch import DispatchMode
from ._engine import grad as _grad
from .grad_mode import _GradModeBase

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_mode = None


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by ``unpack_dual``: the primal (a view of the dual tensor's value) and the tangent
    (None when there is none)."""

    primal: _C.TensorBase
    tangent: Optional[_C.TensorBase]


def _recorded(fn):
    """``fn()`` with autograd recording, from inside a dispatch handler and whatever the caller's grad mode."""
    def run():
        prev = _C.is_grad_enabled(), _C.is_inference_mode_enabled()
        _C._set_grad_enabled(True)
        _C._set_inference_mode(False)
        try:
            return fn()
        finally:
            _C._set_grad_enabled(prev[0])
            _C._set_inference_mode(prev[1])

    return _C._call_above_autograd(run)


def _differentiable_output(o):
    return o is not None and o.requires_grad and (o.is_floating_point() or o.is_complex())


def _pushforward(op, inputs, attrs, tangents):
    """The output tangents of ``op`` for the input ``tangents`` (None entries: no tangent), by the double-vjp
    trick, run through ``_recorded``. The real inputs are not written to, even by an in-place op."""
    # with an input or tangent that requires grad, the tangents stay differentiable (reverse over forward)
    need_graph = any(t is not None and t.requires_grad for t in list(inputs) + list(tangents))
    args, leaves = [], []
    for t, v in zip(inputs, tangents):
        if t is None:
            args.append(None)
            continue
        connected = need_graph and t.requires_grad
        if v is None:
            args.append(t if connected else t.detach())
            continue
        if connected:
            a = t.view_as(t)
        else:  # an inference tensor (made under inference_mode) cannot require grad: differentiate a copy
            a = (t.detach().clone() if t.is_inference() else t.detach()).requires_grad_()
        args.append(a)
        leaves.append((a, v))
    if op.is_inplace:  # the op writes into its first input: give it a copy
        args[0] = args[0].clone()
    out = op.redispatch(args, attrs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    diff = [i for i, o in enumerate(outs) if _differentiable_output(o)]
    res = [None] * len(outs)
    if not diff:
        return res
    us = [outs[i].detach().new_zeros(outs[i].shape).requires_grad_() for i in diff]
    g = _grad([outs[i] for i in diff], [a for a, _ in leaves], us, create_graph=True, allow_unused=True)
    if any(gk is not None and not gk.requires_grad for gk in g):
        raise RuntimeError(f"forward AD: the backward of {op.name} is not differentiable, so its forward derivative "
                           "cannot be computed (it is obtained by differentiating the backward).")
    pairs = [(gk, v) for gk, (_, v) in zip(g, leaves) if gk is not None]
    if not pairs:
        return res
    jv = _grad([gk for gk, _ in pairs], us, [v.to(gk.dtype) for gk, v in pairs], create_graph=need_graph,
               allow_unused=True)
    for i, r in zip(diff, jv):
        res[i] = r
    return res


class _DualMode(DispatchMode):
    """The dispatch mode of an open level: holds the tangents and pushes them through every op."""

    def __init__(self):
        self.tangents = {}  # id(tensor) -> (tensor, tangent); holding the tensor keeps the id valid
        self.paused = 0

    def tangent_of(self, t):
        entry = self.tangents.get(id(t))
        return entry[1] if entry is not None and entry[0] is t else None

    def set_tangent(self, t, tangent):
        if tangent is None:
            self.tangents.pop(id(t), None)
        else:
            self.tangents[id(t)] = (t, tangent)

    @contextlib.contextmanager
    def pause(self):
        """Ops inside pass through untouched (the views made by make_dual and unpack_dual)."""
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1

    def __flow_dispatch__(self, op, inputs, attrs):
        tangents = [None if t is None else self.tangent_of(t) for t in inputs]
        if self.paused or all(v is None for v in tangents):
            return op.redispatch(inputs, attrs)
        if "non_differentiable" in op.traits:
            out = op.redispatch(inputs, attrs)
            if op.is_inplace:
                self.set_tangent(inputs[0], None)
            return out
        # a random op (dropout) must draw the same numbers twice: rewind its generator for the real run
        gen = (attrs.get("generator") or _C.default_generator) if "random" in op.traits else None
        state = gen.get_state() if gen is not None else None
        out_tangents = _recorded(lambda: _pushforward(op, inputs, attrs, tangents))
        if gen is not None:
            gen.set_state(state)
        out = op.redispatch(inputs, attrs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o, t in zip(outs, out_tangents):
            if o is not None:
                self.set_tangent(o, t)
        return out


def enter_dual_level():
    """Opens a forward AD level and returns its index (0: nesting is not supported, as in torch)."""
    global _current_level, _mode
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _mode = _DualMode()
    _mode.__enter__()
    _current_level = 0
    return _current_level


def exit_dual_level(*, level=None):
    """Closes the current level; every tangent made in it is dropped."""
    global _current_level, _mode
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _mode.__exit__(None, None, None)
    _mode.tangents.clear()
    _mode = None
    _current_level = -1


def _check_level(level, what):
    if level is None:
        level = _current_level
    if level >= 0 and level != _current_level:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing ``tensor`` that carries ``tangent`` (stored as is) as its forward gradient.

    Raises RuntimeError outside a level, for a tangent of another shape, or for a tensor that already carries a
    tangent; ValueError for non-floating tensors or tangents.
    """
    level = _check_level(level, "_make_dual")
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if _mode.tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {level} is not supported.")
    with _mode.pause():
        dual = tensor.view_as(tensor)
    _mode.set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)``: a view of ``tensor`` without tangent, and its tangent as is (None
    outside a level or for a tensor without one)."""
    level = _check_level(level, "_fw_primal")
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    tangent = _mode.tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _mode.pause():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level(_GradModeBase):
    """Context manager (or decorator) opening a forward AD level for its block; tangents are dropped on exit.
    Entering returns the level's index."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False
