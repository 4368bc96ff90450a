"""Custom differentiable operations in Python (``oneflow.autograd.Function``)."""
import functools
import inspect
import warnings
import weakref

from .. import _C

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.")

_INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `oneflow.no_grad()` instead of `oneflow.inference_mode()`.")


class FunctionCtx:
    """The ``ctx`` handed to ``forward`` (or ``setup_context``) and ``backward``. It is also what the outputs'
    ``grad_fn`` shows: attributes set on it in forward can be read there, as in PyTorch."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._released = False
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._dirty = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Saves tensors (or None) for ``backward``, which reads them back from :attr:`saved_tensors`; an
        in-place change to any of them before backward is an error. Other objects go on ``ctx`` as attributes."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(t._version if t is not None else None for t in tensors)

    def save_for_forward(self, *tensors):
        """Keeps tensors (or None) for a ``jvp`` formula, as ``ctx.saved_for_forward``."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.TensorBase):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should save "
                                     "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self):
        """The tensors given to :meth:`save_for_backward`, checked for in-place changes since."""
        if self._released:
            raise RuntimeError(_FREED_MESSAGE)
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
        """Declares outputs that have no gradient: they do not require grad, and backward gets zeros (or None,
        see :meth:`set_materialize_grads`) for them."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        """Declares inputs that ``forward`` modified in place: they must be returned as outputs, and take the
        Function's history instead of being copied."""
        self._dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        """With False, backward gets None instead of zeros for outputs that received no gradient."""
        self.materialize_grads = value


# The backward callable (which carries the ctx) of each live custom-Function node, keyed by the node's address
# (``hash(node)``) and held weakly: the node owns the callable. Looked up by ``Node.__getattr__`` so that
# ``y.grad_fn.saved_tensors`` and the attributes set on ctx work as in PyTorch, where grad_fn is the ctx. The
# weak reference's callback drops the entry when the node (hence its callable) dies.
_runner_of_node = {}


def _forget_node(key, ref):
    if _runner_of_node.get(key) is ref:  # another node may have taken the address since
        del _runner_of_node[key]


def _remember_ctx(node, run_backward):
    key = hash(node)
    _runner_of_node[key] = weakref.ref(run_backward, lambda ref: _forget_node(key, ref))


def _node_getattr(node, name):
    """Attributes a node lacks come from its Function's ctx (custom Function nodes only)."""
    ref = None if name.startswith("__") else _runner_of_node.get(hash(node))
    runner = ref() if ref is not None else None
    if runner is None:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    return getattr(runner.ctx, name)


_C.Node.__getattr__ = _node_getattr


class _FunctionMeta(type):
    pass


def _overrides(cls, name):
    return getattr(cls, name) is not getattr(Function, name)


@functools.lru_cache(maxsize=256)
def _signature(fn):
    return inspect.signature(fn)


def _bind_defaults(fn, args, kwargs):
    """(args, kwargs) of a call to ``fn`` with defaults filled in, as positional where possible: what a
    new-style ``setup_context`` sees as ``inputs``."""
    bound = _signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


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

    Alternatively ``forward(*args)`` takes no ``ctx`` and a ``setup_context(ctx, inputs, output)`` fills it.
    ``backward`` returns one gradient (or None) per argument of ``forward``; ``vjp`` may be defined instead.
    """

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will raise "
                      "an error in a future version.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method and call it through apply.")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward  # either may be overridden

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Not used: forward-mode AD differentiates the ops that ``forward`` runs (see ``forward_ad``)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override to fill ``ctx`` apart from ``forward``, which then takes no ``ctx`` (PyTorch's style)."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs ``forward`` (with grad mode off) and, when an input tensor requires grad and grad mode is on,
        attaches the Function's backward to the outputs."""
        new_style = _overrides(cls, "setup_context")
        if new_style:
            args, kwargs = _bind_defaults(cls.forward, args, kwargs)
        ctx = FunctionCtx()
        ctx._forward_cls = cls
        ctx.needs_input_grad = tuple(isinstance(a, _C.TensorBase) and a.requires_grad for a in args)
        recording = _C.is_grad_enabled() and any(ctx.needs_input_grad)
        outputs = _run_forward(cls, ctx, args, kwargs, new_style)
        is_tuple = isinstance(outputs, tuple)
        outs = list(outputs) if is_tuple else [outputs]
        _check_dirty_returned(ctx, outs)
        if recording:
            _record(cls, ctx, args, outs)
        else:
            for o in _dirty_outputs(ctx, outs):
                o._bump_version()
        return tuple(outs) if is_tuple else outs[0]


def _run_forward(cls, ctx, args, kwargs, new_style):
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        if new_style:
            outputs = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, outputs)
            return outputs
        return cls.forward(ctx, *args, **kwargs)
    finally:
        _C._set_grad_enabled(prev)


def _dirty_outputs(ctx, outs):
    return [o for o in outs if isinstance(o, _C.TensorBase) and id(o) in ctx._dirty]


def _check_dirty_returned(ctx, outs):
    if len({id(o) for o in _dirty_outputs(ctx, outs)}) != len(ctx._dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                           "The inputs that are modified inplace must all be outputs of the Function.")


