"""Floating-point operation counts of the ops PyTorch's profiler estimates FLOPs for (``with_flops=True``).

Counts follow the usual convention: a multiply-add is two operations, an elementwise binary op one per output
element. Ops not listed here count as 0 and show ``--`` in tables.
"""
import math


def _numel(shape):
    return math.prod(shape) if shape is not None else 0


def _mm(s):
    (m, k), (_, n) = s[0], s[1]
    return 2 * m * k * n


def _bmm(s):
    (b, m, k), (_, _, n) = s[0], s[1]
    return 2 * b * m * k * n


def _addmm(s):
    return _mm(s[1:])


def _baddbmm(s):
    return _bmm(s[1:])


def _mv(s):
    m, k = s[0]
    return 2 * m * k


def _addmv(s):
    return _mv(s[1:])


def _dot(s):
    return 2 * _numel(s[0])


def _matmul(s, out):
    # every output element is a length-k dot product; k is the last dim of the first operand
    return 2 * _numel(out) * (s[0][-1] if s[0] else 1)


def _convolution(s, out, attrs):
    w = s[1]
    if attrs.get("transposed"):
        # each input element is scattered through a (C_out / groups) x kernel window
        return 2 * _numel(s[0]) * w[1] * _numel(w[2:])
    # each output element reduces a (C_in / groups) x kernel window
    return 2 * _numel(out) * w[1] * _numel(w[2:])


def _elementwise(s, out):
    return _numel(out)


_BY_INPUTS = {"mm": _mm, "bmm": _bmm, "addmm": _addmm, "addmm_": _addmm, "baddbmm": _baddbmm,
              "baddbmm_": _baddbmm, "mv": _mv, "addmv": _addmv, "addmv_": _addmv, "dot": _dot, "vdot": _dot}
_BY_OUTPUT = {"matmul": _matmul, "_batch_matmul": _matmul, "add": _elementwise, "add_": _elementwise,
              "sub": _elementwise, "sub_": _elementwise, "mul": _elementwise, "mul_": _elementwise,
              "div": _elementwise, "div_": _elementwise}


def estimate(name, shapes, out_shape, attrs):
    """FLOPs of registry op ``name`` given its tensor input ``shapes``, its (first) output's shape and its attrs;
    0 when the op is not one that is counted or the shapes do not fit."""
    try:
        if name in _BY_INPUTS:
            return int(_BY_INPUTS[name](shapes))
        if out_shape is None:
            return 0
        if name in _BY_OUTPUT:
            return int(_BY_OUTPUT[name](shapes, out_shape))
        if name == "convolution":
            return int(_convolution(shapes, out_shape, attrs))
    except (ValueError, TypeError, IndexError):
        pass  # unexpected ranks (e.g. a broadcasting overload): no estimate rather than a wrong one
    return 0
