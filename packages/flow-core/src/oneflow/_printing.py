"""Tensor printing in PyTorch's format (a port of torch/_tensor_str.py's rules, over NumPy data).

``repr(t)`` gives ``tensor([...])`` with PyTorch's number formatting (fixed or scientific, chosen per tensor),
summarisation with ``...`` beyond ``threshold`` elements, line wrapping at ``linewidth`` and the suffixes
(``dtype=``, ``size=``, ``requires_grad=True``, ``grad_fn=<...>``). ``set_printoptions`` changes the options.
"""
import math

import numpy as np

from . import _C


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Sets printing options (as ``torch.set_printoptions``).

    precision: digits after the decimal point (default 4); threshold: element count above which the output is
    summarised (default 1000); edgeitems: items shown at each end of a summarised dimension (default 3);
    linewidth: characters per line (default 80); profile: "default", "short" or "full"; sci_mode: True/False
    forces scientific notation on/off, None picks it automatically.
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = (
                4, math.inf, 3, 80)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options as a dict."""
    return {k: getattr(PRINT_OPTS, k) for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Formatter:
    """Chooses one format for all values of a tensor: integer, fixed-point, integer-valued float or scientific."""

    def __init__(self, a):
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = a.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        vmin, vmax = absv.min(), absv.max()
        p = PRINT_OPTS.precision
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            with np.errstate(over="ignore"):  # a ratio beyond float64 (1e308 / 5e-324) is inf: scientific
                self.sci_mode = bool(vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{p}e}") for v in vals.tolist())
        elif self.int_mode:
            # integer-valued floats print as "3." : one more character
            self.max_width = max(len(f"{v:.0f}") + 1 for v in vals.tolist())
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in vals.tolist())

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a):
    """The elements a summarised print shows (edge items of every dimension), for the formatter."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] +
                  [_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt)
                   for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _numpy_data(t):
    t = t.detach()
    if t.dtype in (_C.float16, _C.bfloat16):  # PyTorch formats half types through float32 too
        t = _C.ops.to_dtype(t, _C.float32)
    return np.asarray(_C._to_numpy(t))


def _tensor_str(t, indent):
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    a = _numpy_data(t)
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _tensor_str_with_formatter(a, indent, summarize, fmt)


def _torch_len(suffix):
    """The length ``suffix`` has in PyTorch's output, where a dtype reads ``torch.`` rather than ``oneflow.``: line
    breaks are placed by that length, so that the output is PyTorch's with only the module name changed."""
    return len(suffix) - suffix.count("oneflow.") * (len("oneflow.") - len("torch."))


def _add_suffixes(tensor_str, suffixes, indent):
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + _torch_len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + _torch_len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += _torch_len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _dtype_str(d):
    return "oneflow." + str(d).split(".")[-1]


def tensor_repr(t, prefix="tensor("):
    """PyTorch's ``repr`` of a tensor, with ``oneflow`` in place of ``torch``."""
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = _C.get_default_dtype()
    if t.is_meta:
        suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != default:
            suffixes.append("dtype=" + _dtype_str(t.dtype))
        body = "..."
    elif t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != default:
            suffixes.append("dtype=" + _dtype_str(t.dtype))
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype not in (default, _C.int64, _C.bool):
            suffixes.append("dtype=" + _dtype_str(t.dtype))
        body = _tensor_str(t, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn_name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
