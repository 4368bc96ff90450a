"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``): run a piece of the model without keeping
its intermediate activations, and recompute them, with the same random numbers, when the backward pass
reaches it. Trades one extra forward of that piece for its activation memory.
"""
import functools
import warnings

import oneflow as flow

from .. import _C
from ..autograd import Function

__all__ = ["checkpoint", "checkpoint_sequential"]


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


_REENTRANT_GRAD_ERROR = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` parameter "
    "to .backward(). To resolve this error, you can either set use_reentrant=False, or call .backward() without "
    "passing the `inputs` argument.")


class _CheckpointFunction(Function):
    """Forward without a graph; backward recomputes the forward with grad on (from the saved RNG state) and
    back-propagates through the recomputed graph.

    Re-entrant form, and a non-re-entrant one whose function is not a module: the parameters inside get their
    ``.grad`` accumulated there, and the inputs' gradients are returned. Non-re-entrant form over a module (or
    a module's bound method): its parameters are inputs of this node as well and their gradients are returned
    like the inputs', so ``autograd.grad`` and ``backward(inputs=...)`` see them, and nothing else is touched.
    """

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, reentrant, n_args, anchor, *args_and_params):
        args = args_and_params[:n_args]
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.reentrant = reentrant
        ctx.params = args_and_params[n_args:]
        if preserve_rng_state:
            ctx.rng_state = flow.get_rng_state()
        ctx.plain = [None if _is_tensor(a) else a for a in args]
        ctx.tensor_idx = [i for i, a in enumerate(args) if _is_tensor(a)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_idx])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.reentrant and not flow.autograd._is_checkpoint_valid():
            raise RuntimeError(_REENTRANT_GRAD_ERROR)
        # Under create_graph (grad mode on in backward), the non-re-entrant form with known parameters
        # recomputes from the inputs themselves, so the gradients it returns stay functions of them for a
        # second derivative; otherwise from detached copies, so the recomputed graph ends there.
        create = bool(ctx.params) and _C.is_grad_enabled()
        args = list(ctx.plain)
        for i, t in zip(ctx.tensor_idx, ctx.saved_tensors):
            args[i] = t if create else t.detach().requires_grad_(t.requires_grad)
        now = flow.get_rng_state() if ctx.preserve_rng_state else None
        try:
            if ctx.preserve_rng_state:
                flow.set_rng_state(ctx.rng_state)
            with flow.enable_grad():
                outputs = ctx.run_function(*args)
        finally:
            if now is not None:
                flow.set_rng_state(now)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if _is_tensor(o) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        head = (None, None, None, None, None)
        if not ctx.params:
            flow.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
            return head + tuple(a.grad if _is_tensor(a) else None for a in args)
        # an argument that is one of the parameters (recomputed from itself under create_graph) has one
        # gradient, which goes to the parameter's slot
        pid = {id(p) for p in ctx.params}
        wanted = [a for a in args if _is_tensor(a) and a.requires_grad and id(a) not in pid] + list(ctx.params)
        got = iter(flow.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True,
                                      create_graph=create))
        arg_grads = tuple(next(got) if _is_tensor(a) and a.requires_grad and id(a) not in pid else None
                          for a in args)
        return head + arg_grads + tuple(got)


def _module_params(function):
    """The trainable parameters of ``function`` when it is a module or a module's bound method (unwrapping
    partials); None for any other callable. One that is also passed as an argument gets each path's
    gradient once (see _CheckpointFunction.backward)."""
    while isinstance(function, functools.partial):
        function = function.func
    owner = function if isinstance(function, flow.nn.Module) else getattr(function, "__self__", None)
    if not isinstance(owner, flow.nn.Module):
        return None
    return [p for p in owner.parameters() if p.requires_grad]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without saving its activations; recompute them during backward.

    Args:
        function: the piece of the model to run (a module or any callable).
        *args: its inputs. Tensors among them are saved (only those), everything else is kept by reference.
        use_reentrant (bool): ``True`` gives PyTorch's re-entrant form: the outputs require grad only if an
            input does, keyword arguments are refused, and the recomputed graph is back-propagated into the
            ``.grad`` of the parameters inside, so it serves ``loss.backward()`` only: ``autograd.grad`` and
            ``backward(inputs=...)`` raise PyTorch's error. ``False`` also gives parameters inside gradients
            when no input requires grad, and accepts keyword arguments; when ``function`` is a module (or a
            module's bound method) its parameters' gradients flow through the graph like the inputs', so
            ``autograd.grad`` with respect to them, ``backward(inputs=...)`` and second derivatives work too;
            for other callables the parameters inside get ``.grad`` accumulated as in the re-entrant form.
            ``None`` warns and uses ``True``, as PyTorch does.
        preserve_rng_state (bool): recompute with the random state of the forward (dropout draws the same
            masks). Default ``True``.
        context_fn, determinism_check, debug: accepted for compatibility; only their defaults are supported.

    Returns:
        The output of ``function``.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Pass "
            "use_reentrant=True or use_reentrant=False; use_reentrant=True is used now.", UserWarning, stacklevel=2)
        use_reentrant = True
    if context_fn is not None or determinism_check != "default" or debug:
        raise ValueError("checkpoint: context_fn, determinism_check and debug are not supported")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if _C.is_grad_enabled() and not any(_is_tensor(a) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
        return _CheckpointFunction.apply(function, preserve_rng_state, True, len(args), None, *args)
    params = _module_params(function) if _C.is_grad_enabled() else None
    if kwargs:
        function = functools.partial(function, **kwargs)
    # without parameters as inputs, a tensor that requires grad ties the outputs to the graph even when no
    # input requires grad, so that the parameters inside still receive gradients
    anchor = flow.zeros((), requires_grad=True) if _C.is_grad_enabled() and not params else None
    return _CheckpointFunction.apply(function, preserve_rng_state, False, len(args), anchor, *args, *(params or ()))


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model in ``segments`` chunks: every chunk but the last runs under
    :func:`checkpoint` (only the chunk boundaries keep activations); the last runs normally.

    Args:
        functions: an ``nn.Sequential`` or a list of modules/functions run in order.
        segments (int): how many chunks to create.
        input: the input of the first function.
        use_reentrant, preserve_rng_state: as for :func:`checkpoint`.
    """
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly; use_reentrant=True is used now.", UserWarning, stacklevel=2)
        use_reentrant = True

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if isinstance(functions, flow.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
