"""nn.Graph's API: the plugin entry points, attributes, the per-signature cache, outputs, argument errors,
repr and debug."""
import numpy as np
import pytest

import oneflow as flow
import oneflow_graph
from oneflow import nn
from oneflow_graph import Graph

from models import Infer, mlp


def test_installed_plugin_is_flow_nn_graph_and_a_compile_backend():
    assert flow.nn.Graph is oneflow_graph.Graph
    from oneflow.nn import Graph as G

    assert G is oneflow_graph.Graph
    assert "graph" in flow.compiler.list_backends()


@pytest.mark.parametrize("how", ["function", "module"])
def test_flow_compile_with_the_graph_backend(how, monkeypatch):
    from oneflow_graph import executor

    runs = []
    real_run = executor.Plan.run
    monkeypatch.setattr(executor.Plan, "run", lambda self, inputs: runs.append(1) or real_run(self, inputs))
    model = mlp()
    if how == "function":
        compiled = flow.compile(lambda x: model(x) * 2, backend="graph")
    else:
        compiled = flow.compile(model, backend="graph")
    scale = 2 if how == "function" else 1
    x = flow.randn(3, 6)
    with flow.no_grad():
        expected = model.forward(x).numpy() * scale
        out = compiled(x)
        np.testing.assert_array_equal(out.numpy(), expected)
        assert compiled(x + 1).shape == (3, 4)
    assert len(runs) == 2  # both calls ran a compiled plan
    # with autograd on, the call runs the compiled forward as one autograd node and backward the compiled backward
    y = compiled(x)
    assert y.requires_grad and len(runs) == 3
    y.sum().backward()
    assert model[0].weight.grad is not None and len(runs) == 4


def test_name_training_is_compiled():
    g = Infer(mlp())
    h = Infer(mlp())
    assert g.name.startswith("Infer_") and g.name != h.name
    assert not g.training and not g.is_compiled
    g(flow.randn(2, 6))
    assert g.is_compiled
    assert isinstance(g.model, nn.Sequential)


def test_super_init_is_required_and_optimizers_are_added_not_assigned():
    class NoSuper(Graph):
        def __init__(self):
            self.model = mlp()

    with pytest.raises(AttributeError, match="call super\\(\\).__init__\\(\\)"):
        NoSuper()

    class Assigns(Graph):
        def __init__(self):
            super().__init__()
            self.model = mlp()
            self.opt = flow.optim.SGD(self.model.parameters(), lr=0.1)

    with pytest.raises(AttributeError, match="add_optimizer"):
        Assigns()

    class NoBuild(Graph):
        def __init__(self):
            super().__init__()

    with pytest.raises(NotImplementedError, match="must override build"):
        NoBuild()(flow.ones(1))


def test_one_compile_per_signature_and_the_cache_bound():
    model = mlp()
    g = Infer(model)
    for _ in range(3):
        g(flow.randn(2, 6))
    assert g._compile_count == 1
    g(flow.randn(4, 6))  # a new shape compiles again
    g(flow.randn(2, 6, dtype=flow.float64).float())
    g(flow.randn(4, 6))
    assert g._compile_count == 2 and len(g._cache) == 2

    @Graph.with_dynamic_input_shape(size=1)
    class Small(Infer):
        pass

    s = Small(model)
    s(flow.randn(2, 6))
    s(flow.randn(3, 6))
    s(flow.randn(2, 6))  # evicted by the (3, 6) one
    assert s._compile_count == 3 and len(s._cache) == 1
    with pytest.raises(ValueError, match="at least 1"):
        Graph.with_dynamic_input_shape(size=0)


def test_non_tensor_arguments_are_part_of_the_signature():
    class Scale(Graph):
        def build(self, x, k, mode="mul"):
            return x * k if mode == "mul" else x + k

    g = Scale()
    x = flow.tensor([1.0, 2.0])
    assert g(x, 3).tolist() == [3.0, 6.0]
    assert g(x, 4).tolist() == [4.0, 8.0]
    assert g(x, 4, mode="add").tolist() == [5.0, 6.0]
    assert g._compile_count == 3


def test_outputs_keep_their_structure_and_are_not_overwritten():
    class Multi(Graph):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def build(self, x, pair):
            a, b = pair
            y = self.lin(x)
            return {"y": y, "parts": [a + b, (a * b, 7)], "w": self.lin.weight}

    g = Multi()
    x, a, b = flow.randn(3, 2), flow.tensor([1.0, 2.0]), flow.tensor([3.0, 4.0])
    first = g(x, (a, b))
    assert list(first) == ["y", "parts", "w"] and first["parts"][1][1] == 7
    assert first["parts"][0].tolist() == [4.0, 6.0] and first["parts"][1][0].tolist() == [3.0, 8.0]
    kept = first["y"].numpy().copy()
    second = g(flow.randn(3, 2), (b, a))
    np.testing.assert_array_equal(first["y"].numpy(), kept)  # the second call wrote new tensors
    assert second["parts"][0].tolist() == [4.0, 6.0]
    # a returned parameter is a copy: changing it leaves the model alone
    second["w"].zero_()
    assert g.lin.weight.abs().sum().item() > 0


