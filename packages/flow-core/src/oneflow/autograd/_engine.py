"""``backward`` and ``grad``: the Python side of autograd's engine (the engine itself is C++, ``csrc/autograd``),
with the state they share with checkpointing and the profiler. ``oneflow.autograd`` re-exports all of it."""
import contextlib
import threading
import warnings

from .. import _C
from .._post_accumulate_hooks import _python_post_accumulate_hooks
from .grad_mode import no_grad

def _as_list(x):
    if x is None:
        return None
    if isinstance(x, _C.TensorBase):
        return [x]
    return list(x)


_state = threading.local()

# Callables ``observer(roots, inputs)`` returning a context manager entered around each engine run (``inputs``: the
# tensors whose gradients are captured, or None): the profiler's, while it records, to time autograd nodes. Empty
# otherwise, so a backward pass pays one truth test.
_engine_observers = []


def _run_engine(roots, grads, keep_graph, create_graph, inputs, allow_unused):
    """Runs autograd's engine (``_C._run_backward``) under the registered observers."""
    if not _engine_observers:
        return _C._run_backward(roots, grads, keep_graph, create_graph, inputs, allow_unused)
    with contextlib.ExitStack() as stack:
        for observer in list(_engine_observers):
            stack.enter_context(observer(roots, inputs))
        return _C._run_backward(roots, grads, keep_graph, create_graph, inputs, allow_unused)


def _is_checkpoint_valid():
    """False while a ``grad()`` or ``backward(inputs=...)`` call is running on this thread: re-entrant
    checkpoints (which accumulate into every leaf's ``.grad``) cannot serve those (PyTorch's
    ``torch.autograd._is_checkpoint_valid``)."""
    return getattr(_state, "checkpoint_valid", True)


@contextlib.contextmanager
def _checkpoint_validity(valid):
    prev = _is_checkpoint_valid()
    _state.checkpoint_valid = valid
    try:
        yield
    finally:
        _state.checkpoint_valid = prev


def _input_list(inputs, fn_name):
    """``inputs`` of ``backward``/``grad`` as a list of tensors (a dict gives its values), never empty."""
    if isinstance(inputs, _C.TensorBase):
        return [inputs]
    if type(inputs) is dict:
        inputs = inputs.values()
    ins = list(inputs)
    if not ins:
        raise RuntimeError(f"`inputs` argument to `{fn_name}()` cannot be empty.")
    for t in ins:
        if not isinstance(t, _C.TensorBase):
            raise RuntimeError(f"all inputs have to be Tensors, but got {type(t).__name__}")
    return ins


def _current_grad(t):
    """``t.grad`` without the warning a non-leaf's ``.grad`` access raises (``backward(inputs=...)`` fills it)."""
    if t.is_leaf or t.retains_grad:
        return t.grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def _accumulate(t, g, create_graph):
    """Adds ``g`` into ``t.grad`` as the engine does for leaves (post-accumulate-grad hooks included)."""
    current = _current_grad(t)
    if current is None:
        t.grad = g if create_graph else g.detach()
    elif create_graph:
        t.grad = current + g
    else:  # into the existing .grad, as torch accumulates (references to it see the sum)
        with no_grad():
            current.add_(g)
    if t.is_leaf:
        for hook in list(_python_post_accumulate_hooks(t)):
            if hook(t) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


_create_graph_warned = [False]


