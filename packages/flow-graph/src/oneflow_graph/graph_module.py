import contextlib


@contextlib.contextmanager
def checkpoint_hooks(module):
    yield []
