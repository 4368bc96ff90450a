"""``record_function``: a named user range in profiler results."""
import functools

from . import _collector


class record_function:
    """Labels a block of code (context manager) or every call of a function (decorator) with ``name``.

    While a profiler records, the block appears as an event enclosing the ops issued inside it (the table's
    Self CPU of the range is what is not spent in those ops); otherwise it costs one global lookup. ``args`` is an
    optional string stored with the event (in the Chrome trace's args).

    Example::

        with oneflow.profiler.record_function("forward"):
            y = model(x)
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._open = []  # (collector, record) per nested entry, so one instance can be re-entered

    def __enter__(self):
        c = _collector.current()
        self._open.append((c, c.open_range(self.name, self.args)) if c is not None else None)
        return self

    def __exit__(self, *exc):
        entry = self._open.pop() if self._open else None
        if entry is not None and entry[0].recording:
            entry[0].close_range(entry[1])
        return False

    def __call__(self, fn):
        # a fresh instance per call keeps recursive and concurrent calls of the decorated function apart
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
