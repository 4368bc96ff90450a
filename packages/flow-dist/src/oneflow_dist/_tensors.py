"""Argument checks and buffer handling shared by the front ends (``oneflow.comm``, ``oneflow.distributed``)."""
import oneflow as flow


def check_tensor(t, op, name="tensor"):
    if not isinstance(t, flow.Tensor):
        raise TypeError(f"{op}(): {name} must be a oneflow.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise RuntimeError(f"{op}(): {name} is on {t.device}; this build's communicator (MPI) handles CPU tensors "
                           f"(NCCL for CUDA tensors needs a CUDA build)")
    return t


def check_list(ts, op, name, length=None):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{op}(): {name} must be a list of tensors, got {type(ts).__name__}")
    for i, t in enumerate(ts):
        check_tensor(t, op, f"{name}[{i}]")
    if length is not None and len(ts) != length:
        raise ValueError(f"{op}(): {name} must hold one tensor per rank ({length}), got {len(ts)}")
    return ts


def check_same(a, b, op, what="input and output"):
    if a.dtype != b.dtype:
        raise TypeError(f"{op}(): {what} must have the same dtype, got {a.dtype} and {b.dtype}")


class inplace:
    """``with inplace(t) as buf``: ``buf`` is ``t`` itself when it is contiguous, else a contiguous copy whose
    result is copied back into ``t`` on exit."""

    def __init__(self, t, copy_in=True):
        self.t = t
        self.copy_in = copy_in

    def __enter__(self):
        t = self.t.detach()
        self.copied = not t.is_contiguous()
        if not self.copied:
            self.buf = t
        else:
            self.buf = t.contiguous() if self.copy_in else flow.empty(tuple(t.shape), dtype=t.dtype)
        return self.buf

    def __exit__(self, *exc):
        if exc[0] is None and self.copied:
            self.t.detach().copy_(self.buf)
        return False


def flat_cat(ts, dtype):
    """The tensors flattened and concatenated into one new contiguous 1-D tensor."""
    if not ts:
        return flow.empty(0, dtype=dtype)
    return flow.cat([t.detach().reshape(-1) for t in ts])


def split_into(flat, outs):
    """Copies consecutive pieces of the 1-D ``flat`` into ``outs`` (each gets its numel)."""
    off = 0
    for o in outs:
        n = o.numel()
        o.detach().copy_(flat[off:off + n].view(tuple(o.shape)))
        off += n
