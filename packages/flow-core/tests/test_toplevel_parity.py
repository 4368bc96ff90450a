"""Top-level ``oneflow.*`` names against PyTorch: dtype limits, grids and index sets, distances, searches,
global switches and ``oneflow.backends``."""
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close, check_vs_torch

rng = np.random.default_rng(0)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
pytestmark = pytest.mark.filterwarnings("ignore:torch.searchsorted")
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def raises_like(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)


# ---------------------------------------------------------------------------------------------- finfo / iinfo


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    f, t = flow.finfo(getattr(flow, name)), torch.finfo(getattr(torch, name))
    for attr in ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]:
        assert getattr(f, attr) == getattr(t, attr), attr
        assert type(getattr(f, attr)) is type(getattr(t, attr)), attr
    assert repr(f) == repr(t) and str(f) == str(t)
    assert f == flow.finfo(getattr(flow, name)) and f != flow.finfo(flow.float64 if name != "float64" else flow.float32)


def test_finfo_default_follows_default_dtype():
    assert flow.finfo().dtype == "float32"
    flow.set_default_dtype(flow.float64)
    try:
        assert flow.finfo().dtype == "float64"
    finally:
        flow.set_default_dtype(flow.float32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    f, t = flow.iinfo(getattr(flow, name)), torch.iinfo(getattr(torch, name))
    for attr in ["bits", "max", "min", "dtype"]:
        assert getattr(f, attr) == getattr(t, attr) and type(getattr(f, attr)) is type(getattr(t, attr)), attr
    assert repr(f) == repr(t)


def test_finfo_iinfo_errors():
    raises_like(TypeError, "requires a floating point input type", flow.finfo, flow.int32)
    raises_like(TypeError, "requires an integer input type", flow.iinfo, flow.float32)
    raises_like(TypeError, "bool is not supported by oneflow.iinfo", flow.iinfo, flow.bool)
    raises_like(TypeError, "must be oneflow.dtype, not str", flow.finfo, "float32")
    with pytest.raises(TypeError):
        flow.iinfo()


def test_typename():
    assert flow.typename(flow.ones(1)) == "oneflow.FloatTensor"
    assert flow.typename(flow.ones(1, dtype=flow.int64)) == "oneflow.LongTensor"
    assert flow.typename(3) == torch.typename(3) == "int"
    assert flow.typename(flow.nn.Linear(1, 1)) == "oneflow.nn.modules.linear.Linear"
    assert flow.typename(np.zeros(1)) == torch.typename(np.zeros(1))
    assert flow.typename(flow.typename) == "oneflow._ops.dtype_info.typename"


# ---------------------------------------------------------------------------------------------------- meshgrid


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    arrays = [rng.standard_normal(3), rng.standard_normal(4), rng.standard_normal(2)]
    for k in (1, 2, 3):
        check_vs_torch(lambda *a: flow.meshgrid(*a, indexing=indexing),
                       lambda *a: torch.meshgrid(*a, indexing=indexing), arrays[:k])
    # a list, 0-D and empty inputs
    check_vs_torch(lambda a, b: flow.meshgrid([a, b], indexing=indexing),
                   lambda a, b: torch.meshgrid([a, b], indexing=indexing), [np.float64(2.0), np.zeros(0)])


def test_meshgrid_default_warns_and_is_ij():
    with pytest.warns(UserWarning, match="indexing"):
        out = flow.meshgrid(flow.arange(2), flow.arange(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.meshgrid(torch.arange(2), torch.arange(3))
    for o, r in zip(out, ref):
        assert_close(o, r)


def test_meshgrid_errors():
    raises_like(RuntimeError, 'indexing must be one of "xy" or "ij"', flow.meshgrid, flow.arange(2), indexing="foo")
    raises_like(RuntimeError, "non-empty TensorList", flow.meshgrid, indexing="ij")
    raises_like(RuntimeError, "Expected 0D or 1D tensor", flow.meshgrid, flow.zeros(2, 2), indexing="ij")
    raises_like(RuntimeError, "same dtype", flow.meshgrid, flow.arange(2), flow.zeros(2), indexing="ij")


# ------------------------------------------------------------------------------ cartesian_prod / combinations


def test_cartesian_prod():
    check_vs_torch(flow.cartesian_prod, torch.cartesian_prod, [rng.standard_normal(3), rng.standard_normal(2)])
    check_vs_torch(flow.cartesian_prod, torch.cartesian_prod,
                   [rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal(2)])
    check_vs_torch(flow.cartesian_prod, torch.cartesian_prod, [rng.standard_normal(3)])
    check_vs_torch(flow.cartesian_prod, torch.cartesian_prod, [np.zeros(0), rng.standard_normal(2)])
    assert_close(flow.cartesian_prod(flow.arange(2), flow.arange(3)), torch.cartesian_prod(torch.arange(2),
                                                                                            torch.arange(3)))
    raises_like(RuntimeError, "Expect a 1D vector", flow.cartesian_prod, flow.zeros(2, 2))


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(r, with_replacement):
    check_vs_torch(lambda x: flow.combinations(x, r, with_replacement),
                   lambda x: torch.combinations(x, r, with_replacement), [rng.standard_normal(4)])
    assert_close(flow.combinations(flow.arange(4), r=r, with_replacement=with_replacement),
                 torch.combinations(torch.arange(4), r=r, with_replacement=with_replacement))
    assert_close(flow.combinations(flow.arange(0), r=r, with_replacement=with_replacement),
                 torch.combinations(torch.arange(0), r=r, with_replacement=with_replacement))


def test_combinations_non_contiguous_and_errors():
    x = rng.standard_normal(8)
    check_vs_torch(lambda a: flow.combinations(a[::2]), lambda a: torch.combinations(a[::2]), [x])
    raises_like(RuntimeError, "Expect a non-negative number, but got -1", flow.combinations, flow.arange(3), r=-1)
    raises_like(RuntimeError, "Expect a 1D vector", flow.combinations, flow.zeros(2, 2))


# ------------------------------------------------------------------------------------ tril_indices / triu_indices


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 2), (0, 4), (4, 0), (1, 1)])
@pytest.mark.parametrize("offset", [-6, -2, -1, 0, 1, 3, 7])
def test_tri_indices(name, shape, offset):
    assert_close(getattr(flow, name)(*shape, offset), getattr(torch, name)(*shape, offset))


