"""``assert_close`` and ``assert_allclose``: PyTorch's comparison rules and failure messages.

The inputs are walked first (nested sequences by position, mappings by key), pairing up the leaves; a leaf pair
is ``None``s, booleans, Python/NumPy numbers or tensor-likes. Structural problems (lengths, keys, unsupported
types, half-specified tolerances) raise before any value is compared; then the pairs are compared in order and
the first mismatch raises, naming the item's path in the containers."""
import cmath
import collections.abc
import warnings

import numpy as np

from .. import _C

# (rtol, atol) defaults per dtype; other dtypes compare exactly
_DTYPE_PRECISIONS = {_C.float16: (1e-3, 1e-5), _C.bfloat16: (1.6e-2, 1e-5), _C.float32: (1.3e-6, 1e-5),
                     _C.float64: (1e-7, 1e-7)}
# the dtypes whose tolerances Python numbers take
_NUMBER_DTYPES = {int: _C.int64, bool: _C.int64, float: _C.float64}
_COMPLEX_PRECISION = (1e-7, 1e-7)  # complex128's, for Python complex numbers


class _Failure(Exception):
    """A comparison failure: the exception type to raise, its message, and the failing item's path."""

    def __init__(self, exc_type, message, path=()):
        super().__init__(message)
        self.exc_type, self.message, self.path = exc_type, message, path

    def to_error(self, msg=None):
        if isinstance(msg, str):
            return self.exc_type(msg)
        text = self.message
        if self.path:
            text += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.path)}"
        return self.exc_type(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """The inputs are not of the kind a leaf comparison handles."""


def _tolerances(precisions, rtol, atol, path):
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*precisions)
    return max(rtols), max(atols)


def _dtype_precision(dtype):
    return _DTYPE_PRECISIONS.get(dtype, (0.0, 0.0))


def _mismatch_message(kind, extra, abs_diff, abs_idx, rel_diff, rel_idx, rtol, atol):
    """PyTorch's text: header, optional extra line, greatest absolute and relative differences (with the
    allowed tolerances unless the comparison is exact)."""
    exact = rtol == 0 and atol == 0

    def line(name, diff, idx, tol):
        if idx is None:
            text = f"{name.title()} difference: {diff}"
        else:
            text = f"Greatest {name} difference: {diff} at index {idx}"
        return text + ("" if exact else f" (up to {tol} allowed)") + "\n"

    msg = f"{kind} are not {'equal' if exact else 'close'}!\n\n"
    if extra:
        msg += extra.strip() + "\n"
    msg += line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_message(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, rel_diff, None,
                             rtol, atol)


class _NonePair:
    def __init__(self, actual, expected, path, **_):
        if actual is not None and expected is not None:
            raise _Unsupported
        self.actual, self.expected, self.path = actual, expected, path

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise _Failure(AssertionError, f"None mismatch: {self.actual} is not {self.expected}", self.path)


class _BoolPair:
    def __init__(self, actual, expected, path, **_):
        if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected, self.path = bool(actual), bool(expected), path

    def compare(self):
        if self.actual is not self.expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}", self.path)


