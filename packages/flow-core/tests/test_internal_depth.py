"""``_C._internal_depth()``: 0 for ops user code calls, > 0 for the ops a composite's definition or a backward
pass issues (the core's own tensors, which a handler may treat differently from a user's); and the
``__flow_composite__`` hook, which sees a composite's inputs as the user gave them."""
import pytest

import oneflow as flow
import oneflow.nn.functional as F


class Recording(flow.Tensor):
    """A wrapper that records (op, internal depth) for every op it handles."""

    seen = []
    composites = []
    refuse = False

    @staticmethod
    def wrap(inner, requires_grad=False):
        w = flow._C._make_wrapper(Recording, list(inner.shape), inner.dtype, None, requires_grad)
        w.inner = inner
        return w

    @classmethod
    def __flow_dispatch__(cls, op, inputs, attrs):
        cls.seen.append((op.name, flow._C._internal_depth()))
        out = op.redispatch([t.inner if isinstance(t, Recording) else t for t in inputs], attrs)
        if isinstance(out, tuple):
            return tuple(Recording.wrap(o) for o in out)
        return Recording.wrap(out)

    @staticmethod
    def __flow_composite__(op, inputs):
        Recording.composites.append((op.name, [type(t).__name__ for t in inputs]))
        if Recording.refuse:
            raise RuntimeError(f"{op.name}: refused")


def setup_function():
    Recording.seen.clear()
    Recording.composites.clear()
    Recording.refuse = False


def test_user_ops_run_at_depth_0_and_a_composites_inner_ops_deeper():
    x = Recording.wrap(flow.randn(4, 5))
    x * 2
    assert Recording.seen == [("mul", 0)]
    F.dropout(x, 0.5)  # a composite: bernoulli and the masked scale inside it
    inner = Recording.seen[1:]
    assert {n for n, _ in inner} >= {"bernoulli", "_masked_scale"} and all(d > 0 for _, d in inner), inner
    assert Recording.composites == [("dropout", ["Recording"])]
    assert flow._C._internal_depth() == 0


def test_backward_ops_run_deeper():
    x = Recording.wrap(flow.randn(3), requires_grad=True)
    y = (x * x).sum()
    n = len(Recording.seen)
    assert all(d == 0 for _, d in Recording.seen)
    y.backward()
    assert len(Recording.seen) > n and all(d > 0 for _, d in Recording.seen[n:]), Recording.seen[n:]
    assert flow._C._internal_depth() == 0


def test_a_composite_hook_error_propagates_and_leaves_depth_0():
    Recording.refuse = True
    x = Recording.wrap(flow.randn(2, 3))
    with pytest.raises(RuntimeError, match="dropout: refused"):
        F.dropout(x, 0.5)
    assert flow._C._internal_depth() == 0
    Recording.refuse = False
    with pytest.raises(RuntimeError):  # an error inside a composite's definition also unwinds the depth
        F.dropout(flow.ones(2, dtype=flow.int64), 0.5)
    assert flow._C._internal_depth() == 0


def test_plain_composites_call_no_hook():
    F.dropout(flow.randn(3), 0.5)
    assert Recording.composites == []