def test_tri_indices_dtype_and_errors():
    assert_close(flow.triu_indices(4, 3, 1, dtype=flow.int32), torch.triu_indices(4, 3, 1, dtype=torch.int32))
    assert_close(flow.tril_indices(4, 3, offset=-1), torch.tril_indices(4, 3, offset=-1))
    raises_like(NotImplementedError, "\"tril_indices\" not implemented for 'Float'", flow.tril_indices, 3, 3,
                dtype=flow.float32)
    raises_like(RuntimeError, "row must be non-negative", flow.triu_indices, -1, 3)
    raises_like(RuntimeError, "col must be non-negative", flow.tril_indices, 3, -2)


# ------------------------------------------------------------------------------------------------- block_diag


def test_block_diag():
    arrays = [rng.standard_normal((2, 3)), rng.standard_normal(2), np.float64(1.5), rng.standard_normal((3, 1)),
              np.zeros((0, 2)), np.zeros((2, 0))]
    check_vs_torch(flow.block_diag, torch.block_diag, arrays)
    check_vs_torch(lambda a: flow.block_diag(a.t()), lambda a: torch.block_diag(a.t()), [rng.standard_normal((2, 3))])
    assert_close(flow.block_diag(), torch.block_diag())
    mixed = flow.block_diag(flow.ones(2, dtype=flow.int64), flow.ones(1, 2))
    assert_close(mixed, torch.block_diag(torch.ones(2, dtype=torch.int64), torch.ones(1, 2)))
    raises_like(RuntimeError, "Input 1 has 3 dimensions", flow.block_diag, flow.ones(2), flow.ones(1, 2, 2))


# ------------------------------------------------------------------------------------------------------ cdist


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist(p):
    cases = [((4, 3), (5, 3)), ((2, 4, 3), (2, 5, 3)), ((2, 1, 4, 3), (3, 5, 3)), ((0, 3), (2, 3)),
             ((3, 0), (2, 0))]
    for s1, s2 in cases:
        check_vs_torch(lambda a, b: flow.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p),
                       [rng.standard_normal(s1), rng.standard_normal(s2)])
    # non-contiguous operands
    check_vs_torch(lambda a, b: flow.cdist(a.transpose(0, 1), b, p=p), lambda a, b: torch.cdist(a.transpose(0, 1), b, p=p),
                   [rng.standard_normal((3, 4)), rng.standard_normal((5, 3))])