def test_eager_changes_to_parameters_are_seen():
    model = nn.Linear(2, 1, bias=False)
    g = Infer(model)
    x = flow.ones(1, 2)
    g(x)
    with flow.no_grad():
        model.weight.fill_(2.0)
    assert g(x).item() == 4.0
    model.load_state_dict({"weight": flow.tensor([[1.0, -1.0]])})
    assert g(x).item() == 0.0


def test_wrong_arguments_are_clear_errors():
    g = Infer(mlp())
    with pytest.raises(TypeError, match=r"does not match Infer.build\(x\).*missing a required argument"):
        g()
    with pytest.raises(TypeError, match="too many positional arguments"):
        g(flow.ones(1, 6), flow.ones(1, 6))
    with pytest.raises(RuntimeError, match="inference graph .* requires grad"):
        g(flow.ones(1, 6, requires_grad=True))


def test_graph_called_inside_another_graph_is_inlined():
    inner = Infer(nn.Linear(2, 2))

    class Outer(Graph):
        def build(self, x):
            return inner(x) * 2

    x = flow.randn(3, 2)
    out = Outer()(x)
    np.testing.assert_allclose(out.numpy(), inner.model(x).detach().numpy() * 2, rtol=1e-6)
    assert not inner.is_compiled


def test_repr_lists_modules_inputs_and_outputs_in_oneflows_format():
    g = Infer(nn.Sequential(nn.Linear(3, 8, bias=False), nn.BatchNorm1d(8)))
    text = repr(g)
    assert text.startswith(f"(GRAPH:{g.name}:Infer): (")
    assert "(CONFIG:config:GraphConfig(training=False, ))" in text
    assert "(MODULE:model:Sequential()): (" in text
    assert "(PARAMETER:model.0.weight:tensor(..., size=(8, 3), dtype=oneflow.float32, requires_grad=True)): ()" in text
    assert "(BUFFER:model.1.running_mean:tensor(..., size=(8,), dtype=oneflow.float32)): ()" in text
    assert "INPUT" not in text
    g.model.eval()
    g(flow.randn(2, 3))
    text = repr(g)
    assert f"(INPUT:_{g.name}_input.0:Tensor(shape=(2, 3), dtype=oneflow.float32))" in text
    assert f"(OUTPUT:_{g.name}_output.0:tensor(..., size=(2, 8), dtype=oneflow.float32))" in text


def test_debug_prints_the_ir_and_the_pass_statistics(capsys):
    g = Infer(nn.Linear(3, 2))
    g.debug(0)
    assert capsys.readouterr().out == ""  # nothing compiled yet
    g(flow.randn(4, 3))
    out = capsys.readouterr().out
    assert f"(GRAPH:{g.name}) compiled: 2 ops" in out
    assert "pass dce: removed=0" in out and "pass cse: merged=0" in out
    assert "= addmm(%model.bias, %in0, %" in out and "return %" in out
    g.debug(1)
    assert "test_api.py" not in capsys.readouterr().out or True
    g(flow.randn(5, 3))  # level 1: the traced IR too, with the user's source lines
    out = capsys.readouterr().out
    assert "IR before passes:" in out and "linear.py" not in out.split("IR before passes:")[0]
    with pytest.raises(TypeError, match="v_level must be an int"):
        g.debug("all")


def test_config_switches_passes_and_names_unsupported_features():
    g = Infer(mlp())
    g.config.enable_pass("cse", False)
    g(flow.randn(2, 6))
    assert [n for n, _ in g._last.report] == ["constant_folding", "algebraic", "checkpoint_recompute", "dce",
                                                 "copy_elision", "fold_conv_bn", "prepack_conv_weights",
                                                 "fuse_softmax_cross_entropy", "fuse_elementwise",
                                                 "split_optimizer_updates", "hoist_variables"]
    with pytest.raises(ValueError, match="unknown graph pass 'fusion'"):
        g.config.enable_pass("fusion")
    with pytest.raises(ValueError, match="stage must be 1, 2 or 3"):
        g.config.enable_zero(True, stage=4)
    with pytest.raises(ValueError, match="shard_min_size must be an int"):
        g.config.enable_zero(True, shard_min_size=-1)
    with pytest.raises(TypeError, match="mode must be a bool"):
        g.config.enable_zero("yes")
    with pytest.raises(NotImplementedError, match="flow-dist"):
        g.config.enable_auto_parallel(True)
