"""``oneflow.compile`` and the ``oneflow.compiler`` helpers, with PyTorch's signatures.

``compile`` validates its arguments as ``torch.compile`` does and returns a wrapper (for an ``nn.Module`` an
:class:`OptimizedModule` like PyTorch's, for a function a ``functools.wraps`` wrapper); ``Module.compile()``
compiles a module in place. A backend is a callable ``backend(model, example_inputs) -> callable`` (PyTorch's
contract, with the model itself in place of a traced graph), called at the first call; what it returns runs
that call and the later ones. Plugins register backends by name as the entry points ``compile_backend.<name>``
(see ``oneflow._plugins``), the built-in names included: flow-graph registers ``"graph"`` and ``"inductor"``
(the default), so ``compile(model)`` runs a compiled graph where flow-graph is installed. Without a plugin for
it a built-in name (``"inductor"``, ``"eager"``, ``"aot_eager"``) runs the model **eagerly**, so code written
for ``torch.compile`` runs unchanged and gives the eager results. ``is_compiling()`` is always False, and
``disable``, ``allow_in_graph`` and ``assume_constant_result`` only mark functions."""
import functools

from . import _plugins
from .nn.modules.module import Module

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "reset", "allow_in_graph",
           "assume_constant_result", "list_backends", "get_default_backend", "set_default_backend",
           "OptimizedModule", "InvalidBackend"]


class InvalidBackend(RuntimeError):
    """Raised by :func:`compile` for a backend name it does not know."""

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends.")


# The backend names accepted, with PyTorch's tags (``list_backends`` hides "debug" ones by default). They run
# eagerly unless a plugin registers the name.
_BACKENDS = {"inductor": (), "eager": ("debug",), "aot_eager": ("debug",)}
_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_state = {"default_backend": "inductor"}


def list_backends(exclude_tags=("debug", "experimental")):
    """Returns the names of the backends :func:`compile` accepts, leaving out those tagged with one of
    ``exclude_tags`` (``None`` lists all): the built-in ones, which run the model eagerly, and those of installed
    plugins (untagged)."""
    exclude = set(exclude_tags or ())
    builtin = [name for name, tags in _BACKENDS.items() if not exclude.intersection(tags)]
    return sorted(set(builtin) | set(_plugins.compile_backends()))


def _known_backend(name):
    return name in _BACKENDS or name in _plugins.compile_backends()


def get_default_backend():
    """The backend :func:`compile` uses when ``backend`` is None (``"inductor"`` unless changed)."""
    return _state["default_backend"]


def set_default_backend(backend):
    """Sets the backend :func:`compile` uses when ``backend`` is None (``None`` restores ``"inductor"``)."""
    if backend is not None and not callable(backend) and not _known_backend(backend):
        raise InvalidBackend(backend)
    _state["default_backend"] = "inductor" if backend is None else backend


