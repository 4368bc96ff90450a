"""The Python autograd API against PyTorch: custom Functions, backward/grad arguments, hooks, grad modes,
saved-tensor hooks and gradcheck verdicts (values, None-ness, warnings and error types)."""
import random
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

LIBS = [flow, torch]


def leaf(lib, values=(1.0, 2.0, 3.0)):
    return lib.tensor(list(values), requires_grad=True)


def make_function(lib, forward, backward, setup_context=None, name="Fn"):
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if setup_context is not None:
        body["setup_context"] = staticmethod(setup_context)
    return type(name, (lib.autograd.Function,), body)


def raised(fn):
    """The type name of what ``fn()`` raised (None if nothing)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is the result
        return type(e).__name__
    return None


def caught_warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category.__name__, str(x.message)) for x in w]


# ------------------------------------------------------------------------------------------ custom Functions

def _scaled(lib):
    def forward(ctx, x):
        ctx.scale = 4.0
        ctx.save_for_backward(x)
        return x * 4

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.scale + x * 0

    return make_function(lib, forward, backward)


@pytest.mark.parametrize("lib", LIBS)
def test_grad_fn_of_a_custom_function_shows_its_ctx(lib):
    x = leaf(lib)
    y = _scaled(lib).apply(x)
    assert y.grad_fn.scale == 4.0
    assert y.grad_fn.needs_input_grad == (True,)
    assert y.grad_fn.saved_tensors[0] is x
    assert not hasattr(y.grad_fn, "no_such_attribute")
    assert not hasattr((x * 2).grad_fn, "saved_tensors")
    y.sum().backward()
    assert y.grad_fn.scale == 4.0
    with pytest.raises(RuntimeError, match="after calling backward"):
        y.grad_fn.saved_tensors


def _doubling_in_place(lib):
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x

    return make_function(lib, forward, backward)


def test_mark_dirty_on_a_view_routes_the_bases_gradient_through_the_function():
    res = []
    for lib in LIBS:
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = a * 1
        view = base[1:]
        before = view._version
        out = _doubling_in_place(lib).apply(view)
        assert out is view and view._version - before == 2
        (base * lib.tensor([1.0, 10.0, 100.0])).sum().backward()
        res.append((a.grad, base.detach()))
    assert_close(res[0][0], res[1][0])  # [1, 40, 600]: without the fix the Function was skipped ([1, 10, 100])
    assert_close(res[0][1], res[1][1])


@pytest.mark.parametrize("lib", LIBS)
def test_mark_dirty_checks_and_version_bump(lib):
    x = lib.ones(2) * 1
    before = x._version
    _doubling_in_place(lib).apply(x)
    assert x._version - before == 2  # the in-place op, and mark_dirty's own bump

    def not_returned(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x * 1

    fn = make_function(lib, not_returned, lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="marked as dirty"):
        fn.apply(leaf(lib) * 1)


@pytest.mark.parametrize("lib", LIBS)
def test_non_differentiable_input_returned_as_is_does_not_require_grad(lib):
    def forward(ctx, x):
        ctx.mark_non_differentiable(x)
        return x

    y = make_function(lib, forward, lambda ctx, g: g).apply(leaf(lib))
    assert not y.requires_grad and y.grad_fn is None


@pytest.mark.parametrize("lib", LIBS)
def test_backward_results_are_checked_against_the_inputs(lib):
    fn = make_function(lib, lambda ctx, x, k: x * k, lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="forward input was not a Variable"):
        fn.apply(leaf(lib), 2).sum().backward()
    fn = make_function(lib, lambda ctx, x: x * 2, lambda ctx, g: 3)
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got int\)"):
        fn.apply(leaf(lib)).sum().backward()


@pytest.mark.parametrize("lib", LIBS)
def test_setup_context_sees_bound_inputs_with_defaults(lib):
    seen = {}

    def forward(x, k=2.0, w=None):
        return x * k if w is None else x * k * w

    def setup_context(ctx, inputs, output):
        seen["inputs"] = len(inputs)
        seen["needs"] = ctx.needs_input_grad
        ctx.k = inputs[1]

    fn = make_function(lib, forward, lambda ctx, g: (g * ctx.k, None, None), setup_context)
    x = leaf(lib)
    fn.apply(x).sum().backward()
    assert seen == {"inputs": 3, "needs": (True, False, False)}
    x.grad = None
    fn.apply(x, k=5.0).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("lib", LIBS)
def test_vjp_may_replace_backward_but_not_join_it(lib):
    class ByVjp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 5

    class Both(ByVjp):
        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Neither(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = leaf(lib)
    ByVjp.apply(x).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]
    with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
        Both.apply(x).sum().backward()
    with pytest.raises(NotImplementedError, match="backward or vjp"):
        Neither.apply(x).sum().backward()


@pytest.mark.parametrize("lib", LIBS)
def test_instantiating_a_function_warns_and_calling_it_raises(lib):
    fn = _scaled(lib)
    kinds = caught_warnings(fn)
    assert [k for k, _ in kinds] == ["DeprecationWarning"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Legacy autograd function"):
            fn()(leaf(lib))


@pytest.mark.parametrize("lib", LIBS)
def test_inference_tensors_cannot_be_saved_by_a_recorded_function(lib):
    def forward(ctx, x, t):
        ctx.save_for_backward(t)
        return x * t

    fn = make_function(lib, forward, lambda ctx, g: (g, None))
    with lib.inference_mode():
        t = lib.ones(3)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        fn.apply(leaf(lib), t)
    assert not fn.apply(lib.ones(3), t).requires_grad  # nothing recorded, nothing saved


# ------------------------------------------------------------------------------------------ backward / grad

@pytest.mark.parametrize("lib", LIBS)
def test_backward_inputs_argument(lib):
    x = leaf(lib)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * x).sum().backward(inputs=[])
    (x * 2).sum().backward(inputs={"x": x})
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    z = x * 2
    kinds = caught_warnings(lambda: (z * z).sum().backward(inputs=[z]))  # no non-leaf .grad warning
    assert kinds == []
    assert z.grad.tolist() == [4.0, 8.0, 12.0]


@pytest.mark.parametrize("lib", LIBS)
def test_backward_deprecated_grad_variables(lib):
    x = leaf(lib)
    kinds = caught_warnings(lambda: lib.autograd.backward(x * 2, grad_variables=lib.ones(3)))
    assert [k for k, _ in kinds] == ["FutureWarning"]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="both passed"):
            lib.autograd.backward(x * 2, grad_tensors=lib.ones(3), grad_variables=lib.ones(3))


def test_backward_with_create_graph_warns_about_the_reference_cycle():
    from oneflow import autograd

    autograd._create_graph_warned[0] = False  # warned once per process, as torch
    x = leaf(flow)
    kinds = caught_warnings(lambda: (x * x).sum().backward(create_graph=True))
    assert len(kinds) == 1 and "reference cycle" in kinds[0][1]
    assert caught_warnings(lambda: (x * x).sum().backward(create_graph=True)) == []


@pytest.mark.parametrize("lib", LIBS)
def test_grad_arguments(lib):
    x, w = leaf(lib), leaf(lib)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        lib.autograd.grad((x * x).sum(), [])
    with pytest.raises(RuntimeError, match="all inputs have to be Tensors"):
        lib.autograd.grad((x * x).sum(), [x, 3])
    res = lib.autograd.grad((x * w).sum(), {"x": x, "w": w})
    assert list(res) == ["x", "w"] and res["x"].tolist() == [1.0, 2.0, 3.0]
    kinds = caught_warnings(lambda: lib.autograd.grad((x * 2).sum(), x, only_inputs=False))
    assert [k for k, _ in kinds] == ["FutureWarning"]
    # extra grad_outputs are ignored (paired with the outputs)
    (g,) = lib.autograd.grad([x * 2], x, grad_outputs=[lib.ones(3), lib.ones(3)])
    assert g.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialized_grads_require_grad_with_create_graph(create_graph):
    res = []
    for lib in LIBS:
        x, w = leaf(lib), leaf(lib)
        r = lib.autograd.grad((x * x).sum(), [x, w], materialize_grads=True, create_graph=create_graph)
        res.append([(t.requires_grad, t.tolist()) for t in r])
    assert res[0] == res[1]


def test_batched_grad_checks_and_materialized_zeros_like_torch():
    res = []
    for lib in LIBS:
        x, w = leaf(lib), leaf(lib)
        y = x * x
        r = lib.autograd.grad(y, [x, w], grad_outputs=lib.eye(3), is_grads_batched=True, materialize_grads=True)
        res.append([tuple(t.shape) for t in r])
        with pytest.raises(RuntimeError, match="is_grads_batched=True"):
            lib.autograd.grad(x * 2, x, grad_outputs=lib.ones(3), is_grads_batched=True)
        with pytest.raises(ValueError, match="same size in the mapped dimension"):
            lib.autograd.grad([y, y], x, grad_outputs=[lib.ones(2, 3), lib.ones(4, 3)], is_grads_batched=True)
    assert res[0] == res[1] == [(3, 3), (3,)]


# ------------------------------------------------------------------------------------------ grad modes

@pytest.mark.parametrize("lib", LIBS)
def test_set_grad_enabled_wants_a_bool(lib):
    with pytest.raises(TypeError, match="must be bool"):
        lib.set_grad_enabled("yes")
    assert lib.is_grad_enabled()


# ------------------------------------------------------------------------------------------ hooks

@pytest.mark.parametrize("lib", LIBS)
def test_tensor_hook_results_are_checked(lib):
    x = leaf(lib)
    x.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="changed the size of value"):
        (x * x).sum().backward()
    x = leaf(lib)
    x.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="changed the type of value"):
        (x * x).sum().backward()
    x = leaf(lib)
    x.register_post_accumulate_grad_hook(lambda t: 5)
    with pytest.raises(TypeError, match="hook returned 'int'"):
        (x * x).sum().backward()


@pytest.mark.parametrize("lib", LIBS)
def test_hook_handles_and_post_accumulate_hooks_with_backward_inputs(lib):
    x = leaf(lib)
    calls = []
    with x.register_hook(lambda g: calls.append("hook")):
        (x * x).sum().backward()
    (x * x).sum().backward()
    assert calls == ["hook"]
    handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.tolist()))
    x.grad = None
    (x * x).sum().backward(inputs=[x])
    handle.remove()
    (x * x).sum().backward(inputs=[x])
    assert calls == ["hook", [2.0, 4.0, 6.0]]


@pytest.mark.parametrize("lib", LIBS)
def test_pack_hooks_run_without_grad(lib):
    modes = []

    def pack(t):
        modes.append(lib.is_grad_enabled())
        return t * 1  # recorded if grad mode were on

    x = leaf(lib)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = (x * x).sum()
        _scaled(lib).apply(x)
    y.backward()
    assert modes and not any(modes)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("lib", LIBS)
def test_graph_module_names(lib):
    x = leaf(lib) * 1
    assert isinstance(x.grad_fn, lib.autograd.graph.Node)
    before = x._version
    lib.autograd.graph.increment_version(x)
    assert x._version == before + 1


# ------------------------------------------------------------------------------------------ gradcheck

def _verdict(lib, fn, inputs, **kw):
    try:
        return lib.autograd.gradcheck(fn, inputs, **kw)
    except RuntimeError as e:
        return type(e).__name__


@pytest.mark.parametrize("lib", LIBS)
def test_gradcheck_verdicts_on_failing_functions(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)

    class Noisy(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + random.random() * 1e-3)

    assert _verdict(lib, Noisy.apply, (x,), atol=1e-2) == "GradcheckError"  # not reentrant
    assert _verdict(lib, lambda t: t.detach() * 2, (x,)) == "GradcheckError"  # varies, without grad
    assert _verdict(lib, lambda t: (t * 2, t.long()), (x,)) is True  # integer outputs are not checked


@pytest.mark.parametrize("lib", LIBS)
def test_gradgradcheck_of_a_once_differentiable_function_fails_as_a_check(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t ** 2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 2 * t

    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(Square.apply, (x,))
    with pytest.raises(RuntimeError) as info:
        lib.autograd.gradgradcheck(Square.apply, (x,))
    assert type(info.value).__name__ == "GradcheckError"
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 2.0])


def test_inference_tensors_cannot_be_saved_for_backward():
    for lib in (flow, torch):
        with lib.inference_mode():
            t = lib.ones(2)
        x = lib.ones(2, requires_grad=True)
        assert (x + t).requires_grad  # add saves neither operand
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            x * t  # mul saves both
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            (x * 2) * t
