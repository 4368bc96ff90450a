"""``gradcheck`` / ``gradgradcheck`` (PyTorch's ``torch.autograd.gradcheck``): compare the Jacobians autograd
computes with central finite differences, for users checking their own ``Function``s and ops."""
import warnings

import numpy as np

from .. import _C

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` when the analytical and numerical Jacobians differ."""


def _tensors(x):
    return [t for t in (x if isinstance(x, (tuple, list)) else (x,)) if isinstance(t, _C.TensorBase)]


def _outputs(func, inputs):
    """The floating-point tensor outputs of ``func``: integer and bool outputs have no gradient to check."""
    return [o for o in _tensors(func(*inputs)) if o.dtype.is_floating_point]


def _numerical(func, inputs, wrt, eps):
    """Central differences of every output w.r.t. every element of the input ``wrt``: one (n_in, n_out) matrix
    per output."""
    import oneflow as flow

    x = inputs[wrt]
    flat = x.detach().reshape(-1)  # shares x's memory: entries are nudged in place, func runs as usual

    def at(i, value):
        with flow.no_grad():
            flat[i] = value
        return [o.detach().clone().reshape(-1) for o in _outputs(func, inputs)]

    cols = []
    for i in range(flat.numel()):
        orig = flat[i].item()
        plus, minus = at(i, orig + eps), at(i, orig - eps)
        with flow.no_grad():
            flat[i] = orig
        cols.append([((p - m) / (2 * eps)).double().numpy() for p, m in zip(plus, minus)])
    n_out = len(_outputs(func, inputs))
    return [np.stack([c[k] for c in cols]) if cols else np.zeros((0, 0)) for k in range(n_out)]


def _analytical(func, inputs, wrt):
    import oneflow as flow

    outs = _outputs(func, inputs)
    x = inputs[wrt]
    jac = []
    for o in outs:
        rows = np.zeros((x.numel(), o.numel()))
        if not o.requires_grad:  # constant as far as autograd knows: the numerical side must agree
            jac.append(rows)
            continue
        for j in range(o.numel()):
            g = flow.zeros_like(o).reshape(-1)
            g[j] = 1
            (gx,) = flow.autograd.grad(o, x, g.reshape(o.shape), retain_graph=True, allow_unused=True)
            if gx is not None:
                rows[:, j] = gx.detach().double().reshape(-1).numpy()
        jac.append(rows)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Checks the gradients of ``func`` at ``inputs`` against central finite differences (step ``eps``; the
    flags for torch's batched, forward-mode and fast checks are accepted and not used):
    ``|analytical - numerical| <= atol + rtol * |numerical|`` for every Jacobian entry of every output w.r.t.
    every input that requires grad. A second backward must reproduce the analytical Jacobian within
    ``nondet_tol``; outputs that do not require grad must not vary. Returns True, or raises
    :class:`GradcheckError` (False with ``raise_exception=False``). Use float64 inputs: float32 differences are
    too coarse for these tolerances."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    for i, t in enumerate(inputs):
        if isinstance(t, _C.TensorBase) and t.requires_grad and t.dtype != _C.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                          "will likely fail if all the inputs are not of double precision floating point. ")
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, _C.TensorBase) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    for i in wrt:
        numerical = _numerical(func, inputs, i, eps)
        analytical = _analytical(func, inputs, i)
        error = _jacobian_error(func, inputs, i, numerical, analytical, atol, rtol, nondet_tol)
        if error is not None:
            if not raise_exception:
                return False
            raise GradcheckError(error)
    return True


def _jacobian_error(func, inputs, wrt, numerical, analytical, atol, rtol, nondet_tol):
    """What is wrong with input ``wrt``'s Jacobians (None when they pass), in PyTorch's order: outputs that do
    not require grad but vary, a mismatch with the finite differences, then a backward that is not reentrant
    (a second run differing by more than ``nondet_tol``)."""
    outs = _outputs(func, inputs)
    for k, (o, n) in enumerate(zip(outs, numerical)):
        if not o.requires_grad and not np.allclose(n, 0.0, rtol=rtol, atol=atol):
            return "Numerical gradient for function expected to be zero"
    for k, (a, n) in enumerate(zip(analytical, numerical)):
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            return f"Jacobian mismatch for output {k} with respect to input {wrt},\nnumerical:{n}\nanalytical:{a}\n"
    again = _analytical(func, inputs, wrt)
    for a, b in zip(analytical, again):
        if a.size and np.max(np.abs(a - b)) > nondet_tol:
            return ("Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                    "times gives different values, although analytical gradient matches numerical gradient. The "
                    f"tolerance for nondeterminism was {nondet_tol}.")
    return None


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Checks second derivatives: :func:`gradcheck` of the map from ``inputs`` (and ``grad_outputs``, random
    when not given) to the gradients of ``func`` w.r.t. the inputs that require grad."""
    import oneflow as flow

    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = np.random.default_rng(0)
        grad_outputs = tuple(flow.tensor(gen.standard_normal(tuple(o.shape)), dtype=o.dtype, requires_grad=True)
                             for o in outs)
    grad_outputs = tuple(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else (grad_outputs,)
    n_in = len(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, _C.TensorBase) and t.requires_grad]

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        os = _outputs(func, ins)
        grads = flow.autograd.grad(os, [ins[i] for i in wrt], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
