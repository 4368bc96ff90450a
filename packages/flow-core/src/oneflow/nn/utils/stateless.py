"""``functional_call``: run a module with some of its parameters and buffers replaced by given tensors, for the
call only (PyTorch's ``torch.func.functional_call`` / ``torch.nn.utils.stateless.functional_call``): the
module's own tensors are put back afterwards, even when the call raises."""
import warnings
from collections import defaultdict

from ... import _C

__all__ = ["functional_call"]


def _merge(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    merged, seen_twice = {}, []
    for d in parameter_and_buffer_dicts:
        for k, v in d.items():
            if k in merged:
                seen_twice.append(k)
            merged[k] = v
    if seen_twice:
        raise ValueError(f"{sorted(set(seen_twice))} appeared in multiple dictionaries; behavior of functional call "
                         "is ambiguous")
    return merged


def _tie(module, tensors):
    """Extends ``tensors`` to every name of a tied parameter or buffer (one object under several names) when
    exactly one of those names was given."""
    names_of = defaultdict(list)
    for named in (module.named_parameters(remove_duplicate=False), module.named_buffers(remove_duplicate=False)):
        for name, t in named:
            names_of[id(t)].append(name)
    for names in names_of.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in tensors]
        if len({id(tensors[n]) for n in given}) > 1:  # the same tensor under several of the names is fine
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                             "Consider using tie_weights=False")
        if given:
            for n in names:
                tensors[n] = tensors[given[0]]


def _check_strict(module, tensors):
    expected = [n for n, _ in module.named_parameters(remove_duplicate=False)]
    expected += [n for n, _ in module.named_buffers(remove_duplicate=False)]
    missing = [n for n in expected if n not in tensors]
    unexpected = [n for n in tensors if n not in set(expected)]
    if missing or unexpected:
        lines = []
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in sorted(unexpected)) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in sorted(missing)) + ".")
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n" + "\n".join(lines))


_ABSENT = object()


def _swap(module, name, value):
    """Puts ``value`` where ``name`` (dotted) lives and returns what to restore: (owner, store, attr, old)."""
    path, _, attr = name.rpartition(".")
    owner = module.get_submodule(path) if path else module
    for store in ("_parameters", "_buffers"):
        d = owner.__dict__[store]
        if attr in d:
            old = d[attr]
            d[attr] = value
            return owner, store, attr, old
    old = owner.__dict__.get(attr, _ABSENT)
    object.__setattr__(owner, attr, value)  # not a parameter or buffer: a plain attribute for the call
    return owner, None, attr, old


def _restore(owner, store, attr, old):
    if store is not None:
        owner.__dict__[store][attr] = old
    elif old is _ABSENT:
        object.__delattr__(owner, attr)
    else:
        object.__setattr__(owner, attr, old)


def _functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Calls ``module(*args, **kwargs)`` with the parameters and buffers named in ``parameter_and_buffer_dicts``
    (a dict, or a sequence of dicts with no key in two of them) replaced by the given tensors for this call.

    Names are those of ``named_parameters`` / ``named_buffers``. With ``tie_weights`` a tensor given for one
    name of a tied parameter replaces it under all its names; with ``strict`` every parameter and buffer must
    be given and nothing else. Buffers a module updates in place (BatchNorm's running statistics in training)
    are updated in the given tensors; the module's own are left untouched."""
    tensors = _merge(parameter_and_buffer_dicts)
    for value in tensors.values():
        if not isinstance(value, _C.TensorBase):
            raise TypeError(f"{value!r} is not an instance of oneflow.Tensor")
    if tie_weights:
        _tie(module, tensors)
    if strict:
        _check_strict(module, tensors)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    saved = []
    try:
        for name, value in tensors.items():
            saved.append(_swap(module, name, value))
        return module(*args, **(kwargs or {}))
    finally:
        for entry in reversed(saved):
            _restore(*entry)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Deprecated spelling of :func:`oneflow.func.functional_call` (PyTorch's
    ``torch.nn.utils.stateless.functional_call``, whose second argument is named ``parameters_and_buffers``)."""
    warnings.warn("`oneflow.nn.utils.stateless.functional_call` is deprecated (as torch's is since PyTorch 2.0). "
                  "Please use `oneflow.func.functional_call` instead which is a drop-in replacement.", FutureWarning,
                  stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
