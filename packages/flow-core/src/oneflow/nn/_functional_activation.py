"""Activation functions of ``oneflow.nn.functional`` (``inplace=True`` runs the in-place registry op)."""
from .. import _C
from .._ops._names import reject_dtype, torch_dtype_name

ops = _C.ops

__all__ = [
    "relu", "relu_", "relu6", "gelu", "silu", "softplus", "elu", "elu_", "selu", "celu", "leaky_relu",
    "leaky_relu_", "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "mish", "logsigmoid", "softsign",
    "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_", "sigmoid", "tanh", "glu", "prelu",
    "selu_", "celu_",
]


def relu(input, inplace=False):
    """max(0, x) elementwise."""
    return ops.relu_(input) if inplace else ops.relu(input)


def relu_(input):
    return ops.relu_(input)


def relu6(input, inplace=False):
    """min(max(0, x), 6) elementwise."""
    return ops.relu6_(input) if inplace else ops.relu6(input)


def gelu(input, approximate="none"):
    """x * Phi(x), with ``approximate='tanh'`` using the tanh approximation."""
    return ops.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return ops.silu_(input) if inplace else ops.silu(input)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    return ops.softplus(input, beta, threshold)


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    return ops.elu_(input, alpha) if inplace else ops.elu(input, alpha)


def elu_(input, alpha=1.0):
    return ops.elu_(input, alpha)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return ops.selu_(input) if inplace else ops.selu(input)


def selu_(input):
    """In-place ``selu``."""
    return ops.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return ops.celu_(input, alpha) if inplace else ops.celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place ``celu``."""
    return ops.celu_(input, alpha)


def prelu(input, weight):
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has 1 or C (channel dim 1) entries."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {torch_dtype_name(input.dtype)} and "
                           f"{torch_dtype_name(weight.dtype)}")
    reject_dtype("prelu_cpu", input, bool_ok=False, integral_ok=False)
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        shape = [1] * input.dim()
        shape[1] = n
        w = ops.reshape(weight, shape)
    else:
        w = ops.reshape(weight, [])
    # x > 0 ? x : w * x through registered ops (differentiable in x and w). The other branch multiplies w by x
    # with its positive entries zeroed, so x = inf gives inf (not inf - inf) and adds nothing to w's gradient;
    # 0 and NaN take the w branch, and -0 stays -0, as in torch.
    pos = ops.gt(input, 0)
    return ops.where(pos, input, ops.mul(w, ops.masked_fill(input, pos, 0.0)))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x."""
    return ops.leaky_relu_(input, negative_slope) if inplace else ops.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return ops.leaky_relu_(input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamps to [min_val, max_val]."""
    if min_val > max_val and not inplace:
        raise ValueError("min_val cannot be greater than max_val")
    return ops.hardtanh_(input, min_val, max_val) if inplace else ops.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place ``hardtanh``; as in PyTorch, ``min_val > max_val`` is not checked (everything becomes
    ``max_val``)."""
    return hardtanh(input, min_val, max_val, inplace=True)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return ops.hardswish_(input) if inplace else ops.hardswish(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return ops.hardsigmoid_(input) if inplace else ops.hardsigmoid(input)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return ops.mish_(input) if inplace else ops.mish(input)


def logsigmoid(input):
    """log(sigmoid(x)), computed stably."""
    return ops.log_sigmoid(input)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (ops.abs(input) + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    if input.dtype == _C.bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return input - ops.tanh(input)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return ops.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    return ops.softshrink(input, lambd)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return ops.threshold_(input, threshold, value) if inplace else ops.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return ops.threshold_(input, threshold, value)


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    return ops.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent."""
    return ops.tanh(input)


def glu(input, dim=-1):
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``."""
    reject_dtype("glu_cpu", input, bool_ok=False, integral_ok=False)
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.dim()
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim + n if dim < 0 else dim
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    h = size // 2
    a, b = input.narrow(d, 0, h), input.narrow(d, h, h)
    return a * ops.sigmoid(b)
