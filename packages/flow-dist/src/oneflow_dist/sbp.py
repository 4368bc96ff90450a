"""``oneflow.sbp``: how a global tensor's logical value lies over the ranks of one placement dimension.

- ``split(dim)``: each rank holds one slice of the tensor along ``dim``;
- ``broadcast``: each rank holds the whole tensor;
- ``partial_sum`` / ``partial_max``: each rank holds a tensor of the full shape; the value is their sum / maximum.

An n-D placement takes a tuple of them, one per hierarchy dimension (``(flow.sbp.broadcast,
flow.sbp.split(0))``). They are values: equal sbps compare and hash equal.
"""

__all__ = ["sbp", "split", "broadcast", "partial_sum", "partial_max"]


class sbp:
    """One SBP: ``kind`` is "split", "broadcast", "partial_sum" or "partial_max"; ``dim`` is the split dim (None
    for the others). Made by :func:`split` or taken from the module's constants."""

    __slots__ = ("_kind", "_dim", "_hash")

    def __init__(self, kind, dim=None):
        if kind not in ("split", "broadcast", "partial_sum", "partial_max"):
            raise ValueError(f"sbp: unknown kind {kind!r}")
        self._kind, self._dim = kind, dim
        self._hash = hash((kind, dim))

    @property
    def kind(self):
        return self._kind

    @property
    def dim(self):
        """The split dim (None unless a split)."""
        return self._dim

    def is_split(self):
        return self._kind == "split"

    def is_broadcast(self):
        return self._kind == "broadcast"

    def is_partial(self):
        return self._kind.startswith("partial")

    def __eq__(self, other):
        return isinstance(other, sbp) and (self._kind, self._dim) == (other._kind, other._dim)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"oneflow.sbp.split(dim={self._dim})" if self._kind == "split" else f"oneflow.sbp.{self._kind}"

    def __reduce__(self):
        return (sbp, (self._kind, self._dim))

    # plain form in a graph's runtime state (flow-graph's oneflow_graph.plain_types)
    def __flow_plain__(self):
        return {"kind": self._kind, "dim": self._dim}

    @classmethod
    def __flow_from_plain__(cls, data):
        if type(data) is not dict or set(data) != {"kind", "dim"}:
            raise ValueError(f"sbp: a malformed plain form {data!r}")
        if data["kind"] == "split":
            return split(data["dim"])
        if data["dim"] is not None:
            raise ValueError(f"sbp: a {data['kind']} sbp has no dim, got {data['dim']!r}")
        return cls(data["kind"])


def split(dim):
    """The SBP of a tensor split along ``dim`` (a non-negative int) over the ranks of one placement dimension,
    as evenly as possible (the first ranks hold one more row when the size does not divide)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"oneflow.sbp.split(): dim must be an int, got {type(dim).__name__}")
    if dim < 0:
        raise ValueError(f"oneflow.sbp.split(): dim must be non-negative, got {dim}")
    return sbp("split", dim)


broadcast = sbp("broadcast")
partial_sum = sbp("partial_sum")
partial_max = sbp("partial_max")
