"""Recurrent layers: ``RNN`` (tanh/relu), ``LSTM`` (with optional projections), ``GRU`` and their cells, with
PyTorch's parameter names, shapes, initialisation and argument checks.

The input projection of every time step is one product over the whole sequence. For float32 the recurrence
then runs as one registry op per layer and direction (``_rnn_layer``: the recurrent weight packed once, fused
gate arithmetic, a C++ backward through time; packed sequences pass the number of rows still running at each
step). Other dtypes and autocast run step by step on registry ops: one ``addmm`` per gate and contiguous
pointwise ops, the steps split out with ``unbind`` (whose backward is a single stack), with per-step masks for
packed sequences."""
import math
import numbers
import warnings

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from ..utils import rnn as _rnn_utils
from .module import Module

ops = _C.ops

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _flow():
    import oneflow

    return oneflow


# ---- one time step of each cell kind ------------------------------------------------------------------
# Gates are kept as separate contiguous (N, H) blocks: each gate's weights are a contiguous row block of
# weight_ih / weight_hh, so every step runs one small addmm per gate and only contiguous pointwise ops
# (slicing one (N, G*H) product per step would feed strided views to every pointwise op).
def _gate_weights(w, n_gates, hs):
    """Transposed (in, H) views of the gate row blocks of ``w`` (G*H, in)."""
    return [ops.transpose(w.narrow(0, k * hs, hs), 0, 1) for k in range(n_gates)]


def _gate_biases(mode, b_ih, b_hh, n_gates, hs):
    """Per-gate biases folded into the input projection: both biases, except GRU's new gate (only b_in;
    its b_hn sits inside ``r * (h W_hn^T + b_hn)``)."""
    if b_ih is None:
        return [None] * n_gates
    out = []
    for k in range(n_gates):
        bi = b_ih.narrow(0, k * hs, hs)
        out.append(bi if mode == "GRU" and k == 2 else ops.add(bi, b_hh.narrow(0, k * hs, hs)))
    return out


def _input_projection(mode, x2d, w_ih, b_ih, b_hh, hs):
    """``x @ W_k^T + b_k`` for each gate k over all rows of ``x2d`` at once."""
    n_gates = w_ih.shape[0] // hs
    ws = _gate_weights(w_ih, n_gates, hs)
    bs = _gate_biases(mode, b_ih, b_hh, n_gates, hs)
    return [ops.matmul(x2d, w) if b is None else ops.addmm(b, x2d, w) for w, b in zip(ws, bs)]


def _rnn_step(xg, h, c, whh, b_hn, w_hr_t, relu):
    pre = ops.addmm(xg[0], h, whh[0])
    return (ops.relu(pre) if relu else ops.tanh(pre)), None


def _lstm_step(xg, h, c, whh, b_hn, w_hr_t, relu):
    i = ops.sigmoid(ops.addmm(xg[0], h, whh[0]))
    f = ops.sigmoid(ops.addmm(xg[1], h, whh[1]))
    g = ops.tanh(ops.addmm(xg[2], h, whh[2]))
    o = ops.sigmoid(ops.addmm(xg[3], h, whh[3]))
    c = ops.addcmul(ops.mul(f, c), i, g)
    h = ops.mul(o, ops.tanh(c))
    if w_hr_t is not None:
        h = ops.matmul(h, w_hr_t)
    return h, c


def _gru_step(xg, h, c, whh, b_hn, w_hr_t, relu):
    r = ops.sigmoid(ops.addmm(xg[0], h, whh[0]))
    z = ops.sigmoid(ops.addmm(xg[1], h, whh[1]))
    hn = ops.addmm(b_hn, h, whh[2]) if b_hn is not None else ops.matmul(h, whh[2])
    n = ops.tanh(ops.addcmul(xg[2], r, hn))
    # (1 - z) * n + z * h
    return ops.addcmul(n, z, ops.sub(h, n)), None


