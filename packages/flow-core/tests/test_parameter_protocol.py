"""nn.Parameter of a tensor subclass that keeps its data elsewhere: the subclass's __flow_parameter__ makes it."""
import pytest

import oneflow as flow


class _Param(flow.nn.Parameter):
    pass


class _Wrapped(flow.Tensor):
    made = []

    @staticmethod
    def __flow_parameter__(data, requires_grad):
        _Wrapped.made.append((data, requires_grad))
        return _Param(flow.ones(2), requires_grad)


def test_parameter_of_a_subclass_uses_its_protocol():
    w = flow.zeros(3).as_subclass(_Wrapped)
    p = flow.nn.Parameter(w, requires_grad=False)
    assert type(p) is _Param and _Wrapped.made[-1] == (w, False) and not p.requires_grad
    assert p.tolist() == [1.0, 1.0]
    lin = flow.nn.Linear(2, 1)
    lin.extra = flow.nn.Parameter(w)
    assert "extra" in dict(lin.named_parameters())
    with pytest.raises(TypeError, match="only nn.Parameter can"):
        _Param(w)


def test_plain_parameters_are_unchanged():
    t = flow.ones(2)
    p = flow.nn.Parameter(t)
    assert type(p) is flow.nn.Parameter and p.requires_grad and p.data_ptr() == t.data_ptr()
