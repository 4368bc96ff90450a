"""Variable-length sequences for the recurrent layers (``oneflow.nn.utils.rnn``), as ``torch.nn.utils.rnn``:
``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``pad_sequence``, ``pack_sequence``,
``unpad_sequence`` and ``unpack_sequence``.

Packing and unpacking are single ``index_select`` gathers (one op, whose backward is one index_add), not one
slice per time step."""
from collections import namedtuple
from collections.abc import Iterable

import numpy as np

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence", "invert_permutation"]


def _flow():
    import oneflow

    return oneflow


def invert_permutation(permutation):
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    flow = _flow()
    p = permutation.numpy()
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=p.dtype)
    return flow.tensor(inv, dtype=flow.int64)


_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Time-major packed data of a batch of sequences: ``data`` holds the elements of time step 0 of every
    sequence, then of step 1 of those that are long enough, ...; ``batch_sizes[t]`` counts the sequences
    alive at step t (sorted by decreasing length; ``sorted_indices`` maps back to the caller's order)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """Dtype and/or device conversion of ``data`` (the indices follow its device; ``batch_sizes`` stays on
        the CPU); ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        """``to`` a CUDA device (the build's device error when it has none)."""
        ex = _flow().tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        """``to`` the CPU."""
        ex = _flow().tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def pin_memory(self):
        """A copy with ``data`` and the indices in page-locked memory (``batch_sizes`` is not moved)."""
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          None if self.sorted_indices is None else self.sorted_indices.pin_memory(),
                          None if self.unsorted_indices is None else self.unsorted_indices.pin_memory())

    def double(self):
        return self.to(dtype=_flow().float64)

    def float(self):
        return self.to(dtype=_flow().float32)

    def half(self):
        return self.to(dtype=_flow().float16)

    def bfloat16(self):
        return self.to(dtype=_flow().bfloat16)

    def long(self):
        return self.to(dtype=_flow().int64)

    def int(self):
        return self.to(dtype=_flow().int32)

    def short(self):
        return self.to(dtype=_flow().int16)

    def char(self):
        return self.to(dtype=_flow().int8)

    def byte(self):
        return self.to(dtype=_flow().uint8)

    @property
    def is_cuda(self):
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self):
        """Whether ``data`` is in page-locked memory."""
        return self.data.is_pinned()


def _lengths_array(lengths):
    flow = _flow()
    if isinstance(lengths, flow.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.dtype} tensor")
        return lengths.numpy().astype(np.int64)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _packed_positions(lengths):
    """batch_sizes and, for each packed row, its flat index ``t * N + b`` in a time-major (T, N) layout."""
    n = lengths.size
    steps = int(lengths.max()) if n else 0
    batch_sizes = np.array([(lengths > t).sum() for t in range(steps)], dtype=np.int64)
    flat = np.concatenate([t * n + np.arange(bs) for t, bs in enumerate(batch_sizes)]) if steps else \
        np.zeros(0, np.int64)
    return batch_sizes, flat.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of ``lengths``."""
    flow = _flow()
    lengths = _lengths_array(lengths)
    if input.numel() == 0 or len(lengths) == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if enforce_sorted:
        if np.any(lengths[:-1] < lengths[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = flow.tensor(order, dtype=flow.int64)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    steps, n = input.shape[0], input.shape[1]
    if lengths.size != n:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} (batch_size="
                           f"{n})")
    if n and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if n and lengths.max() > steps:
        raise RuntimeError(f"Expected sequence length to be at most {steps} (the padded length), but got "
                           f"{int(lengths.max())}")
    batch_sizes, flat = _packed_positions(lengths)
    rows = input.reshape(steps * n, *input.shape[2:])
    data = rows.index_select(0, flow.tensor(flat, dtype=flow.int64))
    return PackedSequence(data, flow.tensor(batch_sizes, dtype=flow.int64), sorted_indices, None)


def _unpack(data, batch_sizes, padding_value, total_length):
    """Packed rows -> time-major padded (T, N, *) in sorted order, and the sorted lengths."""
    flow = _flow()
    bs = batch_sizes.numpy().astype(np.int64)
    steps, n = bs.size, int(bs[0]) if bs.size else 0
    total = steps if total_length is None else total_length
    lengths = np.array([(bs > b).sum() for b in range(n)], dtype=np.int64)
    # index of each (t, b) cell into data, or the extra padding row appended after data
    where = np.full((total, n), data.shape[0], dtype=np.int64)
    pos = 0
    for t, k in enumerate(bs):
        where[t, :k] = np.arange(pos, pos + k)
        pos += k
    pad_row = flow.full([1, *data.shape[1:]], padding_value, dtype=data.dtype)
    src = flow.cat([data, pad_row], 0)
    out = src.index_select(0, flow.tensor(where.reshape(-1), dtype=flow.int64))
    return out.reshape(total, n, *data.shape[1:]), lengths


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of ``pack_padded_sequence``: returns the padded batch and the int64 lengths."""
    flow = _flow()
    max_len = sequence.batch_sizes.shape[0]
    if total_length is not None and total_length < max_len:
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but got "
                         f"total_length={total_length} and max sequence length being {max_len}")
    padded, lengths = _unpack(sequence.data, sequence.batch_sizes, padding_value, total_length)
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = flow.tensor(lengths, dtype=flow.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (T, B, *) (or (B, T, *)), padding with ``padding_value``."""
    flow = _flow()
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("pad_sequence: expected every sequence to have at least 1 dimension, but got a "
                           "0-dimensional tensor")
    longest = max(s.shape[0] for s in sequences)
    # like PyTorch, the result (and the padding) takes the first sequence's dtype
    dtype = sequences[0].dtype
    padded = []
    for s in sequences:
        s = s.to(dtype)
        missing = longest - s.shape[0]
        if missing:
            pad = flow.full([missing, *s.shape[1:]], padding_value, dtype=s.dtype)
            s = flow.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return flow.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of (L_i, *) tensors."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a padded batch back into the list of its sequences."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences, _lengths_array(lengths))]


def unpack_sequence(packed_sequences):
    """Splits a ``PackedSequence`` back into the list of its sequences."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
