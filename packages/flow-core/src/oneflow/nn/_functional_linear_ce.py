"""``linear_cross_entropy`` (PyTorch 2.13's ``torch.nn.functional.linear_cross_entropy``): cross entropy of a
linear projection, optionally computed in chunks of rows so the full ``(N, num_classes)`` logits never exist.

Without ``options`` it is ``cross_entropy(linear(input, W, b), target, ...)``. With a
:class:`LinearCrossEntropyOptions`, 2-D inputs with class-index targets and no label smoothing run the chunked
path, the registry op ``_linear_cross_entropy_chunked`` (ops/nnops_nll.cpp): the backward recomputes each chunk's
logits (the usual memory-for-compute trade of LLM vocabulary
heads). Other configurations fall back to the reference with a warning, as PyTorch's do."""
import dataclasses
import warnings

from .. import _C

ops = _C.ops

__all__ = ["linear_cross_entropy"]

# logits elements per chunk when the options give no batch_chunk_size (16 MiB of float32)
_AUTO_CHUNK_ELEMENTS = 1 << 22


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """Opts :func:`linear_cross_entropy` into its chunked implementation.

    Args:
        allow_retain_graph (bool): accepted for PyTorch compatibility (the chunked backward may run repeatedly).
        batch_chunk_size (int, optional): rows per chunk; None picks chunks of about 4M logits.
        chunking_method (str, optional): accepted for PyTorch compatibility ("auto").
        acc_policy (str): accepted for PyTorch compatibility; accumulation is in the input's dtype.
        acc_dtype (dtype, optional): accepted for PyTorch compatibility.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in ("accurate", "balanced", "compact", "auto"):
            raise ValueError(f"acc_policy must be one of 'accurate', 'balanced', 'compact', 'auto', got "
                             f"{self.acc_policy!r}")
        if self.batch_chunk_size is not None and self.batch_chunk_size <= 0:
            raise ValueError(f"batch_chunk_size must be positive, got {self.batch_chunk_size}")


def _reference(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing):
    from .functional import cross_entropy

    classes, in_features = linear_weight.shape[0], linear_weight.shape[-1]
    out_shape = list(linear_weight.shape[1:-1])
    w2 = ops.reshape(linear_weight, [-1, in_features])
    logits = ops.matmul(input, ops.transpose(w2, 0, 1))
    if out_shape:  # K-dimensional loss: classes first, then the extra output dims
        logits = ops.reshape(logits, list(input.shape[:-1]) + [classes] + out_shape)
    if linear_bias is not None:
        logits = ops.add(logits, linear_bias)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """The cross entropy of ``linear(input, linear_weight, linear_bias)`` against ``target``: the same value as
    ``cross_entropy(linear(input, linear_weight), target, ...)``. With ``options`` (a
    :class:`~oneflow.nn.LinearCrossEntropyOptions`), supported configurations run in row chunks without
    materializing the full logits.

    Args:
        input (Tensor): ``(N, in_features)`` or ``(in_features,)``.
        linear_weight (Tensor): ``(C, in_features)``, or ``(C, d_1, ..., d_K, in_features)`` for a
            K-dimensional loss.
        target (Tensor): class indices or class probabilities, as :func:`cross_entropy` takes them.
        linear_bias (Tensor, optional): ``(C,)`` or ``(C, d_1, ..., d_K)``.
        weight, reduction, ignore_index (None: -100), label_smoothing: as :func:`cross_entropy`.
        options (LinearCrossEntropyOptions, optional): opt in to the chunked implementation.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    chunkable = (input.dim() == 2 and linear_weight.dim() == 2 and target.dim() == 1
                 and not target.dtype.is_floating_point and label_smoothing == 0.0)
    if options is None or not chunkable:
        if options is not None:
            warnings.warn("linear_cross_entropy: this configuration is not supported by the chunked "
                          "implementation; using the reference implementation", stacklevel=2)
        return _reference(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                          label_smoothing)
    classes = linear_weight.shape[0]
    rows = options.batch_chunk_size or max(1, _AUTO_CHUNK_ELEMENTS // max(1, classes))
    ignore = -100 if ignore_index is None else ignore_index
    per_row, wt = ops._linear_cross_entropy_chunked(input, linear_weight, linear_bias, target, weight, ignore, rows)
    if reduction == "none":
        return per_row
    total = ops.sum(per_row, [0], False)
    return total if reduction == "sum" else ops.div(total, ops.sum(wt.detach(), [0], False))
