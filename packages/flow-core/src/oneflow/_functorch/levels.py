"""Differentiation levels for the eager transforms: how inputs enter a transform and how results leave it.

A transform (grad, vjp, jvp, jacrev, jacfwd, ...) runs the user's function on *differentiable copies* of the
inputs and differentiates with ``autograd.grad``. A copy is

* a fresh leaf (``t.detach().requires_grad_()``) when ``t`` does not require grad: the user's tensor is never
  made to require grad and no ``.grad`` is ever written, or
* a view ``t.view_as(t)`` when it does: the result stays connected to the graph that ``t`` belongs to, so an
  enclosing transform, or ordinary ``backward()``, can differentiate through this one (grad(grad(f)),
  ``grad(f)(x).sum().backward()``). Each level gets its own node, so nested levels never mix up their
  perturbations.

Results of the outermost transform are detached unless they depend on a tensor the transforms did not create
(an input or a closed-over tensor that requires grad outside): this is decided by walking the autograd graph
of the result. Inner transforms keep the graph (with ``create_graph=True``) since their caller differentiates
them again.
"""
import threading

from .. import _C
from ..utils._pytree import tree_map

_tls = threading.local()


def _depth():
    return getattr(_tls, "depth", 0)


def is_nested():
    """True inside the function of a running differentiation transform (or a vjp_fn called there)."""
    return _depth() > 0


class _Ours:
    """The fresh leaves made by the transforms of one outermost call (kept alive, so the ids stay valid)."""

    def __init__(self):
        self.leaves = []
        self.nodes = []
        self.ids = set()

    def add(self, leaf):
        node = leaf.view_as(leaf).grad_fn.next_functions[0][0]  # its AccumulateGrad node
        self.leaves.append(leaf)
        self.nodes.append(node)
        self.ids.add(id(leaf))
        self.ids.add(id(node))


class GradLevel:
    """Context manager for one differentiation transform: grad mode on inside (transforms ignore an outer
    ``no_grad``, as torch.func's do), plus the bookkeeping above."""

    def __enter__(self):
        self.grad_was_enabled = _C.is_grad_enabled()
        self.outermost = _depth() == 0
        if self.outermost:
            _tls.ours = _Ours()
        self.ours = _tls.ours
        _tls.depth = _depth() + 1
        _C._set_grad_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.grad_was_enabled)
        _tls.depth = _depth() - 1
        if self.outermost:
            _tls.ours = None
        return False

    def make_differentiable(self, t):
        """The differentiable copy of ``t`` used inside the function (see the module docstring)."""
        if not isinstance(t, _C.TensorBase):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
        if t.requires_grad:
            return t.view_as(t)
        leaf = t.detach().requires_grad_()
        self.ours.add(leaf)
        return leaf

    def fresh_leaf(self, t):
        """A zero-initialised leaf like ``t`` (the dummy cotangent of the double-vjp trick)."""
        leaf = t.detach().new_zeros(t.shape).requires_grad_()
        self.ours.add(leaf)
        return leaf

    def needs_graph(self, tensors):
        """Whether gradients must be taken with ``create_graph=True``: inside another transform, or when the
        function's outputs reach a tensor that requires grad outside the transforms."""
        if not self.outermost:
            return True
        return self.grad_was_enabled and any(depends_on_outside(t, self.ours) for t in tensors)

    def unwrap(self, tree, nested=None):
        """Results leaving the level: detached, unless an enclosing transform (``nested``; by default this level
        is not the outermost) or a tensor from outside may still differentiate them."""
        nested = (not self.outermost) if nested is None else nested
        return unwrap(tree, self.ours, nested, self.grad_was_enabled)


def unwrap(tree, ours, nested, grad_enabled):
    def leave(t):
        if not isinstance(t, _C.TensorBase):
            return t
        if not grad_enabled:  # computed under an outer no_grad: nothing records it
            return t.detach()
        if nested or depends_on_outside(t, ours):
            return t
        return t.detach()

    return tree_map(leave, tree)


def depends_on_outside(t, ours):
    """True when the autograd graph of ``t`` reaches a leaf that the transforms did not create."""
    if not isinstance(t, _C.TensorBase) or not t.requires_grad:
        return False
    if t.grad_fn is None:
        return id(t) not in ours.ids
    seen = {}  # id -> node; holding the nodes keeps their ids from being reused during the walk
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if id(node) in ours.ids:
            continue
        nexts = getattr(node, "next_functions", None)
        if nexts is None:  # a node we cannot look into: assume it leads outside
            return True
        if not nexts and node.name() == "AccumulateGrad":
            return True
        stack.extend(n for n, _ in nexts if n is not None)
    return False
