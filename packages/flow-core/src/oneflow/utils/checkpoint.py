"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``): run a piece of the model without keeping
its intermediate activations, and recompute them, with the same random numbers, when the backward pass
reaches it. Trades one extra forward of that piece for its activation memory.
"""
import contextlib
import itertools
import threading
import warnings

from .. import _C
from ..amp.autocast_mode import autocast as _autocast
from ..amp.autocast_mode import get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from ..autograd import Function, _is_checkpoint_valid, backward, enable_grad
from ..autograd.graph import saved_tensors_hooks
from ..nn.modules.container import Sequential
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]

_recompute_ids = itertools.count(1)
_recomputing = threading.local()  # .stack: ids of the recomputations running on this thread, innermost last


def recomputing():
    """The id of the checkpointed region whose forward is being recomputed on this thread (the innermost one),
    or None outside a recomputation. A graph tracer tags the ops it records then with it, so that its passes
    keep the recomputation apart from the forward it repeats."""
    stack = getattr(_recomputing, "stack", None)
    return stack[-1] if stack else None

_REENTRANT_GRAD_ERROR = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` parameter "
    "to .backward(). To resolve this error, you can either set use_reentrant=False, or call .backward() without "
    "passing the `inputs` argument.")


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


class CheckpointError(RuntimeError):
    """The recomputation of a checkpointed region did not save what its forward saved."""


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _forward_state(preserve_rng_state):
    """What a recomputation must replay of the forward: its random state (when asked) and its autocast."""
    autocast = {"device_type": "cpu", "dtype": get_autocast_dtype("cpu"), "enabled": is_autocast_enabled("cpu"),
                "cache_enabled": is_autocast_cache_enabled()}
    return (get_rng_state() if preserve_rng_state else None), autocast


@contextlib.contextmanager
def _replaying(state):
    """Runs the block in the forward's random and autocast state (see _forward_state); the caller's are
    restored after."""
    rng_state, autocast = state
    stack = _recomputing.__dict__.setdefault("stack", [])
    stack.append(next(_recompute_ids))
    try:
        with fork_rng(enabled=rng_state is not None), _autocast(**autocast):
            if rng_state is not None:
                set_rng_state(rng_state)
            yield
    finally:
        stack.pop()


class _CheckpointFunction(Function):
    """The re-entrant form: forward without a graph; backward recomputes the forward with grad on (from the
    saved RNG state), back-propagates through the recomputed graph into the ``.grad`` of the parameters
    inside, and returns the inputs' gradients."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.forward_state = _forward_state(preserve_rng_state)
        ctx.plain = [None if _is_tensor(a) else a for a in args]
        ctx.tensor_idx = [i for i, a in enumerate(args) if _is_tensor(a)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_idx])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _is_checkpoint_valid():
            raise RuntimeError(_REENTRANT_GRAD_ERROR)
        args = list(ctx.plain)
        for i, t in zip(ctx.tensor_idx, ctx.saved_tensors):
            args[i] = t.detach().requires_grad_(t.requires_grad)
        with _replaying(ctx.forward_state), enable_grad():
            outputs = ctx.run_function(*args)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if _is_tensor(o) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if _is_tensor(a) else None for a in args)


def _metadata(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


class _Placeholder:
    """What the graph keeps for a saved tensor of a checkpointed region (the tensor itself is dropped)."""

    __slots__ = ("frame", "idx")

    def __init__(self, frame, idx):
        self.frame = frame
        self.idx = idx


class _Frame:
    """One non-re-entrant checkpointed call. Its forward records the graph as usual, but every tensor the
    graph saves is replaced by a placeholder. The first unpack reruns the region and hands out the tensors
    the rerun saved, detached and matched by save order; unpacking re-attaches each one's original history,
    so second derivatives flow through the original graph. The rerun may save more than the forward had when
    it ran (an ``autograd.grad`` inside the region unpacks before the forward is over); fewer is an error."""

    def __init__(self, recompute, check):
        self.recompute = recompute
        self.check = check
        self.metadata = []
        self.recomputed = None

    def pack(self, t):
        self.metadata.append(_metadata(t) if self.check else None)
        return _Placeholder(self, len(self.metadata) - 1)

    def unpack(self, idx):
        if self.recomputed is None or idx >= len(self.recomputed):
            store = []

            def keep(t):
                store.append(t.detach())  # no reference to the rerun's graph, which is dropped at once
                return len(store) - 1

            with saved_tensors_hooks(keep, store.__getitem__), enable_grad():
                self.recompute()
            if len(store) <= idx or len(store) < len(self.metadata):
                raise CheckpointError(
                    "torch.utils.checkpoint: A different number of tensors was saved during the original forward "
                    f"and recomputation.\nNumber of tensors saved during forward: {len(self.metadata)}\nNumber "
                    f"of tensors saved during recomputation: {len(store)}.")
            if self.check:
                bad = "".join(f"tensor at position {i}:\nsaved metadata: {m}\nrecomputed metadata: {_metadata(t)}\n"
                              for i, (m, t) in enumerate(zip(self.metadata, store)) if m != _metadata(t))
                if bad:
                    raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors "
                                          f"have different metadata than during the forward pass.\n{bad}")
            self.recomputed = store
        return self.recomputed[idx]


