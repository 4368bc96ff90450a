"""The named-tuple types of ops returning several tensors, as in ``torch.return_types``: ``max(x, dim)``
returns a ``oneflow.return_types.max`` with fields ``values`` and ``indices``, and so on. Each name is the
type the op itself returns, so ``isinstance`` checks work, and the types pickle under these names."""
from ._ops import float_decomposition as _fd, histogramdd as _hdd, index as _index, linalg as _la, reduce as _red
from ._ops import signal as _signal
from . import linalg as _linalg

_TYPES = {
    "max": _red.max_return, "min": _red.min_return, "aminmax": _red.aminmax_return, "cummax": _red.cummax_return,
    "cummin": _red.cummin_return, "kthvalue": _red.kthvalue_return, "median": _red.median_return,
    "nanmedian": _red.nanmedian_return, "mode": _red.mode_return, "sort": _index.sort_return,
    "topk": _index.topk_return, "frexp": _fd.frexp_return, "histogram": _signal.histogram_return,
    "histogramdd": _hdd.histogramdd_return, "slogdet": _la.slogdet_return, "svd": _la.svd_return,
    "qr": _la.qr_return, "geqrf": _la.geqrf_return, "lu_unpack": _la.lu_unpack_return,
    "linalg_svd": _linalg.svd_return, "linalg_eigh": _linalg.eigh_return, "linalg_lstsq": _linalg.lstsq_return,
    "linalg_qr": _linalg.qr_return, "linalg_lu_factor_ex": _linalg.lu_factor_ex_return,
    "linalg_lu_factor": _linalg.lu_factor_return, "linalg_lu": _linalg.lu_return,
    "linalg_solve_ex": _linalg.solve_ex_return, "linalg_inv_ex": _linalg.inv_ex_return,
    "linalg_cholesky_ex": _linalg.cholesky_ex_return,
}

for _name, _cls in _TYPES.items():
    # Pickle finds a class by module and name: point both here, where the name is bound to the class (the
    # defining modules bind these names to the ops instead, so the types would not pickle from there).
    if _cls.__name__ == _name:
        _cls.__module__ = __name__
        _cls.__qualname__ = _name
    globals()[_name] = _cls

__all__ = sorted(_TYPES)
all_return_types = [_TYPES[n] for n in __all__]

del _name, _cls
