"""oneflow.amp against torch.amp where they used to differ: GradScaler growth at the top of float32, its
per-device inf records, the disabled-CUDA warning; the deprecated per-device autocast state functions,
custom_fwd's casting of nested inputs, and the autocast policy of Python-composed functionals."""
import collections
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as FF
from oneflow.amp import autocast_mode as flow_autocast_mode
from torch.amp import autocast_mode as torch_autocast_mode

LIBS = (flow, torch)


def scaler_and_opt(L, **kw):
    w = L.nn.Parameter(L.ones(3))
    return L.amp.GradScaler("cpu", **kw), w, L.optim.SGD([w], lr=0.1)


def test_growth_that_would_overflow_float32_keeps_the_scale():
    def run(L):
        scaler, w, opt = scaler_and_opt(L, init_scale=2.0 ** 126, growth_interval=1)
        scales = []
        for _ in range(4):
            scaler.scale(w.sum()).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            scales.append((scaler.get_scale(), scaler._get_growth_tracker()))
        return scales

    flow_scales = run(flow)
    assert flow_scales == run(torch)
    assert flow_scales[-1][0] == 2.0 ** 127  # grew once, then stayed below float32's overflow


@pytest.mark.parametrize("bad", [False, True])
def test_inf_records_per_device(bad):
    def run(L):
        scaler, w, opt = scaler_and_opt(L, init_scale=4.0)
        scaler.scale(w.sum()).backward()
        if bad:
            w.grad[1] = float("inf")
        checked = scaler._check_inf_per_device(opt)  # checks without unscaling
        grad_after_check = w.grad.tolist()
        found = scaler._found_inf_per_device(opt)
        return ([(d.type, float(v)) for d, v in checked.items()], grad_after_check,
                [(d.type, float(v)) for d, v in found.items()])

    assert run(flow) == run(torch)
    scaler, w, opt = scaler_and_opt(flow)
    with pytest.raises(AssertionError, match="_scale is None"):
        scaler._check_inf_per_device(opt)


@pytest.mark.skipif(flow._C.cuda_is_built() or torch.cuda.is_available(),
                    reason="the warning is for machines and builds without CUDA")
def test_cuda_grad_scaler_without_cuda_warns_like_torch():
    messages = []
    for L in LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not L.amp.GradScaler("cuda").is_enabled()
        messages.append([str(x.message).replace("torch", "oneflow") for x in w])
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name,args", [
    ("is_autocast_cpu_enabled", lambda L: ()),
    ("get_autocast_cpu_dtype", lambda L: ()),
    ("get_autocast_gpu_dtype", lambda L: ()),
    ("set_autocast_cpu_enabled", lambda L: (False,)),
    ("set_autocast_cpu_dtype", lambda L: (L.bfloat16,)),
    ("set_autocast_gpu_dtype", lambda L: (L.float16,)),
])
def test_deprecated_per_device_state_functions(name, args):
    results = []
    for L in LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            value = getattr(L, name)(*args(L))
        assert len(w) == 1 and w[0].category is DeprecationWarning
        # torch appends where in its C++ sources the warning came from
        message = str(w[0].message).split(" (Triggered internally")[0].replace("torch", "oneflow")
        results.append((message, str(value).replace("torch", "oneflow")))
    assert results[0] == results[1]