class _NumberPair:
    def __init__(self, actual, expected, path, rtol=None, atol=None, equal_nan=False, check_dtype=False, **_):
        if not all(isinstance(v, (int, float, complex, np.number)) for v in (actual, expected)):
            raise _Unsupported
        actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
        self.actual, self.expected, self.path = actual, expected, path
        precisions = [_COMPLEX_PRECISION if isinstance(v, complex) else _dtype_precision(_NUMBER_DTYPES[type(v)])
                      for v in (actual, expected)]
        self.rtol, self.atol = _tolerances(precisions, rtol, atol, path)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise _Failure(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", self.path)
        if a == e or (self.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= self.atol + self.rtol * abs(e):
            return
        raise _Failure(AssertionError, _scalar_message(a, e, self.rtol, self.atol), self.path)


class _TensorPair:
    def __init__(self, actual, expected, path, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **_):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        self.actual, self.expected = (self._to_tensor(v) for v in (actual, expected))
        self.path = path
        precisions = [_dtype_precision(t.dtype) for t in (self.actual, self.expected)]
        self.rtol, self.atol = _tolerances(precisions, rtol, atol, path)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(value):
        if isinstance(value, _C.TensorBase):
            return value
        from .._ops.creation import tensor

        try:
            return tensor(value)
        except Exception:
            raise _Unsupported from None

    def _attribute_mismatch(self, name, a, e):
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", self.path)

    def compare(self):
        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._attribute_mismatch("shape", a.shape, e.shape)
        if a.layout != e.layout:
            if self.check_layout:
                self._attribute_mismatch("layout", a.layout, e.layout)
        elif self.check_stride and a.stride() != e.stride():
            self._attribute_mismatch("stride()", a.stride(), e.stride())
        if self.check_device and a.device != e.device:
            self._attribute_mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            self._attribute_mismatch("dtype", a.dtype, e.dtype)
        a, e = a.detach(), e.detach()
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            common = _C.promote_types(a.dtype, e.dtype)
            a, e = a.to(common), e.to(common)
        self._compare_values(a, e)

    def _compare_values(self, a, e):
        from .. import isclose

        matches = isclose(a, e, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
        if bool(matches.all()):
            return
        if a.dim() == 0:
            message = _scalar_message(a.item(), e.item(), self.rtol, self.atol)
        else:
            message = self._tensor_message(a, e, matches)
        raise _Failure(AssertionError, message, self.path)

    def _tensor_message(self, a, e, matches):
        from .. import max as _max

        total = matches.numel()
        mismatched = total - int(matches.sum().item())
        extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
        a, e, hit = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
        if not a.dtype.is_floating_point:
            # differences of integers, in a type wide enough not to overflow
            a, e = a.to(_C.int64), e.to(_C.int64)
        abs_diff = (a - e).abs().masked_fill(hit, 0)
        abs_max, abs_idx = _max(abs_diff, 0)
        rel_diff = (abs_diff / e.abs()).masked_fill(hit, 0)
        rel_max, rel_idx = _max(rel_diff, 0)
        shape = list(matches.shape)
        return _mismatch_message("Tensor-likes", extra, abs_max.item(), _unravel(int(abs_idx.item()), shape),
                                 rel_max.item(), _unravel(int(rel_idx.item()), shape), self.rtol, self.atol)


def _unravel(flat, shape):
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


_PAIR_TYPES = (_NonePair, _BoolPair, _NumberPair, _TensorPair)


def _pairs(actual, expected, path, options):
    """The leaf pairs of two (possibly nested) inputs, in order; raises a _Failure for structural problems."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           path)
        return [p for i in range(len(actual)) for p in _pairs(actual[i], expected[i], (*path, i), options)]
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        keys, expected_keys = set(actual.keys()), set(expected.keys())
        if keys != expected_keys:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {sorted(expected_keys - keys)}\n"
                                           f"Additional keys in the actual mapping: {sorted(keys - expected_keys)}",
                           path)
        try:
            keys = sorted(keys)  # a deterministic order, when the keys allow one
        except Exception:
            keys = list(keys)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*path, k), options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, path, **options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    r"""Asserts that ``actual`` and ``expected`` are close.

    Tensors (or tensor-likes of the same type, such as NumPy arrays) are close when their shapes match, their
    device, dtype, layout (and, if ``check_stride``, strides) match unless those checks are disabled, and every
    element satisfies

    .. math:: \lvert \text{actual} - \text{expected} \rvert \le \texttt{atol} + \texttt{rtol} \cdot
        \lvert \text{expected} \rvert

    (non-finite values must be equal; ``NaN``\ s only match with ``equal_nan``). Python numbers are compared the
    same way; ``None``\ s and booleans must be identical. Sequences (other than strings) and mappings are
    compared elementwise, recursively, and must have the same lengths / keys.

    If ``rtol`` and ``atol`` are omitted, they default by dtype (the loosest of the two inputs'):
    ``float16`` 1e-3 / 1e-5, ``bfloat16`` 1.6e-2 / 1e-5, ``float32`` 1.3e-6 / 1e-5, ``float64`` 1e-7 / 1e-7,
    others 0 / 0 (exact). Python ``int`` and ``float`` take ``int64``'s and ``float64``'s.

    Args:
        actual (Any): actual input.
        expected (Any): expected input.
        allow_subclasses (bool): if False, tensor-likes must be of exactly the same type. Default: True.
        rtol (float, optional): relative tolerance; must be given with ``atol``.
        atol (float, optional): absolute tolerance; must be given with ``rtol``.
        equal_nan (bool): whether two ``NaN``\ s are equal. Default: False.
        check_device (bool): whether tensors must be on the same device (else both are compared on the CPU).
        check_dtype (bool): whether dtypes (or Python number types) must match (else tensors are promoted to a
            common dtype). Default: True.
        check_layout (bool): whether layouts must match. Default: True.
        check_stride (bool): whether strides must match. Default: False.
        msg (str or Callable, optional): the message to raise on a value mismatch instead of the generated one,
            or a function of the generated message returning the one to raise.

    Raises:
        ValueError: if only one of ``rtol`` and ``atol`` is given.
        TypeError: if no comparison handles the inputs' types.
        AssertionError: if the inputs are not close. For tensors the message counts the mismatched elements and
            gives the greatest absolute and relative differences with their indices; for items of containers it
            names the failing item.
    """
    __tracebackhide__ = True  # keeps pytest's traceback on the caller
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        pairs = _pairs(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since PyTorch 1.12: use :func:`assert_close`.

    Converts non-tensor inputs to tensors (``expected`` with ``actual``'s dtype) and compares them with
    :func:`assert_close` without checking dtypes, with ``equal_nan=True`` by default and its own default
    tolerances: ``float16`` 1e-3 / 1e-3, ``float32`` 1e-4 / 1e-5, ``float64`` 1e-5 / 1e-8, others exact."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from .._ops.creation import tensor

    if not isinstance(actual, _C.TensorBase):
        actual = tensor(actual)
    if not isinstance(expected, _C.TensorBase):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        legacy = {_C.float16: (1e-3, 1e-3), _C.float32: (1e-4, 1e-5), _C.float64: (1e-5, 1e-8)}
        pairs = [legacy.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)

