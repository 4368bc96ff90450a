"""Forward-mode function transforms (PyTorch's ``torch.func.jvp``, ``jacfwd``, ``linearize``).

There is no forward-mode engine underneath: Jacobian-vector products use the *double-vjp trick*. For a dummy
cotangent ``u`` (a zero leaf that requires grad), ``g(u) = J^T u`` is computed by one backward pass with
``create_graph=True``; it is linear in ``u``, so differentiating ``<g(u), v>`` with respect to ``u`` gives
``J v``. This needs every op on the way to have a differentiable backward (double-backward support); functions
whose backward is not differentiable (``once_differentiable`` custom Functions) cannot be pushed forward.
One forward evaluation serves many products (jacfwd's columns, linearize's ``jvp_fn``).
"""
import functools

from .. import _C
from .._ops.index import stack
from .._tensor import Size
from ..autograd import enable_grad, grad as _grad
from ..utils._pytree import tree_flatten, tree_unflatten
from .argnums import differentiable_args, select_argnums
from .checks import check_aux, check_tensor_outputs, split_aux, zeros_like
from .levels import GradLevel, is_nested, unwrap
from .randomness import check_randomness_arg, guard

__all__ = ["jvp", "jacfwd", "linearize"]

_JVP = "jvp(f, primals, tangents)"


class _Pushforward:
    """J v for the recorded ``outputs`` of ``inputs``, by the double-vjp trick (see the module docstring)."""

    def __init__(self, level, outputs, inputs):
        self.outputs = outputs
        self.diff = [i for i, o in enumerate(outputs) if o.requires_grad and (o.is_floating_point() or o.is_complex())]
        self.us = [level.fresh_leaf(outputs[i]) for i in self.diff]
        if self.diff:
            g = _grad([outputs[i] for i in self.diff], inputs, self.us, create_graph=True, allow_unused=True)
        else:
            g = (None,) * len(inputs)
        # J^T u always carries u's graph (zero-derivative ops like floor included); without it a backward ran
        # outside grad mode (once_differentiable), and J v cannot be had from it
        if any(gk is not None and not gk.requires_grad for gk in g):
            raise RuntimeError("jvp/jacfwd/linearize: the backward of a function inside f is not differentiable "
                               "(e.g. a once_differentiable custom Function). Forward-mode products are computed by "
                               "differentiating the backward (the double-vjp trick), so they are not available here.")
        self.g = g

    def __call__(self, tangents, create_graph):
        """One tangent (or None for zero) per input; returns one J v per output, None where it is zero."""
        res = [None] * len(self.outputs)
        pairs = [(gk, v.to(gk.dtype)) for gk, v in zip(self.g, tangents) if gk is not None and v is not None]
        if pairs:
            jv = _grad([gk for gk, _ in pairs], self.us, [v for _, v in pairs], retain_graph=True,
                       create_graph=create_graph, allow_unused=True)
            for i, r in zip(self.diff, jv):
                res[i] = r
        return res


def _check_list_of_tensors(flat, argname):
    if len(flat) == 0:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, _C.TensorBase):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got {type(t)}")