def _warn_create_graph_once():
    # PyTorch warns once per process about the parameter <-> gradient reference cycle
    if not _create_graph_warned[0]:
        _create_graph_warned[0] = True
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      stacklevel=3)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    r"""Accumulates the gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Args:
        tensors (Tensor or sequence of Tensor): the outputs to differentiate.
        grad_tensors (Tensor or sequence of Tensor or None, optional): the vector of the vector-Jacobian product,
            one per tensor; None is accepted for scalars (taken as 1). Default: None.
        retain_graph (bool, optional): keep the graph for another backward. Default: ``create_graph``.
        create_graph (bool, optional): record the graph of the gradient, for higher-order derivatives.
            Default: False.
        grad_variables: deprecated name of ``grad_tensors``.
        inputs (Tensor or sequence of Tensor or dict, optional): accumulate only into these tensors' ``.grad``
            (non-leaves included). Default: every leaf.
    """
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    ins = None if inputs is None else _input_list(inputs, "backward")
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        _warn_create_graph_once()
    if ins is not None:
        with _checkpoint_validity(False):
            gs = _run_engine(tensors, grads, retain_graph, create_graph, ins, True)
        for t, g in zip(ins, gs):
            if g is not None:
                _accumulate(t, g, create_graph)
        return
    with _checkpoint_validity(True):
        _run_engine(tensors, grads, retain_graph, create_graph, None, False)


def _check_batched(outs, gouts):
    """``is_grads_batched``: every grad_output of an output that requires grad is a batch of output-shaped
    tensors, all batches of one size."""
    sizes = set()
    for k, (o, g) in enumerate(zip(outs, gouts)):
        if g is None:
            if o.requires_grad:
                raise ValueError(f"is_grads_batched=True expects grad_output[{k}] to be a batch of gradients, but "
                                 "it is None")
            continue
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{k}] has a shape of {g.shape[1:]} and "
                f"output[{k}] has a shape of {o.shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
        sizes.add(g.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sorted(sizes)} for the mapped dimension")
    return sizes.pop() if sizes else 0


def _batched_grad(outs, ins, gouts, retain_graph, create_graph, allow_unused):
    """One vector-Jacobian product per row of the batched ``gouts``, stacked along dim 0 (None stays None)."""
    n = _check_batched(outs, gouts)
    rows = [grad(outs, ins, [None if g is None else g[b] for g in gouts],
                 retain_graph=True if b < n - 1 else retain_graph, create_graph=create_graph,
                 allow_unused=allow_unused)
            for b in range(n)]
    import oneflow

    return tuple(None if not rows or rows[0][k] is None else oneflow.stack([r[k] for r in rows], 0)
                 for k in range(len(ins)))


def _zeros_for(t, create_graph):
    z = _C.ops.mul(t.detach(), 0)
    return z.requires_grad_() if create_graph else z


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    r"""Returns the gradients of ``outputs`` w.r.t. ``inputs`` without touching ``.grad``.

    Args:
        outputs (Tensor or sequence of Tensor): the outputs to differentiate.
        inputs (Tensor or sequence of Tensor or dict of Tensor): what to differentiate with respect to; with a
            dict the result is a dict with the same keys.
        grad_outputs (Tensor or sequence of Tensor or None, optional): the vector of the vector-Jacobian product,
            one per output (None for scalars or outputs that do not require grad). Default: None.
        retain_graph (bool, optional): keep the graph for another backward. Default: ``create_graph``.
        create_graph (bool, optional): record the graph of the gradients. Default: False.
        only_inputs (bool, optional): deprecated and ignored.
        allow_unused (bool, optional): give None for inputs the outputs do not depend on, instead of raising.
            Default: ``materialize_grads``.
        is_grads_batched (bool, optional): dim 0 of every ``grad_outputs`` entry is a batch of vectors, each
            pulled back on its own, the results stacked along dim 0. Default: False.
        materialize_grads (bool, optional): zeros instead of None for unused inputs. Default: False.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_list(outputs)
    ins = _input_list(inputs, "grad")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use oneflow.autograd.backward.",
                      FutureWarning, stacklevel=2)
    # extra grad_outputs are ignored, as torch pairs them with the outputs
    gouts = (_as_list(grad_outputs) or [None] * len(outs))[:len(outs)]
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        res = _batched_grad(outs, ins, gouts, retain_graph, create_graph, allow_unused)
    else:
        with _checkpoint_validity(False):
            res = _run_engine(outs, gouts, retain_graph, create_graph, ins, allow_unused)
    if materialize_grads:  # zeros shaped like the input, batched or not, as in torch
        res = tuple(_zeros_for(i, create_graph) if r is None else r for r, i in zip(res, ins))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), res))
    return tuple(res)