def test_cdist_zero_distance_gradient_and_float32():
    x = rng.standard_normal((3, 4))
    for p in (1.0, 2.0, 3.0):
        check_vs_torch(lambda a: flow.cdist(a, a, p), lambda a: torch.cdist(a, a, p), [x])
    check_vs_torch(lambda a, b: flow.cdist(a, b), lambda a, b: torch.cdist(a, b),
                   [rng.standard_normal((30, 8)).astype(np.float32), rng.standard_normal((40, 8)).astype(np.float32)],
                   rtol=1e-4, atol=1e-4)


def test_cdist_errors():
    raises_like(RuntimeError, "at least 2D tensors, X1 got: 1D", flow.cdist, flow.zeros(3), flow.zeros(3))
    raises_like(RuntimeError, "X1: 3 X2: 4", flow.cdist, flow.zeros(2, 3), flow.zeros(2, 4))
    raises_like(RuntimeError, "non-negative p values", flow.cdist, flow.zeros(2, 3), flow.zeros(2, 3), p=-1)
    raises_like(RuntimeError, "floating-point dtypes, X1 got: Long", flow.cdist,
                flow.zeros(2, 3, dtype=flow.int64), flow.zeros(2, 3, dtype=flow.int64))
    raises_like(ValueError, "not a valid value for compute_mode", flow.cdist, flow.zeros(2, 3), flow.zeros(2, 3),
                compute_mode="foo")


# ------------------------------------------------------------------------------------- searchsorted / bucketize


def _both(fn_name, seq, vals, **kw):
    sq_f = flow.tensor(seq) if isinstance(seq, np.ndarray) else seq
    out_f = getattr(flow, fn_name)(sq_f, flow.tensor(vals) if isinstance(vals, np.ndarray) else vals, **kw)
    tkw = {k: (torch.tensor(v.numpy()) if isinstance(v, flow.Tensor) else v) for k, v in kw.items()}
    out_t = getattr(torch, fn_name)(torch.tensor(seq) if isinstance(seq, np.ndarray) else seq,
                                    torch.tensor(vals) if isinstance(vals, np.ndarray) else vals, **tkw)
    assert_close(out_f, out_t)


@pytest.mark.parametrize("kw", [{}, {"right": True}, {"side": "left"}, {"side": "right"}, {"out_int32": True},
                                {"right": True, "side": "right"}])
def test_searchsorted(kw):
    seq2d = np.sort(rng.integers(0, 10, (3, 8)), -1).astype(np.float32)
    vals2d = rng.integers(-1, 11, (3, 5)).astype(np.float32)
    vals2d[0, 0] = np.nan
    _both("searchsorted", seq2d, vals2d, **kw)  # 2-D sorted sequence, row by row
    _both("searchsorted", seq2d[0], vals2d, **kw)  # 1-D sequence, N-D values
    _both("searchsorted", seq2d[0], vals2d[:, :0], **kw)  # empty values
    _both("searchsorted", np.zeros(0, np.float32), vals2d[0], **kw)  # empty sequence
    _both("searchsorted", seq2d[0], 4.0, **kw)  # a number gives a 0-D result
    _both("searchsorted", seq2d[:, ::2].copy(), vals2d, **kw)
    seq = flow.tensor(seq2d)[:, ::2]  # non-contiguous sequence
    assert_close(flow.searchsorted(seq, flow.tensor(vals2d), **kw),
                 torch.searchsorted(torch.tensor(seq2d)[:, ::2], torch.tensor(vals2d), **kw))
    _both("searchsorted", np.sort(rng.integers(0, 9, 7)), rng.integers(0, 9, (2, 3)), **kw)  # int64
    _both("searchsorted", np.sort(rng.integers(0, 9, 7)), rng.standard_normal(5) * 5, **kw)  # mixed dtypes


def test_searchsorted_sorter():
    seq = rng.standard_normal(7)
    sorter = flow.tensor(np.argsort(seq))
    for right in (False, True):
        _both("searchsorted", seq, rng.standard_normal(6), sorter=sorter, right=right)


