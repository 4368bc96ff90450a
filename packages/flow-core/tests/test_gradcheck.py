"""autograd.gradcheck / gradgradcheck: they pass where autograd is right and catch wrong first and second
derivatives of custom Functions, as torch's do; plus the legacy Variable wrapper."""
import numpy as np
import pytest

import oneflow as flow
from oneflow.autograd import GradcheckError, Variable, gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def _cube_functions(M, detach_in_backward):
    class Cube(M.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 3 * (a.detach() if detach_in_backward else a) ** 2

    class WrongFirst(M.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Cube, WrongFirst


@pytest.mark.parametrize("lib", ["flow", "torch"])
def test_gradcheck_agrees_with_torchs_verdicts(lib):
    M = flow if lib == "flow" else torch
    check, check2 = (gradcheck, gradgradcheck) if lib == "flow" else (torch.autograd.gradcheck,
                                                                      torch.autograd.gradgradcheck)
    rng = np.random.default_rng(0)
    x = M.tensor(rng.standard_normal(3), dtype=M.float64, requires_grad=True)
    y = M.tensor(rng.standard_normal((3,)), dtype=M.float64, requires_grad=True)
    good, wrong_double = _cube_functions(M, False)[0], _cube_functions(M, True)[0]
    wrong_first = _cube_functions(M, False)[1]
    verdicts = [check(lambda a, b: (a * b.sin(), a.exp()), (x, y)), check(good.apply, (x,)),
                check2(good.apply, (x,)), check(wrong_first.apply, (x,), raise_exception=False),
                check2(wrong_double.apply, (x,), raise_exception=False), check(wrong_double.apply, (x,))]
    assert verdicts == [True, True, True, False, False, True]


def test_gradcheck_errors_and_warnings():
    x = flow.randn(3, dtype=flow.float64, requires_grad=True)
    wrong_first = _cube_functions(flow, False)[1]
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(wrong_first.apply, (x,))
    assert issubclass(GradcheckError, RuntimeError)
    with pytest.warns(UserWarning, match="not a double precision"):
        gradcheck(lambda a: a * 2, (flow.randn(2, requires_grad=True),), atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (flow.randn(2, dtype=flow.float64),))


def test_variable_is_the_legacy_tensor_wrapper():
    t = flow.ones(2)
    assert Variable(t) is t and isinstance(t, Variable) and not isinstance(3, Variable)
    assert Variable(flow.ones(2), requires_grad=True).requires_grad
