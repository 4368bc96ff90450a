"""``oneflow.nn.functional.rrelu``: leaky ReLU with a random negative slope while training."""
from .. import _C
from .._ops._names import reject_dtype

ops = _C.ops

__all__ = ["rrelu", "rrelu_"]


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """``a * x`` where ``x <= 0``, else ``x``, with ``a ~ U(lower, upper)`` per element in training and
    ``a = (lower + upper) / 2`` in evaluation."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return ops.leaky_relu_(input, (lower + upper) / 2) if inplace else ops.leaky_relu(input, (lower + upper) / 2)
    import oneflow

    reject_dtype("rrelu_with_noise_out_cpu", input, bool_ok=False, integral_ok=False)
    with oneflow.no_grad():
        slope = oneflow.empty_like(input).uniform_(lower, upper)  # the input's shape (0-D too) and device
        scale = oneflow.where(input <= 0, slope, oneflow.ones_like(slope))  # torch's branch: NaN gets slope 1
    out = ops.mul(input, scale)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)
