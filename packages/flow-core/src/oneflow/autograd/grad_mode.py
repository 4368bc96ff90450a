"""``oneflow.autograd.grad_mode`` (PyTorch's module path for the grad-mode context managers): ``no_grad``,
``enable_grad``, ``set_grad_enabled``, ``inference_mode``, and ``set_multithreading_enabled``."""
import functools

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled"]

class _GradModeBase:
    """Context manager and decorator that sets grad mode for its block (for a generator function: around each
    step of the generator, as in PyTorch). ``@no_grad`` also works without parentheses."""

    def __new__(cls, *args, **kwargs):
        if cls is not set_grad_enabled and len(args) == 1 and not kwargs and callable(args[0]) \
                and not isinstance(args[0], bool):
            return cls()(args[0])  # bare decorator: @no_grad
        return super().__new__(cls)

    def __call__(self, fn):
        import inspect

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.__class__(*self._args):
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.__class__(*self._args):
                            gen.close()
                        raise
                    except BaseException as e:  # passed on to the wrapped generator, under the mode
                        with self.__class__(*self._args):
                            response = gen.throw(e)
                        continue
                    with self.__class__(*self._args):
                        try:
                            response = gen.send(request)
                        except StopIteration as stop:
                            return stop.value

            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args = ()

    def clone(self):
        return self.__class__(*self._args)


class no_grad(_GradModeBase):
    """Disables gradient recording inside its block (context manager or decorator)."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class enable_grad(_GradModeBase):
    """Enables gradient recording inside its block (context manager or decorator)."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class set_grad_enabled(_GradModeBase):
    """Sets grad mode to ``mode``: immediately, and as a context manager restores it on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self.prev = _C.is_grad_enabled()
        self._args = (mode,)
        _C._set_grad_enabled(bool(mode))

    def __call__(self, fn):
        # decorating sets nothing: the mode applies inside the function only (constructing it set the mode)
        _C._set_grad_enabled(self.prev)
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class inference_mode(_GradModeBase):
    """Like ``no_grad``, and tensors made inside are marked as inference tensors."""

    def __init__(self, mode=True):
        self.mode = mode
        self._args = (mode,)

    def __enter__(self):
        self.prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
            _C._set_inference_mode(True)
        else:  # leaving inference mode turns recording back on, as in PyTorch
            _C._set_inference_mode(False)
            _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev[0])
        _C._set_inference_mode(self.prev[1])
        return False


_multithreading = [True]


class set_multithreading_enabled(_GradModeBase):
    """Context manager (or decorator) that turns multithreaded backward on or off, as PyTorch's: the flag is
    recorded and reported by ``is_multithreading_enabled``. This engine runs every backward on the calling
    thread (parallelism is inside the kernels), so the flag changes nothing else."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._args = (mode,)

    def __enter__(self):
        # set on entry only: PyTorch's guard object, made at construction, is released (and the setting
        # undone) as soon as the object is dropped, so the switch only lasts for a with block or a call
        self.prev = _multithreading[0]
        _multithreading[0] = self.mode

    def __exit__(self, *exc):
        _multithreading[0] = self.prev
        return False


def is_multithreading_enabled():
    """Whether multithreaded backward is enabled (see :class:`set_multithreading_enabled`)."""
    return _multithreading[0]
