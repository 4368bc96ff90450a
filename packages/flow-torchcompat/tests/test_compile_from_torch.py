"""compile_from_torch: PyTorch modules run on oneflow with the same results, sharing parameter memory both ways,
trainable on oneflow's side."""
import copy
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch_models

import oneflow as flow
from oneflow.framework.infer_compiler import CompiledModule, ConversionError, compile_from_torch


def compiled(module, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no flow-graph here: eager
        return compile_from_torch(module, **kw)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_standard_layers_forward_equal_torch():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.GELU(approximate="tanh"), nn.LayerNorm(8), nn.Dropout(0.3),
                      nn.Linear(8, 3), nn.Softmax(dim=-1)).eval()
    c = compiled(m)
    x = torch.randn(5, 6)
    out = c(x)
    assert isinstance(out, torch.Tensor)
    close(out, m(x))
    flow_out = c(flow.from_numpy(x.numpy()))  # oneflow tensors in, oneflow tensors out
    assert isinstance(flow_out, flow.Tensor)
    close(flow_out, m(x))


def test_conv_batchnorm_running_stats_are_shared():
    torch.manual_seed(1)
    m = torch_models.SmallCNN()
    c = compiled(m)
    x = torch.randn(4, 1, 12, 12)
    m.eval(), c.eval()
    close(c(x), m(x), 1e-4)
    bn = m.features[1]
    reference = copy.deepcopy(m).train()
    before = bn.running_mean.clone()
    c.train()
    c(flow.from_numpy(x.numpy()))  # a training-mode forward on oneflow updates the (shared) running stats
    reference(x)
    assert not torch.equal(bn.running_mean, before)
    close(bn.running_mean, reference.features[1].running_mean, 1e-5)
    close(bn.running_var, reference.features[1].running_var, 1e-4)


def test_custom_modules_tied_weights_containers_and_super():
    torch.manual_seed(2)
    m = torch_models.TinyLM().eval()
    c = compiled(m)
    idx = torch.randint(0, 20, (3, 7))
    close(c(idx), m(idx), 1e-4)
    fm = c.oneflow_module
    assert type(fm).__name__ == "TinyLM" and isinstance(fm, flow.nn.Module)
    assert fm.decoder.weight is fm.emb.weight  # tied on both sides
    assert fm.emb.weight.data_ptr() == m.emb.weight.data_ptr()
    assert fm.offset.data_ptr() == m.offset.data_ptr()
    assert len(list(fm.parameters())) == len(list(m.parameters()))
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in m.named_parameters()]


def test_parameter_updates_are_seen_both_ways():
    torch.manual_seed(3)
    m = nn.Linear(4, 2)
    c = compiled(m, use_graph=False)
    x = torch.randn(3, 4)
    with torch.no_grad():
        m.weight.mul_(-2.0)  # a torch-side in-place update
    close(c(x), m(x))
    with flow.no_grad():
        c.oneflow_module.bias.add_(1.0)  # a oneflow-side one
    close(c(x), m(x))


def test_training_step_on_oneflow_updates_the_torch_module():
    torch.manual_seed(4)
    m = torch_models.TinyLM()
    m.heads["drop"].p = 0.0
    ref = copy.deepcopy(m)
    c = compiled(m)
    idx, target = torch.randint(0, 20, (4, 6)), torch.randint(0, 20, (4 * 6,))
    opt = flow.optim.SGD(c.parameters(), lr=0.5, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5, momentum=0.9)
    fidx, ftarget = flow.from_numpy(idx.numpy()), flow.from_numpy(target.numpy())
    for _ in range(3):
        opt.zero_grad()
        loss = flow.nn.functional.nll_loss(c(fidx).view(-1, 20), ftarget)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.nll_loss(ref(idx).view(-1, 20), target)
        ref_loss.backward()
        ref_opt.step()
        assert abs(loss.item() - ref_loss.item()) < 1e-4
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        close(p, q, 1e-4)  # the torch module's own parameters moved as torch's optimizer moved its copy's
        assert p.grad is None, name  # gradients stay on oneflow's side


def test_use_graph_without_flow_graph_warns_and_runs_eagerly():
    m = nn.Linear(2, 2)
    with pytest.warns(RuntimeWarning, match="flow-graph package, which is not installed"):
        c = compile_from_torch(m, use_graph=True)
    assert isinstance(c, CompiledModule) and not c.uses_graph
    x = torch.randn(1, 2)
    close(c(x), m(x))


