"""oneflow.func transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize, vmap,
stack_module_state) and oneflow.utils._pytree against torch.func / torch.utils._pytree on the same functions."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
import torch
import torch.utils._pytree as tpytree

import oneflow as flow
import oneflow.utils._pytree as fpytree

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(3)
W = RNG.standard_normal(3)
BATCH = RNG.standard_normal((4, 3))


def _same(got, want, rtol=1e-7, atol=1e-9):
    """Same pytree structure (oneflow tensors vs torch tensors), shapes, dtypes, requires_grad and values."""
    f_leaves, f_spec = fpytree.tree_flatten(got)
    t_leaves, t_spec = tpytree.tree_flatten(want)
    assert len(f_leaves) == len(t_leaves), (f_spec, t_spec)
    assert repr(f_spec).replace("\n", "").replace(" ", "") == repr(t_spec).replace("\n", "").replace(" ", "")
    for f, t in zip(f_leaves, t_leaves):
        if isinstance(t, torch.Tensor):
            assert isinstance(f, flow.Tensor), type(f)
            assert tuple(f.shape) == tuple(t.shape), (f.shape, t.shape)
            assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            assert f.requires_grad == t.requires_grad  # results leave the transforms as torch's do
            np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
        else:
            assert f == t


def _inputs(*arrays):
    return tuple(flow.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def _both(build, *arrays, **kw):
    """Compares build(L, inputs) for L = oneflow and L = torch, given the same inputs made from ``arrays``."""
    f_in, t_in = _inputs(*arrays)
    _same(build(flow, f_in), build(torch, t_in), **kw)
    return f_in


# ---------------------------------------------------------------------------------------------------- pytree

def test_pytree_matches_torch():
    P = namedtuple("P", "a b")
    tree = (1, None, {"b": [2, 3], "a": OrderedDict(z=4, y=(5,))}, P(6, [7]))
    f_leaves, f_spec = fpytree.tree_flatten(tree)
    t_leaves, t_spec = tpytree.tree_flatten(tree)
    assert f_leaves == t_leaves == [1, None, 2, 3, 4, 5, 6, 7]
    assert fpytree.tree_unflatten(f_leaves, f_spec) == tree
    assert fpytree.tree_map(lambda v: v, tree) == tree
    assert fpytree.tree_structure({"x": (1, 2)}) == fpytree.tree_structure({"x": (3, 4)})
    assert fpytree.tree_structure({"x": 1, "y": 2}) != fpytree.tree_structure({"y": 1, "x": 2})
    assert fpytree.tree_structure([1, 2]) != fpytree.tree_structure((1, 2))
    spec = fpytree.tree_structure((1, (2, 3)))
    for prefix, want in ((0, [0, 0, 0]), ((0, None), [0, None, None]), ((0, (None, 1)), [0, None, 1]),
                         ([0, 1], None), ((0,), None)):
        assert fpytree._broadcast_to_and_flatten(prefix, spec) == want
        assert tpytree._broadcast_to_and_flatten(prefix, tpytree.tree_structure((1, (2, 3)))) == want
    assert fpytree.treespec_pprint(fpytree.tree_structure((1, [2, 3]))) == "(*, [*, *])"
    with pytest.raises(ValueError):
        fpytree.tree_unflatten([1], spec)


# ---------------------------------------------------------------------------------------------------- grad

def _sin_prod(x, y):
    return (x.sin() * y).sum()


def _matmul_loss(a, b):
    return ((a @ b).tanh() ** 2).mean()


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1, (-2,)])
def test_grad_argnums(argnums):
    _both(lambda L, x: L.func.grad(_matmul_loss, argnums=argnums)(*x), A, B)
    _both(lambda L, x: L.func.grad_and_value(_sin_prod, argnums=argnums)(*x), V, W)


def test_grad_pytree_input_has_aux_kwargs_and_unused_args():
    def loss(params, x, scale=1.0):
        h = x @ params["w"] + params["b"][0]
        return (h ** 2).sum() * scale, {"h": h, "n": [h.sum()]}

    def build(L, t):
        params = {"w": t[0], "b": [t[1]]}
        return L.func.grad(loss, has_aux=True)(params, t[2], scale=3.0)

    _both(build, B, RNG.standard_normal(4), A)
    # an argument the output ignores gets zeros; grad_and_value's aux comes with the value
    _both(lambda L, x: L.func.grad(lambda a, b: a.sum() * 2, argnums=(0, 1))(*x), V, W)
    _both(lambda L, x: L.func.grad_and_value(lambda a: (a.exp().sum(), a * 2), has_aux=True)(*x), V)
    _both(lambda L, x: L.func.grad(lambda a: L.ones(()).sum())(*x), V)


def test_grad_leaves_inputs_alone():
    x = flow.tensor(V)
    g = flow.func.grad(lambda t: (t ** 3).sum())(x)
    assert not x.requires_grad and x.grad is None and not g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * V ** 2)
    # an input that requires grad: no .grad written by the transform, but the result is differentiable
    w = flow.tensor(V, requires_grad=True)
    g = flow.func.grad(lambda t: (t ** 3).sum())(w)
    assert w.grad is None and g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * V)
    # grad ignores an outer no_grad, and its result is then not differentiable
    with flow.no_grad():
        g = flow.func.grad(lambda t: (t ** 3).sum())(w)
    assert not g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * V ** 2)


def test_grad_closure_over_tensor_that_requires_grad():
    w = flow.tensor(W, requires_grad=True)
    tw = torch.tensor(W, requires_grad=True)
    res = []
    for L, weight in ((flow, w), (torch, tw)):
        g = L.func.grad(lambda t: (t.sin() * weight).sum())(L.tensor(V))
        assert g.requires_grad  # depends on the closed-over weight
        g.pow(2).sum().backward()
        res.append(weight.grad)
    _same(res[0], res[1])
    # inner no_grad inside the function is respected
    _both(lambda L, x: L.func.grad(lambda t: (t * t.detach()).sum() + _no_grad_square(L, t))(*x), V)


def _no_grad_square(L, t):
    with L.no_grad():
        return (t * t).sum()


def _total(t):
    return t.sum()


GRAD_ERRORS = [
    (dict(), lambda t: t, RuntimeError, "Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"),
    (dict(), lambda t: (t.sum(),), RuntimeError, "to return a Tensor, got <class 'tuple'>"),
    (dict(has_aux=True), _total, RuntimeError, "should be a tuple: \\(output, aux\\) if has_aux is True"),
    (dict(has_aux=True), lambda t: (t.sum(), 1), RuntimeError, "Expected tensors, got unsupported type <class 'int'>"),
    (dict(argnums=[0]), _total, RuntimeError, "argnums must be int or Tuple\\[int, ...\\], got: <class 'list'>"),
    (dict(argnums=(0.5,)), _total, RuntimeError, "argnum must be int, got: <class 'float'>"),
    (dict(argnums=1), _total, RuntimeError, "Got argnum=1, but only 1 positional inputs"),
    (dict(argnums=()), _total, RuntimeError, "argnums must be non-empty"),
    (dict(argnums=(0, -1)), _total, RuntimeError, "argnums elements must be unique, got \\(0, 0\\)"),
]


@pytest.mark.parametrize("kwargs,func,exc,msg", GRAD_ERRORS)
def test_grad_errors_like_torch(kwargs, func, exc, msg):
    for L in (flow, torch):
        with pytest.raises(exc, match=msg):
            L.func.grad(func, **kwargs)(L.tensor(V))


def test_grad_input_errors():
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        flow.func.grad(_total)(2.0)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        flow.func.grad(_total)(flow.arange(3))


# ---------------------------------------------------------------------------------------------------- vjp / jvp

def test_vjp_pytree_outputs_repeated_calls_and_aux():
    def f(x, y):
        return {"p": x * y, "s": [(x ** 3).sum()]}, x.exp()

    def build(L, t):
        out, vjp_fn, aux = L.func.vjp(f, t[0], t[1], has_aux=True)
        ct = {"p": L.ones(3, dtype=L.float64), "s": [L.tensor(2.0, dtype=L.float64)]}
        return out, vjp_fn(ct), vjp_fn(ct), aux

    _both(build, V, W)
    _both(lambda L, t: L.func.vjp(lambda a, b: a * 2, *t)[1](t[0]), V, W)  # b unused: zeros


def test_vjp_errors():
    x = flow.tensor(V)
    out, vjp_fn = flow.func.vjp(lambda t: (t, t.sum()), x)
    with pytest.raises(RuntimeError, match="cotangents: \\(\\*,\\), primal output: \\(\\*, \\*\\)"):
        vjp_fn((x,))
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\]"):
        vjp_fn((x[:2], x.sum()))
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
        flow.func.vjp(lambda t: t.long(), x)
    with pytest.raises(ValueError, match="Thing passed to transform API"):
        flow.func.vjp(lambda t: t, 1.0)
    with pytest.raises(RuntimeError, match="non-empty output"):
        flow.func.vjp(lambda t: (), x)


def test_jvp_values_pytrees_aux_and_strict():
    def f(x, d):
        return x.sin() * d["y"], {"m": (x[:, None] * d["y"]).sum(0)}

    def build(L, t):
        primals = (t[0], {"y": t[1]})
        tangents = (t[2], {"y": t[3]})
        return L.func.jvp(f, primals, tangents)

    _both(build, V, W, RNG.standard_normal(3), RNG.standard_normal(3))
    _both(lambda L, t: L.func.jvp(lambda x: (x.exp(), x.sum()), (t[0],), (t[1],), has_aux=True), V, W)
    # an output independent of the inputs gets a zero tangent, or an error with strict
    _both(lambda L, t: L.func.jvp(lambda x: L.ones(3, dtype=L.float64) + 0 * x.detach(), (t[0],), (t[1],)), V, W)
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
        flow.func.jvp(lambda x: flow.ones(3), (flow.tensor(V),), (flow.tensor(W),), strict=True)


def test_jvp_errors():
    x = flow.tensor(V)
    jvp = flow.func.jvp
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda t: t, x, x)
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same python structure"):
        jvp(lambda t: t, (x,), [x])
    with pytest.raises(RuntimeError, match="Expected tangents to only contain Tensors"):
        jvp(lambda t: t, (x,), (1.0,))
    with pytest.raises(RuntimeError, match="Expected primals to contain at least one Tensor"):
        jvp(lambda: x, (), ())
    with pytest.raises(RuntimeError, match="Tensor is of size \\[3\\] while the given forward gradient is of size "
                                           "\\[2\\]"):
        jvp(lambda t: t, (x,), (x[:2],))
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        jvp(lambda t: t, (flow.arange(3),), (flow.arange(3),))
    with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors"):
        jvp(lambda t: 1.0, (x,), (x,))


# ---------------------------------------------------------------------------------------------------- Jacobians

def _multi(x, y):
    return {"a": (x[:, None] * y).tanh(), "b": [x.sum() * y.exp()]}


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
def test_jacobians(name, argnums):
    _both(lambda L, t: getattr(L.func, name)(_multi, argnums=argnums)(*t), V, W[:2])
    _both(lambda L, t: getattr(L.func, name)(lambda a, b: a @ b, argnums=argnums)(*t), A, B)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_pytree_input_aux_scalar_and_int_output(name):
    def f(p):
        return (p["w"] * p["v"].sum()).cumsum(0), p["w"].sum()

    _both(lambda L, t: getattr(L.func, name)(f, has_aux=True)({"w": t[0], "v": t[1]}), V, W)
    _both(lambda L, t: getattr(L.func, name)(lambda x: (x ** 2).sum())(t[0]), A)
    if name == "jacfwd":
        _both(lambda L, t: L.func.jacfwd(lambda x: x.long())(t[0]), V)
    else:
        with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
            flow.func.jacrev(lambda x: x.long())(flow.tensor(V))


def test_jacobian_flags():
    x = flow.tensor(V)
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        flow.func.jacrev(flow.sin, chunk_size=0)
    _same(flow.func.jacrev(flow.sin, chunk_size=1)(x), torch.func.jacrev(torch.sin)(torch.tensor(V)))
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        flow.func.jacfwd(lambda t: t + flow.randn(3, dtype=flow.float64))(x)
    noisy = flow.func.jacfwd(lambda t: t * flow.randn(3, dtype=flow.float64).abs(), randomness="same")(x)
    assert tuple(noisy.shape) == (3, 3) and bool((noisy.diagonal() > 0).all())
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        flow.func.jacfwd(flow.sin, randomness="bad")(x)
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        flow.func.jacfwd(lambda t: t)(flow.arange(3))


def test_hessian():
    _both(lambda L, t: L.func.hessian(lambda x: (x.sin() * x).sum())(t[0]), V)
    _both(lambda L, t: L.func.hessian(lambda x, y: (x[:, None] * y.exp()).sum() ** 2, argnums=(0, 1))(*t), V, W)
    _both(lambda L, t: L.func.hessian(_matmul_loss, argnums=1)(*t), A, B)


def test_linearize():
    def f(x, y):
        return (x.sin() * y, [x.sum()])

    def build(L, t):
        out, jvp_fn = L.func.linearize(f, t[0], t[1])
        return out, jvp_fn(t[2], t[3]), jvp_fn(t[3], t[2])

    _both(build, V, W, RNG.standard_normal(3), RNG.standard_normal(3))
    _, jvp_fn = flow.func.linearize(flow.sin, flow.tensor(V))
    with pytest.raises(RuntimeError, match="tangent:0 with shape oneflow.Size\\(\\[2\\]\\) in flattened pytree"):
        jvp_fn(flow.tensor(V[:2]))
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn(flow.tensor(V), flow.tensor(V))
    with pytest.raises(RuntimeError, match="tangent:0 with dtype"):
        jvp_fn(flow.tensor(V).float())


def test_results_are_plain_tensors_at_top_level():
    x = flow.tensor(V)
    one = flow.ones(3, dtype=flow.float64)
    out, vjp_fn = flow.func.vjp(flow.sin, x)
    _, jvp_fn = flow.func.linearize(flow.sin, x)
    results = [out, vjp_fn(one)[0], jvp_fn(one), *flow.func.jvp(flow.sin, (x,), (one,)),
               flow.func.jacfwd(flow.sin)(x), flow.func.jacrev(flow.sin)(x), flow.func.hessian(_total)(x)]
    assert not any(r.requires_grad for r in results)
    # a tangent or cotangent that requires grad keeps the product differentiable
    t = flow.tensor(W, requires_grad=True)
    assert vjp_fn(t)[0].requires_grad and jvp_fn(t).requires_grad
    assert flow.func.jvp(flow.sin, (x,), (t,))[1].requires_grad


class _OnceSquare(flow.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    @flow.autograd.function.once_differentiable
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


def test_forward_mode_needs_a_differentiable_backward():
    x = flow.tensor(V)
    np.testing.assert_allclose(flow.func.grad(lambda t: _OnceSquare.apply(t).sum())(x).numpy(), 2 * V)
    with pytest.raises(RuntimeError, match="double-vjp trick"):
        flow.func.jvp(_OnceSquare.apply, (x,), (x,))
    with pytest.raises(RuntimeError, match="double-vjp trick"):
        flow.func.jacfwd(_OnceSquare.apply)(x)


# ---------------------------------------------------------------------------------------------------- nesting

def test_nested_transforms():
    cube = lambda x: (x ** 3).sin()  # noqa: E731
    _both(lambda L, t: L.func.grad(L.func.grad(lambda x: x.sin() * x))(t[0]), np.array(0.7))
    _both(lambda L, t: L.func.grad(lambda x: L.func.grad(lambda y: (y.exp() * x).sum())(x).sum())(t[0]), V)
    _both(lambda L, t: L.func.jacrev(L.func.jacrev(cube))(t[0]), V)
    _both(lambda L, t: L.func.jacfwd(L.func.jacrev(cube))(t[0]), V)
    _both(lambda L, t: L.func.jacrev(L.func.jacfwd(cube))(t[0]), V)
    _both(lambda L, t: L.func.jvp(L.func.grad(lambda x: (x ** 3 * x.cos()).sum()), (t[0],), (t[1],)), V, W)
    _both(lambda L, t: L.func.grad(lambda x: L.func.jvp(cube, (x,), (t[1],))[1].sum())(t[0]), V, W)
    _both(lambda L, t: L.func.vmap(L.func.grad(lambda x, w: (x.sin() * w).sum()), in_dims=(0, None))(*t), BATCH, V)
    _both(lambda L, t: L.func.grad(lambda x: L.func.vmap(lambda r: (r * r).sum())(x).prod())(t[0]), BATCH)
    _both(lambda L, t: L.func.vmap(L.func.jacrev(cube))(t[0]), BATCH)
    _both(lambda L, t: L.func.vmap(L.func.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(*t),
          V, BATCH)


def test_perturbations_of_nested_levels_stay_apart():
    # d/dx [ d/dy (x * y) at y = x ] = d/dx x = 1; mixing up the levels would give 2
    _both(lambda L, t: L.func.grad(lambda x: L.func.grad(lambda y: x * y)(x))(t[0]), np.array(1.5))
    _both(lambda L, t: L.func.jvp(lambda x: L.func.grad(lambda y: (x * y).sum())(x), (t[0],), (t[1],)), V, W)


def test_per_sample_gradients_of_linear_via_functional_call():
    models = []
    for L in (flow, torch):
        L.manual_seed(0)
        models.append(L.nn.Linear(3, 2).double())
    models[0].load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in models[1].state_dict().items()})
    targets = RNG.standard_normal((4, 2))

    def build(L, t):
        model = models[0] if L is flow else models[1]
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y):
            out = L.func.functional_call(model, p, (x[None],))
            return ((out - y[None]) ** 2).mean()

        return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, t[0], t[1])

    _both(build, BATCH, targets)
    assert models[0].weight.grad is None


def test_stack_module_state_ensemble():
    def make(L, seed):
        L.manual_seed(seed)
        return L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4)).double().eval()

    tms = [make(torch, s) for s in range(3)]
    fms = [make(flow, s) for s in range(3)]
    for f, t in zip(fms, tms):
        f.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})

    def build(L, t):
        ms = fms if L is flow else tms
        params, buffers = L.func.stack_module_state(ms)
        assert params["0.weight"].requires_grad and params["0.weight"].is_leaf
        assert not buffers["1.running_mean"].requires_grad

        def call(p, b, x):
            return L.func.functional_call(ms[0], (p, b), (x,))

        return params, buffers, L.func.vmap(call, in_dims=(0, 0, None))(params, buffers, t[0])

    _both(build, BATCH)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        flow.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        flow.func.stack_module_state([flow.nn.Linear(2, 2), flow.nn.Linear(2, 2).eval()])
    with pytest.raises(RuntimeError, match="same class"):
        flow.func.stack_module_state([flow.nn.Linear(2, 2), flow.nn.Bilinear(2, 2, 2)])
    b = flow.nn.Linear(2, 2)
    b.bias.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected bias from each model to have the same .requires_grad"):
        flow.func.stack_module_state([flow.nn.Linear(2, 2), b])


# ---------------------------------------------------------------------------------------------------- vmap

@pytest.mark.parametrize("in_dims,out_dims", [(0, 0), (1, 0), (-1, -1), (0, 1), (1, -2)])
def test_vmap_dims(in_dims, out_dims):
    _both(lambda L, t: L.vmap(lambda x: (x.exp() * 2, x.sum()), in_dims=in_dims,
                              out_dims=(out_dims, 0))(t[0]), RNG.standard_normal((2, 3)))


def test_vmap_in_dims_pytrees_none_kwargs_and_out_dims_pytree():
    def f(d, s, *, k):
        return {"u": d["x"] * d["y"][0] + s, "v": [d["y"][1].sum() * k]}

    def build(L, t):
        d = {"x": t[0], "y": [t[1], t[2]]}
        return L.vmap(f, in_dims=({"x": 1, "y": [None, 0]}, None), out_dims={"u": 1, "v": 0})(d, 2.0, k=3.0)

    _both(build, RNG.standard_normal((3, 4)), V, RNG.standard_normal((4, 5)))
    # a lone tensor output takes a one-element out_dims tuple; an output equal for every element takes None
    _both(lambda L, t: L.vmap(L.sin, out_dims=(1,))(t[0]), A)
    _both(lambda L, t: L.vmap(lambda x: (x, L.ones(2, dtype=L.float64), "tag"), out_dims=(0, None, None))(t[0]), A)


def test_vmap_chunk_size_and_empty_batch():
    f = lambda x, y: (x[:, None] * y).sum(0)  # noqa: E731
    for chunk in (None, 1, 3, 100):
        _both(lambda L, t: L.vmap(f, in_dims=(0, None), chunk_size=chunk)(*t), RNG.standard_normal((7, 3, 2)), V[:2])
    _both(lambda L, t: L.vmap(lambda x: (x.sin(), x.sum()), in_dims=1, out_dims=(1, 0))(t[0]), np.zeros((3, 0, 2)))
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0. \\(got 0\\)"):
        flow.vmap(flow.sin, chunk_size=0)


def test_vmap_is_exported_at_top_level():
    assert flow.vmap is flow.func.vmap
    assert set(flow.func.__all__) >= {"grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
                                      "linearize", "vmap", "functional_call", "stack_module_state"}


def test_vmap_gradients_flow_through():
    res = []
    for L in (flow, torch):
        x = L.tensor(BATCH, requires_grad=True)
        w = L.tensor(V, requires_grad=True)
        L.vmap(lambda r: (r * w).sin().sum())(x).pow(2).sum().backward()
        res.append((x.grad, w.grad))
    _same(res[0], res[1])


def test_vmap_randomness():
    x = flow.zeros(4, 3)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        flow.vmap(lambda r: r + flow.randn(3))(x)
    with pytest.raises(RuntimeError, match="called random operation"):
        flow.vmap(lambda r: flow.nn.functional.dropout(r, 0.5))(x)
    flow.vmap(lambda r: flow.nn.functional.dropout(r, 0.5, training=False))(x)  # no draw, no error
    same = flow.vmap(lambda r: r + flow.randn(3), randomness="same")(x)
    different = flow.vmap(lambda r: r + flow.randn(3), randomness="different")(x)
    assert all(bool(flow.equal(same[0], same[i])) for i in range(4))
    assert not bool(flow.equal(different[0], different[1]))
    mask = flow.vmap(lambda r: flow.nn.functional.dropout(r, 0.5), randomness="same")(flow.ones(3, 50))
    assert bool(flow.equal(mask[0], mask[2]))
    # nested: an outer 'error' still refuses what an inner 'different' allows
    with pytest.raises(RuntimeError, match="randomness error mode"):
        flow.vmap(flow.vmap(lambda r: r + flow.randn(()), randomness="different"))(flow.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', 'different', or 'same'. "
                                           "Got bad"):
        flow.vmap(flow.sin, randomness="bad")


VMAP_ERRORS = [
    (dict(in_dims=[0]), (A,), "expected `in_dims` to be int or a \\(potentially nested\\) tuple"),
    (dict(in_dims=0.5), (A,), "got: <class 'float'>"),
    (dict(in_dims=(0, 0)), (A,), "in_dims is not compatible with the structure of `inputs`"),
    (dict(in_dims=(0.5,)), (A,), "Got in_dim=0.5 for an input but in_dim must be either an integer dimension or None"),
    (dict(), (1.0,), "We cannot vmap over non-Tensor arguments, please use None as the respective in_dim"),
    (dict(), (), "got no inputs"),
    (dict(in_dims=(None,)), (A,), "vmap: Expected at least one Tensor to vmap over"),
    (dict(in_dims=2), (A,), "expected in_dim to satisfy -2 <= in_dim < 2"),
    (dict(out_dims="a"), (A,), "`out_dims` must be an int, None or a python collection of ints"),
    (dict(out_dims=(0, 1)), (A,), "out_dims is not compatible with the structure of `outputs`"),
]


@pytest.mark.parametrize("kwargs,args,msg", VMAP_ERRORS)
def test_vmap_errors_like_torch(kwargs, args, msg):
    for L in (flow, torch):
        with pytest.raises(ValueError, match=msg):
            L.vmap(lambda *xs: xs[0] if xs else None, **kwargs)(*(L.tensor(a) if isinstance(a, np.ndarray) else a
                                                                  for a in args))


def test_vmap_output_errors():
    x = flow.tensor(A)
    with pytest.raises(ValueError, match="vmap: Expected all tensors to have the same size in the mapped dimension, "
                                         "got sizes \\[2, 3\\] for the mapped dimension"):
        flow.vmap(lambda a, b: a, in_dims=(0, 1))(x, flow.tensor(B[:, :3]))
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>. Did you mean to set "
                                         "out_dims= to None"):
        flow.vmap(lambda a: (a, 1))(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        flow.vmap(lambda a: a.sum(), out_dims=None)(x)
    with pytest.raises(IndexError):
        flow.vmap(lambda a: a, out_dims=2)(x)
