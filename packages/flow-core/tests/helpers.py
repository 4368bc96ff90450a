"""Shared test utilities: reference comparisons against NumPy/PyTorch and finite-difference gradchecks."""
import numpy as np

import oneflow as flow
from oneflow._dispatch import DispatchMode

try:
    import torch
except ImportError:  # pragma: no cover - torch is a test dependency
    torch = None


def to_np(t):
    """A NumPy copy of a oneflow or torch tensor (bfloat16 goes through float32)."""
    if isinstance(t, flow.Tensor):
        t = t.detach()
        if t.dtype == flow.bfloat16:
            t = t.float()
        return np.array(t.numpy(), copy=True)
    if torch is not None and isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy().copy()
    return np.asarray(t)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, check_dtype=True):
    """Values (and dtype/shape) of a oneflow tensor against a NumPy array, torch tensor or oneflow tensor."""
    if check_dtype and torch is not None and isinstance(expected, torch.Tensor):
        assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (actual.dtype, expected.dtype)
    a, e = to_np(actual), to_np(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def flow_and_torch(arr, requires_grad=False, dtype=None):
    """The same data as a oneflow tensor and a torch tensor (both leaves)."""
    arr = np.asarray(arr)
    if dtype is not None:
        arr = arr.astype(dtype)
    f = flow.tensor(arr)
    t = torch.tensor(arr)
    if requires_grad:
        f.requires_grad_(True)
        t.requires_grad_(True)
    return f, t


def check_vs_torch(flow_fn, torch_fn, arrays, grad=True, rtol=1e-5, atol=1e-6, grad_rtol=None, grad_atol=None):
    """Run ``flow_fn`` and ``torch_fn`` on the same inputs; compare outputs and (for float inputs) gradients
    of a random weighted sum of the outputs."""
    f_in, t_in = [], []
    for a in arrays:
        a = np.asarray(a)
        rg = grad and a.dtype.kind == "f"
        f, t = flow_and_torch(a, requires_grad=rg)
        f_in.append(f)
        t_in.append(t)
    f_out = flow_fn(*f_in)
    t_out = torch_fn(*t_in)
    f_outs = f_out if isinstance(f_out, (tuple, list)) else (f_out,)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    for fo, to in zip(f_outs, t_outs):
        assert_close(fo, to, rtol=rtol, atol=atol)
    if not grad:
        return
    rng = np.random.default_rng(1)
    f_loss, t_loss = None, None
    for fo, to in zip(f_outs, t_outs):
        if not (isinstance(to, torch.Tensor) and to.requires_grad):
            continue
        w = rng.standard_normal(to.shape).astype(to_np(to).dtype)
        fl = (fo * flow.tensor(w)).sum()
        tl = (to * torch.tensor(w)).sum()
        f_loss = fl if f_loss is None else f_loss + fl
        t_loss = tl if t_loss is None else t_loss + tl
    if t_loss is None:
        return
    f_loss.backward()
    t_loss.backward()
    for f, t in zip(f_in, t_in):
        if t.requires_grad:
            if t.grad is None:
                assert f.grad is None or np.allclose(to_np(f.grad), 0)
            else:
                assert f.grad is not None, "missing gradient"
                assert_close(f.grad, t.grad, rtol=grad_rtol or rtol * 10, atol=grad_atol or atol * 10)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4):
    """Finite differences in float64 against autograd for every input that requires grad.

    ``fn(*inputs)`` must return a tensor (or tuple); the check uses a fixed random projection of the outputs.
    """
    rng = np.random.default_rng(2)
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    weights = [rng.standard_normal(tuple(o.shape)) for o in outs]

    def scalar(*xs):
        os_ = fn(*xs)
        os_ = os_ if isinstance(os_, (tuple, list)) else (os_,)
        total = 0.0
        for o, w in zip(os_, weights):
            if o.dtype.is_floating_point:
                total += float((to_np(o).astype(np.float64) * w).sum())
        return total

    loss = None
    for o, w in zip(outs, weights):
        if o.requires_grad:
            term = (o * flow.tensor(w, dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
    diff_inputs = [x for x in inputs if isinstance(x, flow.Tensor) and x.requires_grad]
    analytic = flow.autograd.grad(loss, diff_inputs, allow_unused=True)
    for x, g in zip(diff_inputs, analytic):
        base = to_np(x).astype(np.float64)
        num = np.zeros_like(base)
        flat = base.reshape(-1)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            plus = scalar(*[flow.tensor(base.reshape(x.shape), dtype=x.dtype) if y is x else y for y in inputs])
            flat[i] = orig - eps
            minus = scalar(*[flow.tensor(base.reshape(x.shape), dtype=x.dtype) if y is x else y for y in inputs])
            flat[i] = orig
            num.reshape(-1)[i] = (plus - minus) / (2 * eps)
        got = np.zeros_like(num) if g is None else to_np(g)
        np.testing.assert_allclose(got, num, rtol=rtol, atol=atol)


def step_optimizers(name, kwargs, shapes, steps, seed=0, tensor_lr=False, default_lr=None):
    """``oneflow.optim.<name>`` and ``torch.optim.<name>`` built with ``kwargs`` on the same random float32
    parameters of ``shapes`` and stepped ``steps`` times with the same random gradients. ``tensor_lr`` passes
    the learning rate (``kwargs['lr']``, else ``default_lr``) as a 0-dim tensor. Returns (flow parameters,
    torch parameters, flow optimizer, torch optimizer)."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    fp = [flow.tensor(a, requires_grad=True) for a in init]
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    fk, tk = dict(kwargs), dict(kwargs)
    if tensor_lr:
        lr = kwargs["lr"] if "lr" in kwargs else default_lr
        fk["lr"], tk["lr"] = flow.tensor(lr), torch.tensor(lr)
    fo, to = getattr(flow.optim, name)(fp, **fk), getattr(torch.optim, name)(tp, **tk)
    for _ in range(steps):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for p, g in zip(fp, grads):
            p.grad = flow.tensor(g)
        for p, g in zip(tp, grads):
            p.grad = torch.tensor(g)
        fo.step()
        to.step()
    return fp, tp, fo, to


class LoggingMode(DispatchMode):
    """A dispatch mode that records every op it sees: ``log`` their names, ``seen`` (name, attrs) pairs."""

    def __init__(self):
        self.log, self.seen = [], []

    def __flow_dispatch__(self, op, inputs, attrs):
        self.log.append(op.name)
        self.seen.append((op.name, dict(attrs)))
        return op.redispatch(inputs, attrs)