def test_torch_hooks_are_reported_not_carried_over():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, inp, out: out * 0)
    with pytest.warns(RuntimeWarning, match="hooks of Linear .*_forward_hooks.* not carried over"):
        c = compile_from_torch(m, use_graph=False)
    x = torch.randn(1, 2)
    close(c(x), torch.nn.functional.linear(x, m.weight, m.bias))


def test_plugin_paths():
    import oneflow.framework.infer_compiler as ic

    assert flow.framework.infer_compiler is ic and ic.compile_from_torch is compile_from_torch


def test_bad_input():
    with pytest.raises(TypeError, match="expected a torch.nn.Module, got Linear"):
        compile_from_torch(flow.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="unknown option 'fast'"):
        compile_from_torch(nn.Linear(2, 2), options={"fast": True})
    with pytest.raises(TypeError, match="option 'size' must be int"):
        compile_from_torch(nn.Linear(2, 2), options={"size": "9"})
    with pytest.raises(ConversionError, match="uninitialized .lazy. parameters"):
        compiled(nn.LazyLinear(3))

    class FancyLayer(nn.Module):  # stands for a torch.nn layer that oneflow.nn lacks
        __module__ = "torch.nn.modules.fancy"

    with pytest.raises(ConversionError, match="torch.nn.FancyLayer has no oneflow counterpart"):
        compiled(nn.Sequential(nn.Linear(2, 2), FancyLayer()))


def test_use_graph_with_flow_graph_runs_a_compiled_graph(tmp_path):
    # flow-graph installed beside us (into a folder of its own, so the other tests keep running without it):
    # the module runs as compiled graphs with torch's results, and trains on oneflow as the eager module does
    import os
    import subprocess
    import sys

    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    target = tmp_path / "with_graph"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(target), os.path.join(repo, "packages", "flow-graph")], check=True, timeout=300)
    code = """if True:
        import warnings
        import numpy as np, torch
        from oneflow.framework.infer_compiler import compile_from_torch
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback warning: the graph is there
            c = compile_from_torch(m, use_graph=True)
        x = torch.randn(3, 4)
        ys = [c(x), c(x)]
        print(c.uses_graph, c._run.compile_count == 1, type(ys[1]).__module__,
              max(float(np.abs(y.numpy() - m(x).detach().numpy()).max()) for y in ys))
        # the compiled module trains like the eager one: a train-mode forward updates the shared running
        # stats, and loss.backward() after a call runs the compiled backward into oneflow-side gradients
        import copy
        import oneflow as flow
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                  torch.nn.Linear(3 * 4 * 4, 2))
        ref = copy.deepcopy(net)
        cn = compile_from_torch(net, use_graph=True)
        opt = flow.optim.SGD(cn.parameters(), lr=0.1)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        xi = torch.randn(5, 1, 6, 6)
        for _ in range(2):
            loss = cn(flow.from_numpy(xi.numpy())).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            ref_loss = ref(xi).square().mean()
            ref_loss.backward()
            ref_opt.step()
            ref_opt.zero_grad()
        worst = max(float((a - b).abs().max()) for a, b in zip(list(net.state_dict().values()),
                                                                list(ref.state_dict().values())))
        print(abs(loss.item() - ref_loss.item()) < 1e-5, worst < 1e-5, cn._run.compile_count)
        # options={"debug": 1}: the IR of each plan compiled for a new input signature, and nothing more
        import contextlib, io
        dbg = compile_from_torch(torch.nn.Linear(4, 2).eval(), use_graph=True, options={"debug": 1})
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            dbg(x)
            first = buf.getvalue()
            dbg(x)
            again = buf.getvalue()
            dbg(torch.randn(5, 4))
        print("= addmm(" in first and "return (" in first, again == first, buf.getvalue().count("graph compiled_"))
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    uses_graph, compiled_once, module, err, same_loss, same_state, compiles, ir_printed, once, irs = r.stdout.split()
    assert (uses_graph, compiled_once, module) == ("True", "True", "torch") and float(err) < 1e-6
    assert (same_loss, same_state, compiles) == ("True", "True", "1"), r.stdout
    assert (ir_printed, once, irs) == ("True", "True", "2"), r.stdout  # a new signature prints its own