def test_searchsorted_errors():
    s, v = flow.tensor([1.0, 3.0]), flow.tensor([2.0])
    raises_like(RuntimeError, "side can only be 'left' or 'right' but got foo", flow.searchsorted, s, v, side="foo")
    raises_like(RuntimeError, "side and right can't be set to opposites", flow.searchsorted, s, v, side="left",
                right=True)
    raises_like(RuntimeError, "first N-1 dimensions of boundaries tensor and input value tensor must match",
                flow.searchsorted, flow.tensor([[1.0, 3.0]]), flow.tensor([2.0, 3.0]))
    raises_like(RuntimeError, "sorter must be a tensor of long dtype but got dtype Int", flow.searchsorted, s, v,
                sorter=flow.tensor([0, 1], dtype=flow.int32))
    raises_like(RuntimeError, "boundaries tensor should have positive dimension", flow.searchsorted,
                flow.tensor(1.0), v)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize(right, out_int32):
    bounds = np.array([-1.0, 0.0, 0.0, 2.0, 5.0])
    vals = np.array([[-2.0, -1.0, 0.0, 1.0], [2.0, 3.0, 5.0, 9.0]])
    _both("bucketize", vals, bounds, right=right, out_int32=out_int32)
    _both("bucketize", vals.T, bounds, right=right, out_int32=out_int32)
    _both("bucketize", 0.0, bounds, right=right, out_int32=out_int32)
    _both("bucketize", np.zeros((0, 3)), bounds, right=right, out_int32=out_int32)
    raises_like(RuntimeError, "boundaries tensor must be 1 dimension, but got dim(2)", flow.bucketize,
                flow.tensor([2.0]), flow.tensor([[1.0, 3.0]]))


# ------------------------------------------------------------------------------------------------------ renorm


