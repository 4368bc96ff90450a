"""``oneflow.compile`` (eager: there is no graph compiler) and ``oneflow.compiler``: call and decorator
forms, argument checks with PyTorch's errors, and the OptimizedModule wrapper's attribute forwarding,
state_dict keys, train/eval and parameter sharing."""
import copy
import functools
import inspect
import pickle

import pytest

import oneflow as flow


def add_one(x):
    """doc of add_one"""
    return x + 1


def test_compile_function_forms():
    g = flow.compile(add_one)
    assert g(1) == 2 and g.__name__ == "add_one" and g.__doc__ == "doc of add_one"
    assert g.__wrapped__ is add_one and g._torchdynamo_orig_callable is add_one
    assert flow.compile()(add_one)(2) == 3
    assert flow.compile(mode="max-autotune", fullgraph=True, dynamic=False)(add_one)(2) == 3
    assert flow.compile(add_one, backend=lambda gm, example_inputs: gm)(2) == 3
    assert flow.compile(add_one, backend="eager", mode="anything")(2) == 3  # modes are only checked for inductor
    assert flow.compile(add_one, disable=True) is add_one

    @flow.compile
    def twice(x):
        return 2 * x

    @flow.compile(options={"trace.enabled": False})
    def thrice(x):
        return 3 * x

    assert twice(2) == 4 and thrice(2) == 6


def test_compile_signature_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = inspect.signature(flow.compile), inspect.signature(torch.compile)
    assert list(ours.parameters) == list(theirs.parameters)
    for name, p in ours.parameters.items():
        assert p.kind == theirs.parameters[name].kind and p.default == theirs.parameters[name].default, name


@pytest.mark.parametrize("kwargs,exc,message", [
    (dict(mode="default", options={}), RuntimeError,
     "Either mode or options can be specified, but both can't be specified at the same time."),
    (dict(mode="foo"), RuntimeError,
     "Unrecognized mode=foo, should be one of: default, lite, reduce-overhead, max-autotune-no-cudagraphs, "
     "max-autotune"),
    (dict(backend="foo"), RuntimeError,
     "Invalid backend: 'foo', see `torch._dynamo.list_backends()` for available backends."),
])
def test_compile_argument_errors(kwargs, exc, message):
    with pytest.raises(exc) as info:
        flow.compile(add_one, **kwargs)
    assert str(info.value) == message
    with pytest.raises(exc):
        flow.compile(**kwargs)(add_one)  # the decorator form checks when it is applied


def test_compile_rejects_non_callables():
    with pytest.raises(AssertionError, match="A callable function is expected, but <class 'int'> is provided."):
        flow.compile(3)
    assert isinstance(flow.compiler.InvalidBackend("x"), RuntimeError)


def test_optimized_module_wraps_and_forwards():
    m = flow.nn.Linear(2, 3)
    om = flow.compile(m)
    assert type(om).__name__ == "OptimizedModule" and isinstance(om, flow.nn.Module)
    assert om._orig_mod is m and om.weight is m.weight and om.in_features == 2
    assert list(om.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert [n for n, _ in om.named_parameters()] == ["_orig_mod.weight", "_orig_mod.bias"]
    assert all(a is b for a, b in zip(om.parameters(), m.parameters()))
    x = flow.randn(4, 2)
    assert bool((om(x) == m(x)).all())
    om.eval()
    assert not m.training and not om.training
    m.train()
    assert om.training
    om.foo = 3
    assert m.foo == 3
    del om.foo
    assert not hasattr(m, "foo")
    assert repr(om) == "OptimizedModule(\n  (_orig_mod): Linear(in_features=2, out_features=3, bias=True)\n)"
    assert flow.compile(m, disable=True) is m
    assert "in_features" in dir(om)
    with pytest.raises(TypeError, match="Linear does not support len()"):
        len(om)
    assert len(flow.compile(flow.nn.Sequential(flow.nn.Linear(2, 2), flow.nn.ReLU()))) == 2


def test_optimized_module_state_dict_training_and_hooks():
    m, m2 = flow.nn.Linear(2, 3), flow.nn.Linear(2, 3)
    om, om2 = flow.compile(m), flow.compile(m2)
    om2.load_state_dict(om.state_dict())
    assert bool(flow.equal(m2.weight, m.weight))
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\) in state_dict: \"_orig_mod.weight\""):
        m2.load_state_dict(om.state_dict())
    calls = []
    m.register_forward_hook(lambda mod, inputs, output: calls.append(1))
    om(flow.ones(1, 2)).sum().backward()
    assert calls == [1] and m.weight.grad is not None  # the original's hooks and gradients, eagerly
    opt = flow.optim.SGD(om.parameters(), lr=1.0)
    before = m.weight.detach().clone()
    opt.step()
    assert not bool(flow.equal(before, m.weight))
    cp = copy.deepcopy(om)
    assert type(cp).__name__ == "OptimizedModule" and cp._orig_mod is not m
    assert list(cp.state_dict()) == list(om.state_dict())
    back = pickle.loads(pickle.dumps(om2))  # om's hook is a lambda, which cannot pickle
    assert type(back).__name__ == "OptimizedModule" and bool(flow.equal(back._orig_mod.weight, m2.weight))


