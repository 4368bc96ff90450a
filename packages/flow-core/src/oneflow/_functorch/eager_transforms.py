"""Reverse-mode function transforms (PyTorch's ``torch.func.grad``, ``grad_and_value``, ``vjp``, ``jacrev``,
``hessian``), built on ``oneflow.autograd.grad``.

Each call runs the function once on differentiable copies of the inputs (see ``levels``) and pulls cotangents
back through the recorded graph; Jacobians are assembled one row (one backward pass) at a time. Nesting works
because an inner transform keeps its graph (``create_graph=True``) for the outer one to differentiate.
"""
import functools

from .. import _C
from .._ops.index import stack
from ..autograd import enable_grad
from ..autograd.functional import _autograd_grad
from ..utils._pytree import tree_flatten, tree_unflatten, treespec_pprint
from .argnums import differentiable_args
from .checks import check_aux, check_floating_outputs, check_tensor_outputs, materialize, split_aux
from .levels import GradLevel, is_nested, unwrap

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "hessian"]


def _grad_and_value_impl(func, argnums, has_aux, args, kwargs):
    api = "grad_and_value(f)(*args)"
    with GradLevel() as level:
        args, flat_x, spec = differentiable_args(level, args, argnums)
        output, aux = split_aux(func(*args, **kwargs), has_aux, api)
        if not isinstance(output, _C.TensorBase):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        if has_aux:
            check_aux(aux)
        grads = _autograd_grad((output,), flat_x, create_graph=level.needs_graph([output]))
        grad_input = tree_unflatten(materialize(grads, flat_x), spec)
        return level.unwrap(grad_input), level.unwrap(output), level.unwrap(aux)


def grad_and_value(func, argnums=0, has_aux=False):
    """Returns a function computing ``(gradient, value)`` of ``func``, whose output must be a scalar tensor.

    Args:
        func: a Python function of tensors (and pytrees of them) returning a 0-dim tensor, or, with ``has_aux``,
            a pair ``(output, aux)``.
        argnums (int or Tuple[int]): which positional arguments to differentiate. An int gives the gradient with
            the structure of that argument; a tuple gives a tuple of them. Default 0.
        has_aux (bool): ``func`` returns ``(output, aux)``; the result is then ``(gradient, (value, aux))``.

    Keyword arguments of the returned function are passed to ``func`` and not differentiated. Inputs need not
    require grad, and no ``.grad`` is written. Arguments that do not influence the output get zero gradients.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grad_input, value, aux = _grad_and_value_impl(func, argnums, has_aux, args, kwargs)
        return (grad_input, (value, aux)) if has_aux else (grad_input, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """Returns a function computing the gradient of ``func`` (a scalar-valued function) with respect to the
    arguments at ``argnums``; with ``has_aux`` the result is ``(gradient, aux)``. See ``grad_and_value``.

    Example::

        >>> x = oneflow.randn(3)
        >>> oneflow.func.grad(lambda x: x.sin().sum())(x)   # == x.cos()
        >>> oneflow.func.grad(oneflow.func.grad(lambda x: x.sin()))(oneflow.tensor(1.0))  # == -sin(1)
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grad_input, _, aux = _grad_and_value_impl(func, argnums, has_aux, args, kwargs)
        return (grad_input, aux) if has_aux else grad_input

    return wrapper


def _check_cotangents(flat_cotangents, flat_outputs):
    for i, (ct, o) in enumerate(zip(flat_cotangents, flat_outputs)):
        if isinstance(ct, _C.TensorBase) and tuple(ct.shape) != tuple(o.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {ct.shape} and output[{i}] has "
                               f"a shape of {o.shape}.")


def _call_checked(level, func, args, argnums, has_aux, api):
    """``func`` on the level's differentiable copies of ``args`` (those selected by ``argnums``; all when None),
    with its outputs checked as torch checks a vjp's: returns the flat differentiable inputs and their spec,
    the output and aux, and the flat outputs and their spec."""
    args, flat_x, spec = differentiable_args(level, args, argnums)
    output, aux = split_aux(func(*args), has_aux, api)
    flat_out, out_spec = tree_flatten(output)
    check_tensor_outputs(flat_out, api)
    check_floating_outputs(flat_out)
    if has_aux:
        check_aux(aux)
    return flat_x, spec, output, aux, flat_out, out_spec