@pytest.mark.parametrize("p", [0.5, 1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm(p, dim):
    x = rng.standard_normal((4, 5, 3))
    check_vs_torch(lambda a: flow.renorm(a, p, dim, 1.5), lambda a: torch.renorm(a, p, dim, 1.5), [x])
    check_vs_torch(lambda a: a.transpose(0, 2).renorm(p, dim, 0.7), lambda a: a.transpose(0, 2).renorm(p, dim, 0.7),
                   [x.astype(np.float32)])


def test_renorm_inplace_and_errors():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    f, t = flow.tensor(x), torch.tensor(x)
    assert f.renorm_(2, 1, 0.5) is f
    t.renorm_(2, 1, 0.5)
    assert_close(f, t)
    raises_like(RuntimeError, "non-positive-norm not supported", flow.renorm, flow.ones(3, 3), -1, 0, 1)
    raises_like(RuntimeError, "expected maxnorm to be >= 0 but got -1", flow.renorm, flow.ones(3, 3), 2, 0, -1)
    raises_like(IndexError, "Dimension out of range", flow.renorm, flow.ones(3, 3), 2, 3, 1)
    raises_like(RuntimeError, "Expected a floating point", flow.renorm, flow.ones(3, 3, dtype=flow.int64), 2, 0, 1)


# ------------------------------------------------------------------------------------------------ chain_matmul


def test_chain_matmul():
    mats = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 5), (5, 1)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (1, 2, 4):
            check_vs_torch(flow.chain_matmul, torch.chain_matmul, mats[:k])
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        flow.chain_matmul(flow.ones(2, 2), flow.ones(2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_like(RuntimeError, "Expected one or more matrices", flow.chain_matmul)
        raises_like(RuntimeError, "Tensor dimension is 1, expected 2 instead.", flow.chain_matmul, flow.ones(3))


# ---------------------------------------------------------------------------------------------- global switches


def test_float32_matmul_precision():
    assert flow.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        for value in ("high", "medium", "highest"):
            flow.set_float32_matmul_precision(value)
            assert flow.get_float32_matmul_precision() == value
        flow.set_float32_matmul_precision("medium")
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            flow.set_float32_matmul_precision("foo")
        assert flow.get_float32_matmul_precision() == "medium"
        raises_like(RuntimeError, "expects a str, but got int", flow.set_float32_matmul_precision, 1)
    finally:
        flow.set_float32_matmul_precision("highest")


def test_deterministic_algorithms():
    assert not flow.are_deterministic_algorithms_enabled()
    assert not flow.is_deterministic_algorithms_warn_only_enabled()
    try:
        flow.use_deterministic_algorithms(True, warn_only=True)
        assert flow.are_deterministic_algorithms_enabled() and flow.is_deterministic_algorithms_warn_only_enabled()
        flow.use_deterministic_algorithms(True)
        assert flow.are_deterministic_algorithms_enabled() and not flow.is_deterministic_algorithms_warn_only_enabled()
        raises_like(TypeError, "argument 'mode' (position 1) must be bool, not int", flow.use_deterministic_algorithms, 1)
        raises_like(TypeError, "argument 'warn_only' must be bool, not int", flow.use_deterministic_algorithms, True,
                    warn_only=1)
    finally:
        flow.use_deterministic_algorithms(False)
    assert not flow.are_deterministic_algorithms_enabled()


def test_default_device():
    assert flow.get_default_device() == flow.device("cpu")
    flow.set_default_device("cpu")
    flow.set_default_device(flow.device("cpu"))
    flow.set_default_device(None)
    assert flow.get_default_device().type == "cpu"
    with pytest.raises(RuntimeError) as expected:
        flow.ones(1, device="cuda")
    for request in ("cuda", "cuda:0", flow.device("cuda")):
        raises_like(RuntimeError, str(expected.value), flow.set_default_device, request)
    with pytest.raises(RuntimeError):
        flow.set_default_device("foo")
    assert flow.get_default_device().type == "cpu"


def test_backends():
    import oneflow.backends.cudnn as cudnn

    assert cudnn is flow.backends.cudnn
    for attr in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(flow.backends.cudnn, attr) == getattr(torch.backends.cudnn, attr), attr
    assert flow.backends.cudnn.is_available() is False and flow.backends.cudnn.version() is None
    old = flow.backends.cudnn.benchmark
    flow.backends.cudnn.benchmark = True
    assert cudnn.benchmark is True
    flow.backends.cudnn.benchmark = old
    assert flow.backends.mkldnn.is_available() is True and flow.backends.mkldnn.enabled is True
    assert flow.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


def test_backends_cuda_switches_like_torch():
    fc, tc = flow.backends.cuda, torch.backends.cuda
    assert fc.is_built() is tc.is_built() is False
    for flag in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(fc.matmul, flag) == getattr(tc.matmul, flag), flag
    fc.matmul.allow_tf32 = True
    assert fc.matmul.allow_tf32 is True
    fc.matmul.allow_tf32 = False
    for lib in (fc, tc):
        with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
            lib.matmul.allow_tf33 = True
    for kind in ("flash", "mem_efficient", "math"):
        assert getattr(fc, f"{kind}_sdp_enabled")() == getattr(tc, f"{kind}_sdp_enabled")()
        getattr(fc, f"enable_{kind}_sdp")(False)
        assert getattr(fc, f"{kind}_sdp_enabled")() is False
        getattr(fc, f"enable_{kind}_sdp")(True)
    assert fc.flash_sdp_enabled.__name__ == "flash_sdp_enabled" and fc.enable_math_sdp.__doc__


def test_cpu_capability_from_flags(monkeypatch, tmp_path):
    import builtins

    from oneflow.backends import cpu

    real_open = builtins.open

    def fake(flags):
        path = tmp_path / "cpuinfo"
        path.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        monkeypatch.setattr(builtins, "open", lambda p, *a, **k: real_open(path if p == "/proc/cpuinfo" else p, *a, **k))

    fake("fpu sse avx avx2 fma avx512f avx512bw avx512vl avx512dq")
    assert cpu.get_cpu_capability() == "AVX512"
    fake("fpu sse avx avx2 fma")
    assert cpu.get_cpu_capability() == "AVX2"
    fake("fpu sse sse2")
    assert cpu.get_cpu_capability() == "DEFAULT"


# ------------------------------------------------------------------------------------------------------ special

SPECIAL_X = np.array([-60.0, -40.0, -37.0, -10.0, -3.0, -1.5, -1.0, -0.5, 0.3, 1.0, 2.0, 5.0, 10.0])


@pytest.mark.parametrize("name", ["expit", "erf", "erfc", "expm1", "exp2", "sinc", "ndtr", "log_ndtr"])
def test_special_unary(name):
    check_vs_torch(getattr(flow.special, name), getattr(torch.special, name), [SPECIAL_X], rtol=1e-9, atol=1e-12)
    check_vs_torch(getattr(flow.special, name), getattr(torch.special, name), [SPECIAL_X.astype(np.float32)],
                   rtol=1e-5, atol=1e-6)
    assert_close(getattr(flow.special, name)(flow.tensor([0, 1, 2])), getattr(torch.special, name)(torch.tensor([0, 1, 2])))


def test_log_ndtr_float32_between_the_direct_and_asymptotic_forms():
    # erfc(t) * exp(t^2) overflows float32 long before float64 (0 * inf was NaN for x in about [-37, -13])
    x = -np.linspace(10.0, 45.0, 71).astype(np.float32)
    check_vs_torch(flow.special.log_ndtr, torch.special.log_ndtr, [x], rtol=1e-6, atol=0, grad_rtol=1e-4, grad_atol=0)


def test_special_domains():
    check_vs_torch(flow.special.log1p, torch.special.log1p, [np.abs(SPECIAL_X) + 0.1])
    check_vs_torch(flow.special.erfinv, torch.special.erfinv, [np.linspace(-0.9, 0.9, 7)])
    check_vs_torch(flow.special.entr, torch.special.entr, [np.abs(SPECIAL_X) + 0.1])
    values = flow.tensor([-1.0, 0.0, 2.0, float("nan")])
    assert_close(flow.special.entr(values), torch.special.entr(torch.tensor(values.numpy())))
    assert_close(flow.special.sinc(flow.tensor([0.0])), torch.special.sinc(torch.tensor([0.0])))
    for eps in (None, 1e-3):
        check_vs_torch(lambda a: flow.special.logit(a, eps), lambda a: torch.special.logit(a, eps),
                       [np.linspace(0.05, 0.95, 7)])
    check_vs_torch(flow.special.xlogy, torch.special.xlogy, [np.array([0.0, 1, 2]), np.array([0.5, 1, 3])])


def test_special_reductions():
    x = rng.standard_normal((3, 4))
    for name in ("logsumexp", "softmax", "log_softmax"):
        check_vs_torch(lambda a: getattr(flow.special, name)(a, 1), lambda a: getattr(torch.special, name)(a, 1), [x])
    check_vs_torch(lambda a: flow.special.log_softmax(a, 0, dtype=flow.float64),
                   lambda a: torch.special.log_softmax(a, 0, dtype=torch.float64), [x.astype(np.float32)])


def test_searchsorted_is_a_binary_search_matching_torch():
    # 200k boundaries x 200k values: the old all-pairs comparison would need 4e10 booleans
    g = np.random.default_rng(12)
    s = np.sort(g.standard_normal(200_000)).astype(np.float32)
    v = g.standard_normal(200_000).astype(np.float32)
    for right in (False, True):
        got = flow.searchsorted(flow.tensor(s), flow.tensor(v), right=right).numpy()
        np.testing.assert_array_equal(got, np.searchsorted(s, v, side="right" if right else "left"))
    # NaN boundaries and values, infinities, ties: torch's answers
    s = [1.0, 2.0, 2.0, float("nan")]
    vals = [0.5, 1.0, 2.0, 3.0, float("nan"), float("inf"), -float("inf")]
    for right in (False, True):
        got = flow.searchsorted(flow.tensor(s), flow.tensor(vals), right=right).numpy()
        want = torch.searchsorted(torch.tensor(s), torch.tensor(vals), right=right).numpy()
        np.testing.assert_array_equal(got, want)
    w = flow.rand(100_000) + 0.01  # multinomial's inverse CDF goes through it too
    assert tuple(flow.multinomial(w, 100_000, replacement=True).shape) == (100_000,)


def test_device_as_a_context_manager():
    # PyTorch's `with torch.device(d):` default-device scope; CPU, the only device here, works and returns
    # the device, others raise the build's device error on entry
    with flow.device("cpu") as d:
        assert d == flow.device("cpu")
        assert flow.ones(2).device == flow.device("cpu") and flow.get_default_device() == flow.device("cpu")
    with pytest.raises(RuntimeError, match="without CUDA support"):
        with flow.device("cuda"):
            pass