def test_compiler_helpers():
    c = flow.compiler
    # a plugin may register more names (flow-graph registers "graph")
    assert "inductor" in c.list_backends() and "eager" not in c.list_backends() and {"eager", "aot_eager"} <= set(c.list_backends(None))
    assert c.is_compiling() is False and c.is_dynamo_compiling() is False and c.is_exporting() is False
    assert c.reset() is None
    d = c.disable(add_one)
    assert d(1) == 2 and d.__wrapped__ is add_one
    assert c.disable()(add_one)(1) == 2 and c.disable(recursive=False)(add_one)(1) == 2
    assert c.allow_in_graph(add_one) is add_one and c.allow_in_graph([add_one]) == [add_one]
    assert c.assume_constant_result(add_one) is add_one
    assert c.get_default_backend() == "inductor"
    c.set_default_backend("eager")
    try:
        assert c.get_default_backend() == "eager"
        assert flow.compile(add_one, mode="anything")(1) == 2  # eager backend: modes unchecked
    finally:
        c.set_default_backend(None)
    assert c.get_default_backend() == "inductor"
    assert flow.compile is c.compile
    assert "eager" in flow.compile.__doc__.lower()


def test_compiler_signatures_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("disable", "allow_in_graph", "assume_constant_result", "list_backends", "reset", "is_compiling",
                 "is_dynamo_compiling"):
        ours, theirs = inspect.signature(getattr(flow.compiler, name)), inspect.signature(getattr(torch.compiler, name))
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.parameters.values()], name


def test_compiled_partial_and_method():
    class Box:
        def __init__(self):
            self.k = 5

        def get(self, x):
            return self.k + x

    b = Box()
    assert flow.compile(b.get)(1) == 6
    assert flow.compile(functools.partial(add_one))(1) == 2


def test_module_compile_in_place():
    import torch

    m = flow.nn.Linear(3, 2)
    # torch's Module has the same attribute (not compiled here: torch.compile switches off the distributions'
    # argument validation process-wide as a side effect, which other tests rely on)
    assert m._compiled_call_impl is None and torch.nn.Linear(3, 2)._compiled_call_impl is None
    x = flow.randn(4, 3)
    before = m(x)
    assert m.compile() is None
    assert m._compiled_call_impl is not None
    assert flow.equal(m(x), before)
    assert list(m.state_dict()) == ["weight", "bias"]  # compiled in place: no _orig_mod. prefix
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        m.compile(mode="no-such-mode")


def test_module_compile_routes_calls_through_the_backend():
    seen = []

    def backend(model, example_inputs):
        seen.append((model, [tuple(t.shape) for t in example_inputs]))

        def run(*args):
            seen.append("run")
            return model(*args) * 2  # calling the module from inside its compiled call runs the eager body

        return run

    m = flow.nn.Linear(3, 2)
    hook_calls = []
    m.register_forward_hook(lambda mod, inputs, output: hook_calls.append(1))
    x = flow.randn(4, 3)
    eager = m(x)
    m.compile(backend=backend)
    assert type(m) is flow.nn.Linear and m._compiled_call_impl is not None
    out = m(x)
    assert seen == [(m, [(4, 3)]), "run"]  # the backend got the module itself, once; the call ran its result
    assert flow.equal(out, eager * 2) and hook_calls == [1, 1]
    m(x)
    assert seen[2:] == ["run"] and len(seen) == 3
    # a deep copy is compiled again, for the copy, at its first call
    cp = copy.deepcopy(m)
    cp(x)
    assert seen[3][0] is cp and seen[4] == "run"
    assert list(cp.state_dict()) == ["weight", "bias"]


def test_module_compile_eager_backend_pickles_and_disable_and_errors():
    m = flow.nn.Sequential(flow.nn.Linear(3, 2), flow.nn.ReLU())
    x = flow.randn(2, 3)
    m.compile(backend="eager")
    back = pickle.loads(pickle.dumps(m))
    assert back._compiled_call_impl is not None and back._compiled_call_impl.module is back
    assert flow.equal(back(x), m(x))
    m.compile(disable=True)
    assert m._compiled_call_impl is None
    with pytest.raises(TypeError, match="keyword arguments of oneflow.compile"):
        m.compile("eager")
    with pytest.raises(flow.compiler.InvalidBackend, match="'no-such-backend'"):
        m.compile(backend="no-such-backend")
    # gradients flow through an eagerly compiled module as through the module
    m.compile()
    w = m[0].weight
    m(x).sum().backward()
    assert w.grad is not None and w.grad.shape == (2, 3)
