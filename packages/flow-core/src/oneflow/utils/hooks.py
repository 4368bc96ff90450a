"""Hook bookkeeping shared by ``nn.Module``, ``optim.Optimizer`` and anything else that keeps hooks in a dict
(PyTorch's ``torch.utils.hooks``). A leaf module: it imports nothing from oneflow, so ``nn`` and ``optim`` can use
it at import time without a cycle."""
import weakref

__all__ = ["RemovableHandle"]


def _ref(d):
    # a weak reference, so that a handle kept by the user does not keep a dead module's hooks alive; a plain
    # ``dict`` cannot be weakly referenced, and is then held strongly
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    r"""A handle that removes a hook from the dict it was registered in.

    The ``register_*_hook`` methods of :class:`oneflow.nn.Module` and :class:`oneflow.optim.Optimizer` return
    one. Used as a context manager, it removes the hook when the ``with`` block ends.

    Args:
        hooks_dict (dict): the dict, keyed by hook id, that holds the hook.
        extra_dict (dict or list of dicts, optional): further dicts (or sets) keyed by the same id, from which
            :meth:`remove` also removes it; for instance the record of which hooks take keyword arguments.

    Attributes:
        id (int): the hook's key in ``hooks_dict``, unique among all handles of the process.
    """

    # ids are unique across every dict, so one id can key a hook and its entries in any ``extra_dict``
    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif not isinstance(extra_dict, (list, tuple)):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)

    def remove(self):
        """Removes the hook; removing it twice, or after its dict is gone, does nothing."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is None:
                continue
            if isinstance(d, (set, frozenset)):
                d.discard(self.id)
            else:
                d.pop(self.id, None)

    def __getstate__(self):
        # weak references cannot be pickled: the state holds the dicts themselves (None for one that is gone)
        if not self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id)
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks_dict = {} if state[0] is None else state[0]
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 else ()
        self.extra_dict_ref = tuple(_ref({} if d is None else d) for d in extra)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.remove()
