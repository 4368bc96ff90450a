"""C++ errors reach Python with the exception type of their kind (FLOW_RUNTIME/TYPE/VALUE/INDEX_CHECK, not
implemented), the same on both ways out of C++: an op call and any other binding (nanobind's translator)."""
import pytest

import oneflow as flow
from oneflow import _C


@pytest.mark.parametrize("kind,call", [
    (IndexError, lambda: _C.ops.select(flow.ones(2), 0, 5)),
    (TypeError, lambda: _C.ops.select(flow.ones(2))),
    (ValueError, lambda: _C.ops.nll_loss(flow.ones(2, 3), flow.zeros(2, dtype=flow.int64), None, "bogus")),
    (NotImplementedError, lambda: _C.ops.nonzero(flow.zeros(2, device="meta"))),
    (RuntimeError, lambda: _C.ops.add(flow.ones(2), flow.ones(3))),
], ids=["index", "type", "value", "not_implemented", "runtime"])
def test_op_errors_raise_their_kind(kind, call):
    with pytest.raises(kind) as e:
        call()
    assert type(e.value) is kind  # not a subclass standing in for it


def test_binding_errors_raise_their_kind():
    before = _C._autocast_dtype()
    with pytest.raises(ValueError, match="autocast: dtype must be a floating type"):
        _C._set_autocast_dtype(flow.int64)
    assert _C._autocast_dtype() == before
    with pytest.raises(RuntimeError, match="must match the size"):
        _C._broadcast_shapes([2], [3])
