"""Activation modules (``nn.ReLU``, ``nn.GELU``, ``nn.Softmax``, ``nn.PReLU``, ...), thin wrappers over
``oneflow.nn.functional`` with ``torch.nn``'s constructor arguments and ``extra_repr``."""
import warnings

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = [
    "ReLU", "ReLU6", "GELU", "SiLU", "Softplus", "ELU", "SELU", "CELU", "LeakyReLU", "Hardtanh", "Hardswish",
    "Hardsigmoid", "Mish", "LogSigmoid", "Softsign", "Tanhshrink", "Hardshrink", "Softshrink", "Threshold",
    "Sigmoid", "Tanh", "GLU", "PReLU", "RReLU", "Softmax", "LogSoftmax", "Softmin", "Softmax2d",
]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class _Inplace(Module):
    """Base of the activations whose only argument is ``inplace``."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class _Plain(Module):
    """Base of the activations without arguments."""

    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Inplace):
    """Applies ``max(0, x)`` elementwise."""

    _fn = staticmethod(F.relu)


class ReLU6(Module):
    """Applies ``min(max(0, x), 6)`` elementwise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.min_val, self.max_val = 0.0, 6.0

    def forward(self, input):
        return F.relu6(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class SiLU(_Inplace):
    """Applies ``x * sigmoid(x)`` elementwise."""

    _fn = staticmethod(F.silu)


class SELU(_Inplace):
    """Applies the scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class Hardswish(_Inplace):
    """Applies ``x * relu6(x + 3) / 6`` elementwise."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self):  # PyTorch shows no arguments for this one
        return ""


class Hardsigmoid(_Inplace):
    """Applies ``relu6(x + 3) / 6`` elementwise."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):  # PyTorch shows no arguments for this one
        return ""


class Mish(_Inplace):
    """Applies ``x * tanh(softplus(x))`` elementwise."""

    _fn = staticmethod(F.mish)


class GELU(Module):
    """Applies the Gaussian error linear unit; ``approximate='tanh'`` uses the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate argument must be either none or tanh, got {approximate}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """Applies ``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """Applies ``x if x > 0 else alpha * (exp(x) - 1)``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class LeakyReLU(Module):
    """Applies ``x if x > 0 else negative_slope * x``."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Hardtanh(Module):
    """Clamps the input to ``[min_val, max_val]``."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class LogSigmoid(_Plain):
    """Applies ``log(sigmoid(x))``."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    """Applies ``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    """Applies ``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)


class Sigmoid(_Plain):
    """Applies ``1 / (1 + exp(-x))``."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    """Applies the hyperbolic tangent."""

    _fn = staticmethod(F.tanh)


class Hardshrink(Module):
    """Keeps ``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrinks ``x`` towards 0 by ``lambd``; 0 inside ``[-lambd, lambd]``."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` over the two halves of ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """``max(0, x) + a * min(0, x)`` with a learnable slope ``a`` (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_flow().full([num_parameters], float(init), dtype=dtype))

    def reset_parameters(self):
        with _no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


def _flow():
    import oneflow

    return oneflow


def _no_grad():
    return _flow().no_grad()


class RReLU(Module):
    """Leaky ReLU whose negative slope is drawn from ``U(lower, upper)`` per element while training and is
    ``(lower + upper) / 2`` in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log of the softmax along ``dim``."""

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(Softmax):
    """Softmax of ``-input`` along ``dim``."""

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


def __getattr__(name):
    # torch.nn.modules.activation defines MultiheadAttention; ours lives in transformer.py, which imports this
    # module, so the alias is looked up on first use
    if name == "MultiheadAttention":
        from .transformer import MultiheadAttention

        return MultiheadAttention
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
