"""``oneflow.placement``: a device type and an n-D array of ranks (its shape is the ``hierarchy``), the
layout of a global tensor over processes. A value: equal placements compare and hash equal."""
import numpy as np

from . import _world

__all__ = ["placement"]

_DEVICE_TYPES = ("cpu", "cuda")


class placement:
    """``placement(type, ranks)``: the ranks (a nested list or array of ints; its shape is the hierarchy, e.g.
    ``[[0, 1], [2, 3]]`` is a 2 x 2 mesh) on devices of ``type`` ("cpu" or "cuda"). Each rank appears once and
    lies in ``[0, world_size)``.

    Example::

        >>> p = flow.placement("cpu", ranks=[0, 1])
        >>> p.ranks, p.hierarchy
        (array([0, 1]), oneflow.Size([2]))
    """

    __slots__ = ("_type", "_ranks", "_key", "_hash")

    def __init__(self, type, ranks):
        if isinstance(type, str) is False:
            raise TypeError(f"placement(): type must be a str (\"cpu\" or \"cuda\"), got {type!r}")
        dev = type.split(":")[0]
        if dev not in _DEVICE_TYPES:
            raise ValueError(f"placement(): unknown device type {type!r}, expected one of {_DEVICE_TYPES}")
        if dev == "cuda":
            import oneflow as flow

            if not flow.cuda.is_available():
                raise RuntimeError("placement(): device type 'cuda' needs a CUDA build of flow-core with a GPU")
        if isinstance(ranks, range):
            ranks = list(ranks)
        try:
            arr = np.array(ranks)
        except ValueError:  # ragged nesting
            raise ValueError(f"placement(): ranks must form a rectangular array, got {ranks!r}") from None
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.size == 0:
            raise ValueError("placement(): ranks must not be empty")
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"placement(): ranks must be integers, got {ranks!r}")
        arr = arr.astype(np.int64)
        world = _world.world_size()
        bad = arr[(arr < 0) | (arr >= world)]
        if bad.size:
            raise ValueError(f"placement(): rank {int(bad[0])} is outside the world of {world} process(es) "
                             f"(ranks must be in [0, {world}))")
        if np.unique(arr).size != arr.size:
            raise ValueError(f"placement(): each rank may appear once, got {arr.tolist()}")
        arr.setflags(write=False)
        self._type = dev
        self._ranks = arr
        self._key = (dev, arr.shape, tuple(arr.reshape(-1).tolist()))
        self._hash = hash(self._key)  # placements key the per-op decision cache of global tensors

    @classmethod
    def all(cls, type):
        """The placement of every rank of the job on devices of ``type``, in one dimension."""
        return cls(type, ranks=list(range(_world.world_size())))

    @property
    def type(self):
        """The device type ("cpu" or "cuda")."""
        return self._type

    @property
    def ranks(self):
        """The ranks, as a read-only NumPy array shaped like the hierarchy."""
        return self._ranks

    @property
    def hierarchy(self):
        """The shape of the rank array (``oneflow.Size``)."""
        import oneflow as flow

        return flow.Size(self._ranks.shape)

    def __eq__(self, other):
        return self is other or isinstance(other, placement) and self._key == other._key

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"oneflow.placement(type=\"{self._type}\", ranks={self._ranks.tolist()})"

    def __reduce__(self):
        return (placement, (self._type, self._ranks.tolist()))

    # plain form in a graph's runtime state (flow-graph's oneflow_graph.plain_types)
    def __flow_plain__(self):
        return {"type": self._type, "ranks": self._ranks.tolist()}

    @classmethod
    def __flow_from_plain__(cls, data):
        if type(data) is not dict or set(data) != {"type", "ranks"}:
            raise ValueError(f"placement: a malformed plain form {data!r}")
        return cls(data["type"], data["ranks"])