def _check_input_versions(kept):
    for t, v in kept:
        if t._version != v:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{t.dtype} {list(t.shape)}], which is an input of a checkpointed region, is at version "
                f"{t._version}; expected version {v} instead.")


def _checkpoint_without_reentrant(function, args, kwargs, preserve_rng_state, context_fn, determinism_check):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    forward_state = _forward_state(preserve_rng_state)
    forward_ctx, recompute_ctx = context_fn()
    # The inputs are saved like any other tensor of the graph: through the enclosing saved-tensor hooks when
    # some are installed (an outer checkpoint, save_on_cpu), else kept with their versions, so that changing
    # one in place before backward is an error rather than a silently different recomputation.
    packed = _C._saved_tensor_hooks_active()
    tensor_idx = [i for i, a in enumerate(args) if _is_tensor(a)]
    held = [_C._save_tensor(args[i]) if packed else (args[i], args[i]._version) for i in tensor_idx]
    plain = [None if _is_tensor(a) else a for a in args]
    del args

    def recompute():
        inputs = list(plain)
        if not packed:
            _check_input_versions(held)
        for i, h in zip(tensor_idx, held):
            inputs[i] = h.unpack() if packed else h[0]
        with _replaying(forward_state), recompute_ctx:
            function(*inputs, **kwargs)

    frame = _Frame(recompute, determinism_check == "default")
    inputs = list(plain)
    for i, h in zip(tensor_idx, held):
        inputs[i] = h.unpack() if packed else h[0]
    with saved_tensors_hooks(frame.pack, lambda p: p.frame.unpack(p.idx)), forward_ctx:
        return function(*inputs, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without saving its activations; recompute them during backward.

    Args:
        function: the piece of the model to run (a module or any callable).
        *args: its inputs.
        use_reentrant (bool): ``False`` (recommended, as in PyTorch) records the region's graph as usual but
            keeps none of the tensors it saves for backward (saved-tensor hooks); the first backward that
            needs them reruns the region. Gradients then reach everything as without checkpointing: the
            parameters inside, ``autograd.grad``, ``backward(inputs=...)``, second derivatives; keyword
            arguments are passed on. ``True`` gives PyTorch's re-entrant form: forward without a graph (the
            outputs require grad only if an input does), keyword arguments refused, and backward reruns the
            region and back-propagates it into the ``.grad`` of the parameters inside, so ``autograd.grad``
            and ``backward(inputs=...)`` raise PyTorch's error. ``None`` warns and uses ``True``, as PyTorch
            does.
        context_fn: (non-re-entrant only) returns two context managers, entered around the forward and
            around the recomputation.
        determinism_check (str): ``"default"`` compares the shapes, dtypes and devices of what the
            recomputation saves with the forward's and raises :class:`CheckpointError` on a difference;
            ``"none"`` only checks their number.
        debug (bool): not supported (``True`` raises).
        preserve_rng_state (bool): recompute with the random state of the forward (dropout draws the same
            masks). Default ``True``.

    Returns:
        The output of ``function``.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Pass "
            "use_reentrant=True or use_reentrant=False; use_reentrant=True is used now.", UserWarning, stacklevel=2)
        use_reentrant = True
    if debug:
        raise ValueError("checkpoint: debug=True is not supported")
    if use_reentrant:
        if context_fn is not noop_context_fn and context_fn is not None:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if _C.is_grad_enabled() and not any(_is_tensor(a) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
        return _CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, args, kwargs, preserve_rng_state, context_fn or noop_context_fn,
                                         determinism_check)


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

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
