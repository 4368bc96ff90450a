"""The portable build's kernel variants (csrc/core/cpu_isa.h): the baseline kernels, forced with
FLOW_CPU_CAPABILITY=default, give the results the dispatched (AVX2 / AVX-512) kernels give, on every kind of
kernel that has variants: elementwise loops, reductions, normalisation, the own GEMM paths, Winograd
convolution and its gradients, float16/bfloat16 conversion runs, the packed recurrent weight, an optimizer
step. Each run is a child process, since the level is read once per process."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import oneflow as flow

PROBE = r"""
import sys
import numpy as np
import oneflow as flow
import oneflow.nn.functional as F

rng = np.random.default_rng(0)
def t(*shape, grad=False):
    return flow.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)

out = {"capability": np.array(flow.sysconfig.get_kernel_capability())}
x, y = t(10007), t(10007)
out["add"] = (x + y).numpy()
out["bcast"] = (t(64, 129) * t(129)).numpy()
out["exp_relu"] = flow.relu(flow.exp(x) - 1.5).numpy()
out["f64"] = (x.double() * 3.0 + y.double()).numpy()
m = t(300, 517)
out["sum_rows"], out["sum_cols"] = m.sum(1).numpy(), m.sum(0).numpy()
out["max"], out["mean"] = m.amax(1).numpy(), m.mean().numpy()
a, b = t(256, 64), t(256, 128)
out["a"], out["b"] = a.numpy(), b.numpy()
out["mm_tn"] = flow.matmul(a.t(), b).numpy()          # own packed GEMM, transposed A
r, s = t(1024, 64), t(64, 128)
out["r"], out["s"] = r.numpy(), s.numpy()
out["mm_rows"] = flow.matmul(r, s).numpy()             # own GEMM over A's rows
out["bmm"] = flow.bmm(t(8, 32, 16), t(8, 16, 24)).numpy()  # batched small products
cx, cw = t(4, 16, 16, 16, grad=True), t(16, 16, 3, 3, grad=True)
cy = F.conv2d(cx, cw, padding=1)                        # Winograd where the CPU has AVX2
cy.square().sum().backward()
out["conv"], out["conv_gx"], out["conv_gw"] = cy.detach().numpy(), cx.grad.numpy(), cw.grad.numpy()
bx = t(8, 16, 10, 10, grad=True)
bn = F.batch_norm(bx, None, None, training=True)
bn.pow(3).sum().backward()
out["bn"], out["bn_gx"] = bn.detach().numpy(), bx.grad.numpy()
out["ln"] = F.layer_norm(t(64, 256), (256,)).numpy()
mp, mi = F.max_pool2d(t(4, 8, 16, 32), 2, return_indices=True)  # the 2x2 pool's AVX2 rows
out["maxpool"], out["maxpool_idx"] = mp.numpy(), mi.numpy()
out["softmax"] = F.softmax(t(64, 1000), dim=1).numpy()
out["half"] = (x * 100).half().float().numpy()
out["bf16"] = (x * 100).bfloat16().float().numpy()
flow.manual_seed(0)
lstm = flow.nn.LSTM(32, 48, num_layers=1, batch_first=True)
out["lstm"] = lstm(t(4, 20, 32))[0].detach().numpy()
w = flow.nn.Parameter(t(1000))
opt = flow.optim.Adam([w], lr=0.1)
(w * w).sum().backward()
opt.step()
out["adam"] = w.detach().numpy()
np.savez(sys.argv[1], **out)
"""


def _run(path, capability=None):
    env = {k: v for k, v in os.environ.items() if k != "FLOW_CPU_CAPABILITY"}
    if capability:
        env["FLOW_CPU_CAPABILITY"] = capability
    proc = subprocess.Popen([sys.executable, "-c", PROBE, str(path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, err
    return dict(np.load(path))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("isa")
    return _run(d / "best.npz"), _run(d / "base.npz", "default")


def test_build_reports_what_it_is():
    build = flow.sysconfig.get_build_isa()
    assert build == "native" or build.startswith("x86-64-v2+dispatch(avx2") or build in ("x86-64", "generic")
    assert flow.sysconfig.get_kernel_capability() in ("DEFAULT", "AVX2", "AVX512")
    shown = flow.__config__.show()
    assert f"CPU build: {build}" in shown and flow.sysconfig.get_kernel_capability() in shown


def test_baseline_request_lowers_the_level(runs):
    best, base = runs
    if flow.sysconfig.get_build_isa().startswith("x86-64-v2+dispatch"):
        assert str(base["capability"]) == "DEFAULT"
        assert str(best["capability"]) == flow.sysconfig.get_kernel_capability()


@pytest.mark.parametrize("key", ["add", "bcast", "exp_relu", "f64", "sum_rows", "sum_cols", "max", "mean", "mm_tn",
                                 "mm_rows", "bmm", "conv", "conv_gx", "conv_gw", "bn", "bn_gx", "ln", "maxpool", "maxpool_idx", "softmax",
                                 "half", "bf16", "lstm", "adam"])
def test_variants_agree(runs, key):
    best, base = runs
    if key in ("half", "bf16", "max", "maxpool", "maxpool_idx"):  # exact: conversions and comparisons do not round differently
        np.testing.assert_array_equal(best[key], base[key])
    else:  # FMA contraction and vector widths change the last bits of sums only
        scale = max(1.0, float(np.abs(base[key]).max()))
        np.testing.assert_allclose(best[key], base[key], rtol=2e-4, atol=2e-5 * scale)


def test_variants_match_numpy(runs):
    for out in runs:
        np.testing.assert_allclose(out["mm_tn"], out["a"].T.astype(np.float64) @ out["b"], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out["mm_rows"], out["r"].astype(np.float64) @ out["s"], rtol=1e-4, atol=1e-4)