def vjp(func, *primals, has_aux=False):
    """Runs ``func(*primals)`` and returns ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``).

    ``vjp_fn(cotangents)`` takes cotangents with the pytree structure of ``output`` and returns a tuple with one
    vector-Jacobian product per primal (each shaped like it, zeros where the output does not depend on it). It
    may be called many times. ``vjp_fn(cotangents, retain_graph=True, create_graph=None)``: ``create_graph``
    defaults to whether grad mode is on and something (an enclosing transform, a cotangent or a closed-over
    tensor that requires grad) can still differentiate the result.
    """
    api = "vjp(f, *primals)"
    with GradLevel() as level:
        flat_x, spec, output, aux, flat_out, out_spec = _call_checked(level, func, primals, None, has_aux, api)
        graph_needed = level.needs_graph(flat_out)
        result, aux = level.unwrap(output), level.unwrap(aux)
    created_nested, ours = not level.outermost, level.ours

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {treespec_pprint(ct_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        _check_cotangents(flat_ct, flat_out)
        grad_enabled = _C.is_grad_enabled()
        if create_graph is None:
            create_graph = grad_enabled and (graph_needed or is_nested()
                                             or any(getattr(c, "requires_grad", False) for c in flat_ct))
        with enable_grad():  # the backward of a differentiable graph is recorded only in grad mode
            grads = _autograd_grad(flat_out, flat_x, flat_ct, create_graph=create_graph, retain_graph=retain_graph)
        res = tree_unflatten(materialize(grads, flat_x), spec)
        return unwrap(res, ours, created_nested or is_nested(), grad_enabled)

    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def _unit(n, j, like):
    """The j-th standard basis vector of length n, with ``like``'s dtype and device."""
    e = like.detach().new_zeros((n,))
    e[j] = 1
    return e


def _jacobian_rows(output, flat_x, create_graph):
    """d output / d x for every x in flat_x: one backward pass per element of ``output``; blocks shaped
    ``output.shape + x.shape``."""
    n = output.numel()
    rows = [[] for _ in flat_x]
    if output.requires_grad:
        for j in range(n):
            cot = _unit(n, j, output).reshape(output.shape)
            g = _autograd_grad((output,), flat_x, (cot,), create_graph=create_graph, retain_graph=True)
            for k, gk in enumerate(materialize(g, flat_x)):
                rows[k].append(gk)
    blocks = []
    for x, r in zip(flat_x, rows):
        shape = tuple(output.shape) + tuple(x.shape)
        blocks.append(stack(r, 0).reshape(shape) if r else x.detach().new_zeros(shape))
    return blocks


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Returns a function computing the Jacobian of ``func`` with respect to the arguments at ``argnums`` with
    reverse-mode autodiff (one backward pass per output element).

    The result has the pytree structure of the output; each leaf is a block shaped ``output.shape +
    input.shape`` (a tuple of blocks, or a pytree like the argument, for a tuple ``argnums`` or a pytree
    argument). With ``has_aux`` the result is ``(jacobian, aux)``. ``chunk_size`` (None or > 0) is accepted for
    compatibility; rows are always computed one at a time here, so it does not change results or memory.
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        api = "vjp(f, *primals)"  # torch reports jacrev's output errors as vjp's
        with GradLevel() as level:
            flat_x, in_spec, output, aux, flat_out, out_spec = _call_checked(level, func, args, argnums, has_aux, api)
            create_graph = level.needs_graph(flat_out)
            per_output = []
            for o in flat_out:
                blocks = tree_unflatten(_jacobian_rows(o, flat_x, create_graph), in_spec)
                per_output.append(blocks)
            jac = level.unwrap(tree_unflatten(per_output, out_spec))
            return (jac, level.unwrap(aux)) if has_aux else jac

    return wrapper_fn


def hessian(func, argnums=0):
    """Returns a function computing the Hessian of the scalar function ``func`` with respect to the arguments
    at ``argnums``: blocks shaped ``input_i.shape + input_j.shape``, nested like ``jacrev(jacrev(func))``.

    torch composes forward over reverse (``jacfwd(jacrev(func))``); forward mode here is itself a double
    backward, so reverse over reverse is used instead. The values are the same.
    """
    return jacrev(jacrev(func, argnums), argnums)
