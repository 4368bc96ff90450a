"""Custom differentiable operations in Python (``oneflow.autograd.Function``)."""
import functools

from .. import _C


class FunctionCtx:
    """The ``ctx`` handed to ``forward`` and ``backward``."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._released = False
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._dirty = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Saves tensors for ``backward``; an in-place change to any of them before backward is an error."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(t._version if t is not None else None for t in tensors)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Specify retain_graph=True if you need to backward through the graph a "
                "second time.")
        out = []
        for t, v in zip(self._saved, self._saved_versions):
            if isinstance(t, _C._SavedTensor):
                out.append(t.unpack())  # checks its own version
                continue
            if t is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype} {list(t.shape)}] is at version {t._version}; expected version {v} instead.")
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        """Declares inputs that ``forward`` modified in place: returned as outputs, they take the Function's
        history instead of being copied."""
        self._dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = value


class _FunctionMeta(type):
    pass


class Function(metaclass=_FunctionMeta):
    """Base class for custom autograd operations.

    Subclasses define ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static methods and are
    called through ``apply``::

        class Exp(Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override to fill ``ctx`` apart from ``forward``, which then takes no ``ctx`` (PyTorch's style)."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        ctx.needs_input_grad = tuple(isinstance(a, _C.TensorBase) and a.requires_grad for a in args)
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            if cls.setup_context is not Function.setup_context:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
        is_tuple = isinstance(outputs, tuple)
        outs = list(outputs) if is_tuple else [outputs]
        if prev and any(args[i].requires_grad for i in tensor_pos):
            inputs = [args[i] for i in tensor_pos]
            # an input returned as is becomes a new tensor so that its own history is not overwritten, unless
            # forward marked it dirty (modified in place): then it is the output and takes the new history
            for k, o in enumerate(outs):
                if isinstance(o, _C.TensorBase) and any(o is i for i in inputs):
                    if id(o) in ctx._dirty:
                        if o.is_leaf and o.requires_grad:
                            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                                               "operation.")
                        continue
                    outs[k] = _C.ops.view(o, list(o.shape))
            diff_outs = [o if isinstance(o, _C.TensorBase) and id(o) not in ctx._non_differentiable else None
                         for o in outs]
            # non-differentiable outputs still get zeros in backward when grads are materialised, as in torch
            shapes = [(list(o.shape), o.dtype) if isinstance(o, _C.TensorBase) else None for o in outs]

            def run_backward(grads):
                grads = list(grads)
                if ctx.materialize_grads:
                    for k, g in enumerate(grads):
                        if g is None and k < len(shapes) and shapes[k] is not None:
                            from .._ops import creation

                            grads[k] = creation.zeros(shapes[k][0], dtype=shapes[k][1])
                res = cls.backward(ctx, *grads)
                if not isinstance(res, tuple):
                    res = (res,)
                if len(res) > len(args) and all(r is None for r in res[len(args):]):
                    res = res[:len(args)]  # trailing Nones for extra arguments are accepted, as in torch
                if len(res) != len(args):
                    raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                       f"(expected {len(args)}, got {len(res)})")
                return tuple(res[i] for i in tensor_pos)

            def release():
                ctx._released = True
                ctx._saved = ()

            run_backward.release = release
            _C._make_function_node(run_backward, f"{cls.__name__}Backward", inputs, diff_outs)
            # Saved outputs become C++ saved tensors, as an op's are: kept without their history (a reference
            # to the output itself would form a cycle through the node that Python's GC cannot see), which
            # unpacking gives back, so second derivatives through them work. Under saved-tensor hooks every
            # saved tensor goes that way, to be packed (a pack hook's own saves are not packed again).
            out_ids = {id(o) for o in diff_outs if o is not None}
            hooks = _C._saved_tensor_hooks_active()
            ctx._saved = tuple(
                t if t is None or (id(t) not in out_ids and not hooks) else _C._save_tensor(t, id(t) in out_ids)
                for t in ctx._saved)
        return tuple(outs) if is_tuple else outs[0]


def once_differentiable(fn):
    """Marks a backward as not supporting double backward (runs it with grad mode off)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return fn(ctx, *args)
        finally:
            _C._set_grad_enabled(prev)

    return wrapper