def test_custom_fwd_casts_nested_inputs_like_torch():
    def cast(L, mod, value):
        return mod._cast(value, "cpu", L.float16)

    def dtypes(x):
        if isinstance(x, dict):
            return {k: dtypes(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(dtypes(v) for v in x)
        if isinstance(x, np.ndarray):
            return ("ndarray", str(x.dtype))
        return str(x.dtype).split(".")[-1] if hasattr(x, "dtype") else x

    out = []
    for L, mod in ((flow, flow_autocast_mode), (torch, torch_autocast_mode)):
        ordered = cast(L, mod, collections.OrderedDict(a=L.ones(2), b=[L.ones(1, dtype=L.float64)]))
        lazy = cast(L, mod, (t for t in [L.ones(2), L.ones(2, dtype=L.bfloat16)]))
        arr = cast(L, mod, np.ones(2, dtype=np.float32))
        out.append((type(ordered).__name__, dtypes(ordered), type(lazy).__name__, [dtypes(t) for t in lazy],
                    dtypes(arr)))
    assert out[0] == out[1]


def test_autocast_decorator_function():
    dtypes = []
    for L, mod in ((flow, flow_autocast_mode), (torch, torch_autocast_mode)):
        f = mod.autocast_decorator(L.autocast("cpu"), lambda a, b, L=L: L.mm(a, b))
        dtypes.append(str(f(L.ones(2, 2), L.ones(2, 2)).dtype).split(".")[-1])
        assert not L.is_autocast_enabled("cpu")
    assert dtypes == ["bfloat16", "bfloat16"]
    assert "autocast_decorator" in flow_autocast_mode.__all__


rng = np.random.default_rng(0)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name,fn,arrays,dtypes", [
    # torch runs bilinear as one unlisted kernel: the dtypes it is given, not the matmuls' lower precision
    ("bilinear", lambda m, F, a, b, w: F.bilinear(a, b, w), [arr(3, 4), arr(3, 5), arr(2, 4, 5)], None),
    ("bilinear_bias", lambda m, F, a, b, w, c: F.bilinear(a, b, w, c), [arr(3, 4), arr(3, 5), arr(2, 4, 5), arr(2)],
     None),
    ("max_unpool2d", lambda m, F, a: F.max_unpool2d(*F.max_pool2d(a, 2, return_indices=True), 2),
     [arr(1, 2, 4, 4)], ["bfloat16"]),
    ("max_unpool3d", lambda m, F, a: F.max_unpool3d(*F.max_pool3d(a, 2, return_indices=True), 2),
     [arr(1, 1, 4, 4, 4)], ["bfloat16"]),
    ("fractional_max_pool2d",
     lambda m, F, a: F.fractional_max_pool2d(a, 2, output_size=2, _random_samples=m.full((1, 2, 2), 0.5)),
     [arr(1, 2, 5, 5)], ["bfloat16"]),
])
def test_composed_functionals_follow_torch_policy(name, fn, arrays, dtypes):
    dtypes = dtypes or [None] * len(arrays)
    results = []
    for L, F in ((flow, FF), (torch, TF)):
        ins = [L.tensor(a) if d is None else L.tensor(a).to(getattr(L, d)) for a, d in zip(arrays, dtypes)]
        with L.autocast("cpu"):
            out = fn(L, F, *ins)
        results.append((str(out.dtype).split(".")[-1], out.float().detach().numpy() if L is torch
                        else out.float().numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=2e-2, atol=2e-2)


_POLICY_CASES = [
    ("cdist", lambda L, x: L.cdist(x, x)), ("trace", lambda L, x: L.trace(x)),
    ("trace method", lambda L, x: x.trace()), ("pinverse", lambda L, x: L.pinverse(x)),
    ("cond", lambda L, x: L.linalg.cond(x)), ("vecdot", lambda L, x: L.linalg.vecdot(x, x))]
# torch has no bfloat16 kernels for these: float32 inputs only
_POLICY_CASES_F32 = [("quantile", lambda L, x: L.quantile(x, 0.5)), ("nanquantile", lambda L, x: L.nanquantile(x, 0.5)),
                     ("matrix_rank", lambda L, x: L.linalg.matrix_rank(x))]


@pytest.mark.parametrize("name,call,dtype", [(n, c, d) for n, c in _POLICY_CASES for d in ("float32", "bfloat16")]
                         + [(n, c, "float32") for n, c in _POLICY_CASES_F32])
def test_python_level_functions_follow_torch_policy(name, call, dtype):
    # composites defined in Python carry the policy of torch's op of that name (fp32 or lower precision)
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    fx = flow.tensor(x).to(getattr(flow, dtype))
    tx = torch.tensor(x).to(getattr(torch, dtype))
    with flow.autocast("cpu", dtype=flow.bfloat16):
        got = call(flow, fx).dtype
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = call(torch, tx).dtype
    assert str(got).split(".")[-1] == str(want).split(".")[-1]