def _check_dual(primal, tangent):
    """What torch's make_dual refuses."""
    if not (primal.is_floating_point() or primal.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {primal.dtype}")
    if tangent is not None and not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent is not None and tuple(primal.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(primal.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """Runs ``func(*primals)`` and returns ``(output, jvp_out)`` (``(output, jvp_out, aux)`` with ``has_aux``):
    the Jacobian of ``func`` at ``primals`` applied to ``tangents``, which have the pytree structure of
    ``primals`` (a tuple). ``strict=True`` raises when an output does not depend on the inputs (otherwise its
    tangent is zero).

    Computed with the double-vjp trick (two backward passes; see the module docstring), which requires the
    function's ops to support double backward.
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    _check_list_of_tensors(flat_primals, "primals")
    _check_list_of_tensors(flat_tangents, "tangents")
    for p, t in zip(flat_primals, flat_tangents):
        _check_dual(p, t)
    with GradLevel() as level:
        args, flat_x, _ = differentiable_args(level, primals, None)
        output, aux = split_aux(func(*args), has_aux, _JVP)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, _JVP)
        if has_aux:
            check_aux(aux)
        graph_needed = level.needs_graph(flat_out) or any(t.requires_grad for t in flat_tangents)
        jv = _Pushforward(level, flat_out, flat_x)(flat_tangents, graph_needed)
        if strict and any(t is None for t in jv):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        tangents_out = [zeros_like(o) if t is None else t for t, o in zip(jv, flat_out)]
        res = (level.unwrap(output), level.unwrap(tree_unflatten(tangents_out, out_spec)))
        return res + (level.unwrap(aux),) if has_aux else res


def _jacobian_columns(push, flat_out, flat_x, create_graph):
    """blocks[i][k] = d out_i / d x_k, shaped ``out_i.shape + x_k.shape``: one pushforward per input element."""
    cols = [[[] for _ in flat_x] for _ in flat_out]
    for k, x in enumerate(flat_x):
        n = x.numel()
        for j in range(n):
            unit = x.detach().new_zeros((n,))
            unit[j] = 1
            tangents = [None] * len(flat_x)
            tangents[k] = unit.reshape(x.shape)
            for i, (o, t) in enumerate(zip(flat_out, push(tangents, create_graph))):
                cols[i][k].append(zeros_like(o) if t is None else t)
    blocks = []
    for i, o in enumerate(flat_out):
        row = []
        for k, x in enumerate(flat_x):
            shape = tuple(o.shape) + tuple(x.shape)
            c = cols[i][k]
            row.append(stack(c, -1).reshape(shape) if c else o.detach().new_zeros(shape))
        blocks.append(row)
    return blocks


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Returns a function computing the Jacobian of ``func`` with respect to the arguments at ``argnums``,
    column by column (one Jacobian-vector product per input element; see ``jvp``). The result is structured as
    ``jacrev``'s. With ``has_aux`` it is ``(jacobian, aux)``.

    ``randomness`` is vmap's flag (torch batches the columns with vmap): 'error' refuses random ops in ``func``;
    'same' and 'different' allow them. ``func`` runs once here, so every column sees the same draws, even for
    'different'.
    """
    @functools.wraps(func)
    def wrapper_fn(*args):
        check_randomness_arg(randomness)
        flat_primals, _ = tree_flatten(select_argnums(args, argnums))
        for p in flat_primals:
            if isinstance(p, _C.TensorBase):
                _check_dual(p, None)
        with GradLevel() as level:
            args, flat_x, in_spec = differentiable_args(level, args, argnums)
            with guard(randomness):
                output = func(*args)
            output, aux = split_aux(output, has_aux, _JVP)
            flat_out, out_spec = tree_flatten(output)
            check_tensor_outputs(flat_out, _JVP)
            if has_aux:
                check_aux(aux)
            push = _Pushforward(level, flat_out, flat_x)
            blocks = _jacobian_columns(push, flat_out, flat_x, level.needs_graph(flat_out))
            jac = level.unwrap(tree_unflatten([tree_unflatten(b, in_spec) for b in blocks], out_spec))
            return (jac, level.unwrap(aux)) if has_aux else jac

    return wrapper_fn


def linearize(func, *primals):
    """Returns ``(func(*primals), jvp_fn)``, where ``jvp_fn(*tangents)`` evaluates the Jacobian-vector product
    at ``primals`` for tangents structured like ``primals``, without running ``func`` again (the graph of the
    single evaluation is kept for as long as ``jvp_fn`` lives). Uses the double-vjp trick (see ``jvp``).
    """
    with GradLevel() as level:
        args, flat_x, primals_spec = differentiable_args(level, primals, None)
        output = func(*args)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, "linearize(f, *primals)")
        push = _Pushforward(level, flat_out, flat_x)
        graph_needed = level.needs_graph(flat_out)
        result = level.unwrap(output)
    created_nested, ours = not level.outermost, level.ours
    meta = [(tuple(x.shape), x.device, x.dtype) for x in flat_x]

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals "
                               f"{primals_spec}")
        for idx, (t, (shape, device, dtype)) in enumerate(zip(flat_t, meta)):
            for what, got, want in (("shape", tuple(t.shape), shape), ("device", t.device, device),
                                    ("dtype", t.dtype, dtype)):
                if got != want:
                    got = Size(got) if what == "shape" else got
                    want = Size(want) if what == "shape" else want
                    raise RuntimeError(f"tangent:{idx} with {what} {got} in flattened pytree doesn't match the "
                                       f"{what} {want} of the corresponding primal.")
        grad_enabled = _C.is_grad_enabled()
        create_graph = grad_enabled and (graph_needed or is_nested() or any(t.requires_grad for t in flat_t))
        with enable_grad():
            jv = push(flat_t, create_graph)
        res = tree_unflatten([zeros_like(o) if t is None else t for t, o in zip(jv, flat_out)], out_spec)
        return unwrap(res, ours, created_nested or is_nested(), grad_enabled)

    return result, jvp_fn