_STEPS = {"RNN_TANH": _rnn_step, "RNN_RELU": _rnn_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _fusable(x, tensors):
    float32 = _C.float32
    return (x.dtype == float32 and x.device.type == "cpu" and not _autocast_on()
            and all(t is None or (t.dtype == float32 and t.device.type == "cpu") for t in tensors))


def _run_fused(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, active=()):
    """The layer pass as one ``_rnn_layer`` op over the input projection of all steps; ``active[t]`` (packed
    input, rows sorted by decreasing length) is the number of rows still running at step t."""
    seq, n, feat = x.shape
    gh = w_hh.shape[0]
    b_hn = None
    bias = None
    if b_ih is not None:
        if mode == "GRU":  # b_hn stays inside r * (h W_hn^T + b_hn)
            hs = gh // 3
            bias = _flow().cat([ops.add(b_ih.narrow(0, 0, 2 * hs), b_hh.narrow(0, 0, 2 * hs)),
                                b_ih.narrow(0, 2 * hs, hs)])
            b_hn = b_hh.narrow(0, 2 * hs, hs)
        else:
            bias = ops.add(b_ih, b_hh)
    x2d = ops.reshape(x, [seq * n, feat])
    w_t = ops.transpose(w_ih, 0, 1)
    xg = ops.matmul(x2d, w_t) if bias is None else ops.addmm(bias, x2d, w_t)
    out, h_n, c_n, _ = ops._rnn_layer(ops.reshape(xg, [seq, n, gh]), h, c, w_hh, b_hn, w_hr, mode, reverse,
                                      list(active))
    return out, h_n, (c_n if mode == "LSTM" else None)


def _run_direction(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, active=None):
    """Runs one layer in one direction over ``x`` (L, N, in); returns (output (L, N, H_out), h_n, c_n).

    ``active[t]`` (packed input, rows sorted by decreasing length) is the number of sequences alive at step t:
    the state of the others is carried unchanged, so the forward direction ends at each sequence's last step
    and the reverse direction starts there."""
    if _fusable(x, (h, c, w_ih, w_hh, b_ih, b_hh, w_hr)):
        return _run_fused(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, active or ())
    seq, n, feat = x.shape
    masks = None
    if active is not None:  # (N, 1) bool per step: the first active[t] rows run
        rows = ops.unsqueeze(_flow().arange(n), 1)
        masks = [ops.lt(rows, a) for a in active]
    hs = w_hh.shape[0] // {"LSTM": 4, "GRU": 3}.get(mode, 1)
    xw = _input_projection(mode, ops.reshape(x, [seq * n, feat]), w_ih, b_ih, b_hh, hs)
    steps = [ops.unbind(ops.reshape(xk, [seq, n, hs]), 0) for xk in xw]
    step = _STEPS[mode]
    relu = mode == "RNN_RELU"
    whh = _gate_weights(w_hh, len(xw), hs)
    b_hn = b_hh.narrow(0, 2 * hs, hs) if mode == "GRU" and b_hh is not None else None
    w_hr_t = ops.transpose(w_hr, 0, 1) if w_hr is not None else None
    outs = [None] * seq
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        h_new, c_new = step([s[t] for s in steps], h, c, whh, b_hn, w_hr_t, relu)
        if masks is not None:
            h_new = ops.where(masks[t], h_new, h)
            c_new = ops.where(masks[t], c_new, c) if c is not None else None
        h, c = h_new, c_new
        outs[t] = h
    return _flow().stack(outs, 0), h, c


class RNNBase(Module):
    """Base class of ``RNN``, ``LSTM`` and ``GRU``: owns the per-layer, per-direction parameters."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        flow = _flow()
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(flow.empty(*shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with _flow().no_grad():
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def flatten_parameters(self):
        """No-op kept for PyTorch compatibility (weights are used in place)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- checks (PyTorch's RNNBase helpers, which subclasses may override) ----------------------------------
    def check_input(self, input, batch_sizes):
        """Raise if ``input`` (packed data when ``batch_sizes`` is given) has the wrong dtype, rank or width."""
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype != w.dtype and not _autocast_on():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes):
        """``(num_layers * num_directions, batch, proj_size or hidden_size)`` for ``input``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        """Raise RuntimeError (``msg`` formatted with the expected and actual sizes) unless ``hx`` has the
        expected size."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):
        """``check_input`` and the size of ``hidden``."""
        self.check_input(input, batch_sizes)
        expected_hidden_size = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden, expected_hidden_size)

    def permute_hidden(self, hx, permutation):
        """``hx`` with its batch dim (1) reordered by ``permutation`` (None: unchanged)."""
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ---- the recurrence ---------------------------------------------------------------------------------
    def _run(self, x, h0, c0, lengths=None):
        """x: (L, N, in) time-major; h0/c0: (layers * D, N, H). Returns output, h_n, c_n (c_n None unless LSTM).
        ``lengths`` (sorted sequence lengths of packed input) masks the steps past each sequence's end."""
        flow = _flow()
        active = None
        if lengths is not None:
            active = [int((lengths > t).sum()) for t in range(x.shape[0])]
        num_directions = 2 if self.bidirectional else 1
        h0s = ops.unbind(h0, 0)
        c0s = None
        if c0 is not None:
            c0s = ops.unbind(c0, 0)
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_directions):
                k = layer * num_directions + d
                names = self._all_weights[k]
                p = {n.split("_l")[0]: getattr(self, n) for n in names}
                out, h, c = _run_direction(self.mode, x, h0s[k], c0s[k] if c0s is not None else None,
                                           p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh"),
                                           p.get("weight_hr"), d == 1, active)
                outs.append(out)
                hn.append(h)
                cn.append(c)
            x = outs[0] if num_directions == 1 else flow.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, flow.stack(hn, 0), (flow.stack(cn, 0) if c0 is not None else None)

    def _forward(self, input, hx, name):
        flow = _flow()
        if _is_packed(input):
            return self._forward_packed(input, hx, name)
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name != 'LSTM' else ''}instead")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        num_directions = 2 if self.bidirectional else 1
        batch = input.shape[0] if self.batch_first else input.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = flow.zeros(self.num_layers * num_directions, batch, real_hidden, dtype=input.dtype)
            c0 = flow.zeros(self.num_layers * num_directions, batch, self.hidden_size, dtype=input.dtype) \
                if lstm else None
            self.check_input(input, None)
        else:
            if lstm:
                h0, c0 = hx
                want = 3 if is_batched else 2
                if h0.dim() != want or c0.dim() != want:
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                if not is_batched:
                    h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            else:
                h0, c0 = hx, None
                if is_batched and h0.dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.dim()}-D tensor")
                if not is_batched:
                    if h0.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D "
                                           "tensor")
                    h0 = h0.unsqueeze(1)
            self._check_forward_args(input, h0, c0, None)
        x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        out, hn, cn = self._run(x, h0, c0)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if cn is not None else None
        return out, ((hn, cn) if lstm else hn)

    def _forward_packed(self, packed, hx, name):
        """Runs packed input as a padded batch in sorted order with per-step masks; returns a PackedSequence."""
        flow = _flow()
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        self.check_input(data, batch_sizes)
        padded, lengths = _rnn_utils._unpack(data, batch_sizes, 0.0, None)
        num_directions = 2 if self.bidirectional else 1
        batch = padded.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = flow.zeros(self.num_layers * num_directions, batch, real_hidden, dtype=data.dtype)
            c0 = flow.zeros(self.num_layers * num_directions, batch, self.hidden_size, dtype=data.dtype) \
                if lstm else None
        else:
            hx = self.permute_hidden(hx, sorted_indices)
            h0, c0 = hx if lstm else (hx, None)
            self._check_forward_args(data, h0, c0, batch_sizes)
        out, hn, cn = self._run(padded, h0, c0, lengths)
        _, flat = _rnn_utils._packed_positions(lengths)
        out_data = out.reshape(out.shape[0] * batch, out.shape[2]).index_select(0, flow.tensor(flat, dtype=flow.int64))
        result = _rnn_utils.PackedSequence(out_data, batch_sizes, sorted_indices, unsorted_indices)
        return result, self.permute_hidden((hn, cn) if lstm else hn, unsorted_indices)

    def _check_forward_args(self, input, h0, c0, batch_sizes):
        # through the public method, so that a subclass overriding it is honoured as in torch
        self.check_forward_args(input, h0 if c0 is None else (h0, c0), batch_sizes)