def _check_options(backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if isinstance(backend, str):
        if not _known_backend(backend):
            raise InvalidBackend(backend)
        # PyTorch validates the mode for inductor only
        if backend == "inductor" and mode is not None and mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    elif not callable(backend):
        raise InvalidBackend(backend)
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, not {type(options).__name__}")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """Optimizes a model or function for later calls, as ``torch.compile`` does.

    .. note::
        flow-core has no graph compiler itself: with the built-in backends, unless a plugin registers their
        name (flow-graph registers ``"inductor"``), the result runs **eagerly**, with the same outputs,
        gradients and side effects as the original; a callable or plugin backend decides for itself. The other
        arguments are checked as PyTorch checks them and otherwise ignored.

    Usable as ``compile(model)``, as a decorator ``@compile``, or with arguments ``@compile(mode=...)``.

    Args:
        model (Callable or None): the ``nn.Module`` or function to optimize; ``None`` returns a decorator.
        fullgraph (bool): in PyTorch, require one graph for the whole function. Ignored.
        dynamic (bool or None): in PyTorch, shape dynamism of the traced graph. Ignored.
        backend (str or Callable): a name from :func:`list_backends` (or ``"eager"``, ``"aot_eager"``) or a
            callable ``backend(model, example_inputs) -> callable``; ``None`` uses :func:`get_default_backend`.
            A plugin's name resolves to its callable; an unknown name raises ``InvalidBackend``.
        mode (str): ``"default"``, ``"lite"``, ``"reduce-overhead"``, ``"max-autotune"`` or
            ``"max-autotune-no-cudagraphs"`` (checked for the inductor backend).
        options (dict): backend options; cannot be combined with ``mode``.
        name (str), recompile_limit (int), isolate_recompiles (bool), shapes_spec: accepted and ignored.
        disable (bool): return ``model`` itself (nothing to optimize).

    Returns:
        For an ``nn.Module``, an :class:`OptimizedModule` wrapping it (its ``state_dict`` keys start with
        ``_orig_mod.``, as in PyTorch); for a function, a wrapper calling it.
    """
    if model is None:
        def decorator(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)

        return decorator
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    backend = get_default_backend() if backend is None else backend
    _check_options(backend, mode, options)
    if disable:
        return model
    backend = _resolve(backend)
    if isinstance(model, Module):
        return OptimizedModule(model, backend)
    run = model if backend is None else _BackendCall(model, backend)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return run(*args, **kwargs)

    # PyTorch's marker of a compiled callable, which code uses to reach the original
    compiled._torchdynamo_orig_callable = model
    return compiled


def _resolve(backend):
    """The backend callable for ``backend`` (checked), or None to run eagerly. A name that an installed plugin
    registers is the plugin's, the built-in names included: flow-graph registers ``"inductor"``, the default,
    so that ``compile(model)`` traces a graph where it is installed and runs eagerly where it is not."""
    if not isinstance(backend, str):
        return backend
    found = _plugins.compile_backend(backend)
    if found is None and backend not in _BACKENDS:
        raise InvalidBackend(backend)
    return found


def _compile_in_place(module, *args, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,
                      name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """What ``Module.compile(...)`` stores in ``module._compiled_call_impl`` (None with ``disable=True``): the
    arguments are those of :func:`compile`, checked the same way."""
    if args:
        raise TypeError(f"Module.compile() takes the keyword arguments of oneflow.compile only, but got "
                        f"{len(args)} positional argument(s)")
    backend = get_default_backend() if backend is None else backend
    _check_options(backend, mode, options)
    if disable:
        return None
    return _CompiledModuleCall(module, _resolve(backend))


class _CompiledModuleCall:
    """The compiled ``__call__`` of a module compiled in place. The backend gets the module itself: while this
    call runs (``_running``), calling the module runs its eager body, so what the backend calls to trace it or
    to fall back does not come back here. ``backend`` None runs the module eagerly."""

    def __init__(self, module, backend):
        self.module, self.backend, self.compiled = module, backend, None
        self._running = 0

    def __call__(self, *args, **kwargs):
        self._running += 1
        try:
            if self.backend is None:
                return self.module(*args, **kwargs)
            if self.compiled is None:
                self.compiled = self.backend(self.module, list(args))
            return self.compiled(*args, **kwargs)
        finally:
            self._running -= 1

    def __reduce__(self):
        # what the backend compiled stays behind: a copy or an unpickled module compiles again at its first call
        return (_CompiledModuleCall, (self.module, self.backend))


class _BackendCall:
    """Runs ``model`` through ``backend``: ``backend(model, example_inputs)`` at the first call, then what it
    returned for that call and every later one."""

    def __init__(self, model, backend):
        self.model, self.backend, self.compiled = model, backend, None

    def __call__(self, *args, **kwargs):
        if self.compiled is None:
            self.compiled = self.backend(self.model, list(args))
        return self.compiled(*args, **kwargs)


class OptimizedModule(Module):
    """The module :func:`compile` returns for an ``nn.Module``: it holds the original as the child
    ``_orig_mod`` and runs it (eagerly here). Attribute reads and writes other than its own go to the original,
    ``training`` is the original's, and parameters are shared, so ``train()``/``eval()``, optimizers and
    ``load_state_dict`` act on the original; as in PyTorch, ``state_dict`` keys carry the ``_orig_mod.``
    prefix."""

    # the attributes that live on the wrapper itself; every other one belongs to the original module
    _opt_mod_attributes = {"_orig_mod", "forward", "_forward", "__dict__", "_super_module_initialized",
                           "_torchdynamo_orig_callable"}

    def __init__(self, mod, backend=None):
        # first, so that reads during Module.__init__ (which a subclass may trigger) can reach the original
        object.__setattr__(self, "_orig_mod", mod)
        self._super_module_initialized = False
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # now registered as the child module
        # calling the original through __call__ keeps its own hooks
        self.forward = mod.__call__ if backend is None else _BackendCall(mod, backend)
        self._torchdynamo_orig_callable = mod.__call__

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        # Module.__init__ sets the default; only later changes belong to the original
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self):
        own = list(self._orig_mod.__dir__())
        return own + [a for a in super().__dir__() if a not in own]

    def __reduce__(self):
        return (self.__class__, (self._orig_mod,))


def disable(fn=None, recursive=True, *, reason=None):
    """Marks ``fn`` as never to be compiled (usable as a decorator, with or without arguments). Nothing is
    compiled in this package, so the result just calls ``fn``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if isinstance(fn, Module):
        return fn

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return fn(*args, **kwargs)

    disabled._torchdynamo_disable = True
    return disabled


def is_compiling():
    """Whether the code runs while being compiled: always False, as everything here runs eagerly."""
    return False


def is_dynamo_compiling():
    """Whether the code runs while being traced by a graph compiler: always False (see :func:`is_compiling`)."""
    return False


def is_exporting():
    """Whether the code runs while being exported: always False (there is no exporter)."""
    return False


def reset():
    """Clears the compilation caches. There are none here, so this does nothing."""


def allow_in_graph(fn):
    """Tells the compiler to put ``fn`` into the graph as a call rather than trace into it; returns ``fn``
    (also a list of functions). A no-op here, nothing being traced."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, but got {type(fn).__name__}")
    return fn


def assume_constant_result(fn):
    """Tells the compiler that ``fn`` returns a constant it may fold; returns ``fn``, marked. A no-op here."""
    fn._dynamo_marked_constant = True
    return fn
