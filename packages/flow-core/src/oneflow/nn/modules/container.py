"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import islice

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent


class Sequential(Module):
    """Runs its modules in order: ``Sequential(a, b, c)(x) == c(b(a(x)))``. Also takes an OrderedDict."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, m in args[0].items():
                self.add_module(key, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        idx %= size
        return next(islice(iterator, idx, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        """A new Sequential with the modules of ``self`` then those of ``other`` (another Sequential)."""
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        ret = Sequential()
        for m in list(self) + list(other):
            ret.append(m)
        return ret

    def __iadd__(self, other):
        """Appends the modules of ``other`` (another Sequential) in place."""
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        for m in list(other):
            self.append(m)
        return self

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def __mul__(self, other):
        """The modules repeated ``other`` times (the same module objects, as in PyTorch)."""
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other):
        repeated = self * other
        self._modules = OrderedDict(repeated._modules)
        return self

    def insert(self, index, module):
        """Inserts ``module`` before position ``index`` (negative counts from the end, as for a list)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods = list(self._modules.values())
        mods.insert(index + n if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))
        return self

    def extend(self, sequential):
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for m in self:
            input = m(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so that their parameters are visible."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _idx(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._idx(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._idx(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in list(self._modules.keys())[idx]:
                del self._modules[k]
        else:
            del self._modules[self._idx(idx)]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))

    def extend(self, modules):
        """Appends the modules of the iterable ``modules``; returns ``self``."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def pop(self, key=-1):
        v = self[key]
        del self[key]
        return v

    def __repr__(self):
        """Like Module's, but a run of consecutive entries with the same repr is written once, as
        ``(first-last): count x repr`` (PyTorch's layout, which keeps deep stacks readable)."""
        if not self._modules:
            return "ModuleList()"
        runs = []  # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for first, last, r in runs:
            label = f"({first}): " if first == last else f"({first}-{last}): {last - first + 1} x "
            lines.append(_addindent(label + r, 2))
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Adds the modules of a mapping (in its order) or of an iterable of ``(key, module)`` pairs."""
        for k, m in _pairs(modules, "ModuleDict", "ModuleDict", sort_mappings=False):
            self[k] = m


def _pairs(items, name, update_name, sort_mappings):
    """The ``(key, value)`` pairs of a container's ``update`` argument, checked with torch's messages. Plain
    mappings are sorted by key when ``sort_mappings`` (ParameterDict's rule; ordered dicts and containers keep
    their order)."""
    if not isinstance(items, container_abcs.Iterable):
        raise TypeError(f"{update_name}.update should be called with an iterable of key/value pairs, but got "
                        + type(items).__name__)
    if isinstance(items, (OrderedDict, Module)) and hasattr(items, "items"):
        return list(items.items())
    if isinstance(items, container_abcs.Mapping):
        return sorted(items.items()) if sort_mappings else list(items.items())
    pairs = []
    for j, p in enumerate(items):
        if not isinstance(p, container_abcs.Iterable):
            raise TypeError(f"{name} update sequence element #{j} should be Iterable; is" + type(p).__name__)
        if not len(p) == 2:
            raise ValueError(f"{name} update sequence element #{j} has length {len(p)}; 2 is required")
        pairs.append((p[0], p[1]))
    return pairs


def _entry_repr(key, value, tensor_type_name):
    """One line of ParameterList/ParameterDict's repr (PyTorch's layout)."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    size = "x".join(str(d) for d in value.shape)
    device = "" if value.device.type == "cpu" else f" ({value.device})"
    return f"  ({key}): {kind} containing: [{tensor_type_name(value)} of size {size}{device}]"


def _as_entry(value):
    """What a parameter container stores for `value`: tensors become Parameters, anything else is kept."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters. Tensors are registered as Parameters (plain tensors wrapped); other objects are
    kept as they are, as in PyTorch."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _abs_index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, self._abs_index(idx))

    def __setitem__(self, idx, param):
        setattr(self, self._abs_index(idx), _as_entry(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, params):
        return self.extend(params)

    def append(self, value):
        self._size += 1
        setattr(self, str(self._size - 1), _as_entry(value))
        return self

    def extend(self, values):
        """Appends the values of the iterable ``values`` (a tensor is not taken as an iterable); returns
        ``self``."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(i, p, lambda t: str(t.dtype)) for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters. Tensors are registered as Parameters (plain tensors wrapped); other
    objects are kept as they are, as in PyTorch. Keys must be strings."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = OrderedDict()
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _check_key(key):
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")

    def __getitem__(self, key):
        self._check_key(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._check_key(key)
        self._keys[key] = None
        setattr(self, key, _as_entry(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Removes and returns the last inserted (key, value) pair."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def setdefault(self, key, default=None):
        """``self[key]``, first set to ``default`` when absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def copy(self):
        """A new ParameterDict holding the same objects."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    @classmethod
    def fromkeys(cls, keys, default=None):
        return cls((k, default) for k in keys)

    def update(self, parameters):
        """Adds the entries of a mapping or of an iterable of ``(key, value)`` pairs. As in torch, a plain
        (unordered) mapping is added in sorted key order; an ``OrderedDict`` or ``ParameterDict`` in its own."""
        for k, v in _pairs(parameters, "ParameterDict", "ParametersDict", sort_mappings=True):
            self[k] = v

    def __or__(self, other):
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other):
        merged = ParameterDict(other)
        merged.update(self)
        return merged

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(k, p, lambda t: t.type()) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
