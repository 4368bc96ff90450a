"""``MultiheadAttention`` and the Transformer family (encoder/decoder layers and stacks, ``Transformer``), with
PyTorch's parameter names, defaults, mask conventions and argument checks."""
import copy
import math
import warnings

from ... import _C
from .. import functional as F
from .._functional_nn import _unmask_empty_rows
from .. import init
from ..parameter import Parameter
from .container import ModuleList
from .activation import GELU, ReLU
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from ._layer_utils import _factory
from .module import Module
from .normalization import LayerNorm

ops = _C.ops

__all__ = [
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerDecoder", "Transformer",
]


def _flow():
    import oneflow

    return oneflow


# ---- masks ----------------------------------------------------------------------------------------------
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """Bool masks become float masks with -inf where True; float masks pass through."""
    if mask is None:
        return None
    flow = _flow()
    if mask.dtype != flow.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.")
    if mask.dtype == flow.bool:
        return flow.zeros(*mask.shape, dtype=target_type).masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(t):
    if t is None:
        return None
    if isinstance(t, _C.TensorBase):
        return t.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Sequence-first (L, N, E) multi-head attention as ``torch.nn.functional.multi_head_attention_forward``.

    ``static_k``/``static_v`` (``(N * num_heads, S, head_dim)``) replace the projected keys/values. With
    ``is_causal``, ``attn_mask`` is taken as a hint that the mask is causal: when neither weights nor a key
    padding mask are asked for, a top-left causal mask is used in its place, as PyTorch's fused path does.
    """
    flow = _flow()
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    causal_hint = is_causal and key_padding_mask is None and not need_weights
    attn_mask = None if causal_hint else _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                                         check_other=False)
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    # in-projection: one matmul for self-attention, three otherwise
    if not use_separate_proj_weight:
        if query is key and key is value:
            qkv = F.linear(query, in_proj_weight, in_proj_bias)
            q, k, v = (qkv.narrow(-1, i * embed_dim, embed_dim) for i in range(3))
        else:
            ws = [in_proj_weight.narrow(0, i * embed_dim, embed_dim) for i in range(3)]
            bs = [in_proj_bias.narrow(0, i * embed_dim, embed_dim) if in_proj_bias is not None else None
                  for i in range(3)]
            q, k, v = (F.linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs))
    else:
        bs = [in_proj_bias.narrow(0, i * embed_dim, embed_dim) if in_proj_bias is not None else None
              for i in range(3)]
        q = F.linear(query, q_proj_weight, bs[0])
        k = F.linear(key, k_proj_weight, bs[1])
        v = F.linear(value, v_proj_weight, bs[2])

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {_size(attn_mask)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {_size(attn_mask)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        k = flow.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = flow.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be set or both be None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else \
        _static_kv(static_k, "static_k", bsz * num_heads, head_dim)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else \
        _static_kv(static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        zeros = flow.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k = flow.cat([k, zeros], 1)
        v = flow.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{_size(key_padding_mask)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if causal_hint:
        allowed = flow.ones(tgt_len, src_len, dtype=flow.bool).tril()
        attn_mask = flow.zeros(1, tgt_len, src_len, dtype=q.dtype).masked_fill(flow.logical_not(allowed), float("-inf"))
    if not training:
        dropout_p = 0.0

    scores = q * math.sqrt(1.0 / float(head_dim))
    kt = k.transpose(-2, -1)
    empty_rows = None
    if attn_mask is not None:
        # Without weights to return, PyTorch runs its fused attention, which gives a query that may attend to
        # no key zeros; the weights it does return keep softmax's NaN for such rows.
        if not need_weights:
            attn_mask, empty_rows = _unmask_empty_rows(attn_mask)
        scores = ops.baddbmm(attn_mask.expand(bsz * num_heads, tgt_len, src_len), scores, kt)
    else:
        scores = ops.bmm(scores, kt)
    weights = ops.softmax(scores, -1, None)
    if empty_rows is not None:
        weights = flow.where(empty_rows, flow.zeros((), dtype=weights.dtype), weights)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    out = ops.bmm(weights, v)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    # explicit sizes: a -1 cannot be inferred when the batch is empty
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, out_proj_weight.shape[0])
    if not is_batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        weights = weights.squeeze(0)
    return out, weights


def _size(t):
    return "torch.Size(" + str(list(t.shape)) + ")"


def _static_kv(t, name, rows, head_dim):
    if t.shape[0] != rows:
        raise AssertionError(f"expecting {name}.size(0) of {rows}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


class MultiheadAttention(Module):
    """Multi-head attention ``softmax(Q K^T / sqrt(d) + mask) V`` with learned in/out projections.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights or None)``."""

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        flow = _flow()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = _factory(device, dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(flow.empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(flow.empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(flow.empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(flow.empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(flow.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(flow.empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(flow.empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        with _flow().no_grad():
            if self.in_proj_bias is not None:
                self.in_proj_bias.fill_(0.0)
                self.out_proj.bias.fill_(0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights


# ---- Transformer ----------------------------------------------------------------------------------------
def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _relu_or_gelu(activation):
    """1 for ReLU, 2 for GELU, 0 otherwise: PyTorch's ``activation_relu_or_gelu`` attribute, which code reads
    to know whether a layer is eligible for the fused inference kernels."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    flow = _flow()
    if dtype is None:
        dtype = flow.get_default_dtype()
    return flow.triu(flow.full((sz, sz), float("-inf"), **_factory(device, dtype)), diagonal=1)


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


class TransformerEncoderLayer(Module):
    """Self-attention followed by a feed-forward block, each with residual, dropout and LayerNorm
    (post-norm by default, pre-norm with ``norm_first=True``)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        # layers pickled before ``activation`` was stored used ReLU
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and a feed-forward block, each with residual, dropout
    and LayerNorm."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _why_not_nested(layer):
    """Why PyTorch would not run a stack of `layer` on nested tensors ("" when it would)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    if layer.norm_first:
        return "encoder_layer.norm_first was True"
    if not layer.self_attn.batch_first:
        return ("encoder_layer.self_attn.batch_first was not True"
                "(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return "encoder_layer.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return "encoder_layer.self_attn was passed bias=False"
    if not getattr(layer, "activation_relu_or_gelu", 0):
        return "encoder_layer.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return "encoder_layer.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, optionally followed by ``norm``."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        # PyTorch runs eligible stacks on nested tensors in inference, which gives padded positions zeros
        # before the final norm; forward reproduces that output (computed densely here).
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}")
        self.use_nested_tensor = enable_nested_tensor and not why_not
        self.mask_check = mask_check

    def _nested_padding(self, src, mask, key_padding_mask):
        """The padded positions when PyTorch would take its nested-tensor path for this call (they then come
        out 0), else None."""
        if not (self.use_nested_tensor and not self.training and key_padding_mask is not None and mask is None
                and src.dim() == 3):
            return None
        flow = _flow()
        if flow.is_autocast_enabled():
            return None
        if flow.is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in self.parameters())):
            return None
        pad = key_padding_mask != 0
        if self.mask_check:  # padding only at the end of each sequence
            keep = ~pad
            if bool((keep[:, 1:] & ~keep[:, :-1]).any()):
                return None
        return pad

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", _none_or_dtype(mask),
                                               "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        pad = self._nested_padding(src, mask, src_key_padding_mask)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if pad is not None:
            output = output.masked_fill(pad.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer``, optionally followed by ``norm``."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, _get_seq_len(tgt, batch_first))
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need" (``d_model=512, nhead=8``, 6+6 layers)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, device=device, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, device=device, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.shape[0] != tgt.shape[0] and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