def _record(cls, ctx, args, outs):
    """Attaches a node running ``cls.backward`` to the outputs in ``outs`` (replacing entries as needed)."""
    for t in ctx._saved:
        if t is not None and t.is_inference():
            raise RuntimeError(_INFERENCE_SAVE_MESSAGE)
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
    inputs = [args[i] for i in tensor_pos]
    # dirty views get the history through a copy into them (below), which their base sees; ``stand_in`` maps
    # the id of such a view to (the view, the fresh tensor that carries the node's output)
    stand_in = {}
    diff_outs = []
    for k, o in enumerate(outs):
        if not isinstance(o, _C.TensorBase):
            diff_outs.append(None)
            continue
        is_input = any(o is i for i in inputs)
        if id(o) in ctx._non_differentiable:
            if id(o) in ctx._dirty:
                o._bump_version()
            elif is_input:
                outs[k] = o.detach()  # an alias of the input without its history
            diff_outs.append(None)
        elif id(o) in ctx._dirty:
            diff_outs.append(_dirty_output(o, stand_in))
        elif is_input:
            # an input returned as is becomes a new tensor so that its own history is not overwritten
            outs[k] = _C.ops.view(o, list(o.shape))
            diff_outs.append(outs[k])
        else:
            diff_outs.append(o)
    run_backward = _backward_runner(cls, ctx, args, tensor_pos, outs)
    node = _C._make_function_node(run_backward, f"{cls.__name__}Backward", inputs, diff_outs)
    _remember_ctx(node, run_backward)
    for view, fresh in stand_in.values():
        _copy_with_history(view, fresh)
    _keep_saved(ctx, diff_outs, stand_in)


def _dirty_output(o, stand_in):
    """The tensor that takes the node's history for the dirty (modified in place) output ``o``."""
    if o.is_leaf and o.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    if o._base is None:
        o._bump_version()
        return o
    fresh = o.detach().clone()
    stand_in[id(o)] = (o, fresh)
    return fresh


def _copy_with_history(view, fresh):
    """Copies ``fresh`` (same values) into the dirty ``view`` with recording on, so that the view and its
    base route the modified elements' gradients through the Function's node; bumps the view's version."""
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(True)
    try:
        view.copy_(fresh)
    finally:
        _C._set_grad_enabled(prev)


def _keep_saved(ctx, diff_outs, stand_in):
    """Converts what forward saved into what backward reads.

    Saved outputs become C++ saved tensors, as an op's are: kept without their history (a reference to the
    output itself would form a cycle through the node that Python's GC cannot see), which unpacking gives back,
    so second derivatives through them work. Under saved-tensor hooks every saved tensor goes that way, to be
    packed (a pack hook's own saves are not packed again).
    """
    out_ids = {id(o) for o in diff_outs if o is not None} | set(stand_in)
    hooks = _C._saved_tensor_hooks_active()
    saved = []
    for t in ctx._saved:
        if t is not None and (id(t) in out_ids or hooks):
            t = _C._save_tensor(stand_in[id(t)][1] if id(t) in stand_in else t, id(t) in out_ids)
        saved.append(t)
    ctx._saved = tuple(saved)


def _backward_runner(cls, ctx, args, tensor_pos, outs):
    """The callable the node runs: ``cls.backward`` on the output gradients, checked, one gradient per tensor
    input."""
    # non-differentiable outputs still get zeros in backward when grads are materialised, as in torch
    shapes = [(list(o.shape), o.dtype) if isinstance(o, _C.TensorBase) else None for o in outs]

    def run_backward(grads):
        grads = _materialized(ctx, list(grads), shapes)
        res = _user_backward(cls)(ctx, *grads)
        res = _checked_grads(cls, args, res if isinstance(res, tuple) else (res,))
        return tuple(res[i] for i in tensor_pos)

    def release():
        ctx._released = True
        ctx._saved = ()

    run_backward.release = release
    run_backward.ctx = ctx
    return run_backward


def _user_backward(cls):
    has_backward, has_vjp = _overrides(cls, "backward"), _overrides(cls, "vjp")
    if has_backward and has_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return cls.vjp if has_vjp else cls.backward


def _materialized(ctx, grads, shapes):
    if ctx.materialize_grads:
        for k, g in enumerate(grads):
            if g is None and k < len(shapes) and shapes[k] is not None:
                from .._ops import creation

                grads[k] = creation.zeros(shapes[k][0], dtype=shapes[k][1])
    return grads


def _checked_grads(cls, args, res):
    """``backward``'s result, one entry per forward argument: the count, and None for non-tensor arguments."""
    if len(res) > len(args) and all(r is None for r in res[len(args):]):
        res = res[:len(args)]  # trailing Nones for extra arguments are accepted, as in torch
    if len(res) != len(args):
        raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients (expected "
                           f"{len(args)}, got {len(res)})")
    for i, (r, a) in enumerate(zip(res, args)):
        if r is None:
            continue
        if not isinstance(a, _C.TensorBase):
            raise RuntimeError(f"function {cls.__name__}Backward returned a gradient different than None at "
                               f"position {i + 1}, but the corresponding forward input was not a Variable")
        if not isinstance(r, _C.TensorBase):
            raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
    return res


def once_differentiable(fn):
    """Marks a ``backward`` as not differentiable: it runs with grad mode off, so its results have no history
    even under ``create_graph=True``. (PyTorch instead returns results that raise when differentiated; here
    they are constants, which the forward-mode transforms rely on to refuse such Functions.)"""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return fn(ctx, *args)
        finally:
            _C._set_grad_enabled(prev)

    return wrapper
