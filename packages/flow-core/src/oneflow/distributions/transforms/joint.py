"""Transforms applied piecewise along a dimension: ``CatTransform`` and ``StackTransform``."""
import oneflow as flow

from .. import constraints
from ..utils import _sum_rightmost, lazy_property
from .base import Transform


def _check_slicing(t, dim, size):
    if not -t.dim() <= dim < t.dim():
        raise ValueError(f"dim {dim} out of range for a tensor of {t.dim()} dims")
    if t.shape[dim] != size:
        raise ValueError(f"expected size {size} along dim {dim}, got {t.shape[dim]}")


class CatTransform(Transform):
    """Applies the transforms ``tseq`` to consecutive pieces of lengths ``lengths`` (default 1 each) along
    ``dim`` and concatenates the results, like ``flow.cat``.

    Example::

        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 3])
    """

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise ValueError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, t):
        _check_slicing(t, self.dim, self.length)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [t.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _call(self, x):
        return flow.cat([t(p) for t, p in zip(self.transforms, self._pieces(x))], dim=self.dim)

    def _inverse(self, y):
        return flow.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for t, xs, ys in zip(self.transforms, self._pieces(x), self._pieces(y)):
            terms.append(_sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim))
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        # the pieces stay apart along a batch dim; within the events their log-Jacobians add up
        return flow.cat(terms, dim=dim) if dim < 0 else sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies the i-th transform of ``tseq`` to the i-th slice along ``dim`` and stacks the results, like
    ``flow.stack``.

    Example::

        >>> t = StackTransform([ExpTransform(), identity_transform], dim=1)
    """

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise ValueError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, t):
        _check_slicing(t, self.dim, len(self.transforms))
        return [t.select(self.dim, i) for i in range(t.shape[self.dim])]

    def _call(self, x):
        return flow.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y):
        return flow.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = [t.log_abs_det_jacobian(xs, ys)
                 for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y))]
        return flow.stack(terms, dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