def _is_packed(x):
    return type(x).__name__ == "PackedSequence"


def _autocast_on():
    """Whether CPU autocast is on (what this build's tensors run under)."""
    return bool(_C._autocast_enabled())


class RNN(RNNBase):
    """Multi-layer Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        nl = self.nonlinearity
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nl

    def forward(self, input, hx=None):
        return self._forward(input, hx, "RNN")


class LSTM(RNNBase):
    """Multi-layer LSTM with optional projections (``proj_size``).

    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        """``(num_layers * num_directions, batch, hidden_size)``: the size of the cell state for ``input``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        """``check_input`` and the sizes of ``hidden = (h, c)``."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        """``(h, c)`` with their batch dim reordered by ``permutation`` (None: unchanged)."""
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        return self._forward(input, hx, "LSTM")


class GRU(RNNBase):
    """Multi-layer gated recurrent unit; ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx, "GRU")


# ---- cells ------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Base of the single-step cells: ``weight_ih`` (chunks*H, in), ``weight_hh`` (chunks*H, H), biases."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        flow = _flow()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(flow.empty(num_chunks * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(flow.empty(num_chunks * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(flow.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(flow.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with _flow().no_grad():
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def _prep(self, name, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        is_batched = input.dim() == 2
        return (input if is_batched else input.unsqueeze(0)), is_batched

    def _hidden(self, hx, input, is_batched):
        if hx is None:
            return _flow().zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
        hx = hx if is_batched else hx.unsqueeze(0)
        if tuple(hx.shape) != (input.shape[0], self.hidden_size):
            if hx.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden batch size "
                                   f"{hx.shape[0]}")
            raise RuntimeError(f"hidden has inconsistent hidden_size: got {hx.shape[-1]}, expected "
                               f"{self.hidden_size}")
        return hx

    def _step(self, mode, input, h, c, relu=False):
        hs = self.hidden_size
        xg = _input_projection(mode, input, self.weight_ih, self.bias_ih, self.bias_hh, hs)
        whh = _gate_weights(self.weight_hh, len(xg), hs)
        b_hn = self.bias_hh.narrow(0, 2 * hs, hs) if mode == "GRU" and self.bias_hh is not None else None
        return _STEPS[mode](xg, h, c, whh, b_hn, None, relu)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, is_batched = self._prep("RNNCell", input, hx)
        h = self._hidden(hx, input, is_batched)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out, _ = self._step("RNN_TANH", input, h, None, self.nonlinearity == "relu")
        return out if is_batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)=None)`` returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        input, is_batched = self._prep("LSTMCell", input, hx)
        h = self._hidden(hx[0] if hx is not None else None, input, is_batched)
        c = self._hidden(hx[1] if hx is not None else None, input, is_batched)
        h, c = self._step("LSTM", input, h, c)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = (1 - z) * n + z * h``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, is_batched = self._prep("GRUCell", input, hx)
        h = self._hidden(hx, input, is_batched)
        out, _ = self._step("GRU", input, h, None)
        return out if is_batched else out.squeeze(0)
