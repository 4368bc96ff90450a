"""runtime_state_dict() / load_runtime_state_dict(): a compiled graph saved with flow.save runs in a fresh
process without tracing, with the original's results; bad files raise and leave the graph intact."""
import numpy as np
import pytest

import oneflow as flow
import oneflow_graph
from oneflow_graph.runtime_state import RuntimeStateError

from models import batch
from saved_graphs import make, run_child


def _np(x):
    return x.detach().numpy()


def _x(rng, n=2):
    return flow.tensor(rng.standard_normal((n, 3, 8, 8)).astype(np.float32))


def test_inference_graph_loads_in_a_fresh_process_without_tracing(tmp_path):
    rng = np.random.default_rng(0)
    g = make("infer")
    a, b = _x(rng), _x(rng, 3)
    g(a)
    g(b, 3.0)  # two signatures compiled: both are saved
    flow.save(g.runtime_state_dict(), tmp_path / "rt.of")
    inputs = [(_x(rng),), (_x(rng, 3), 3.0)]
    flow.save(inputs, tmp_path / "in.of")
    run_child(tmp_path / "rt.of", tmp_path / "in.of", tmp_path / "out.of", "infer")
    got = flow.load(tmp_path / "out.of")
    assert got["compiles"] == 0
    print(f"reloaded runtime state: load + first call {got['seconds'] * 1e3:.1f} ms")
    for (x, *rest), out in zip(inputs, got["outs"]):
        want = g(x, *rest)
        assert sorted(out) == ["logits", "note", "pair"] and out["note"] == "plain"
        np.testing.assert_array_equal(_np(out["logits"]), _np(want["logits"]))
        # y.sum() * scale: the Python number stays a wrapped number (weak in promotion) after loading
        assert out["pair"][0].dtype == want["pair"][0].dtype == flow.float32
        np.testing.assert_array_equal(_np(out["pair"][0]), _np(want["pair"][0]))
        assert isinstance(out["pair"][1], list)
        np.testing.assert_array_equal(_np(out["pair"][1][0]), _np(want["pair"][1][0]))


def test_training_graph_resumes_in_a_fresh_process_bitwise(tmp_path):
    rng = np.random.default_rng(1)
    g = make("train")
    for _ in range(3):  # first call makes Adam's state, the second compiles the steady step
        g(*batch("cnn", rng))
    flow.save(g.runtime_state_dict(), tmp_path / "rt.of")
    inputs = [batch("cnn", rng) for _ in range(3)]
    flow.save(inputs, tmp_path / "in.of")
    run_child(tmp_path / "rt.of", tmp_path / "in.of", tmp_path / "out.of", "train")
    got = flow.load(tmp_path / "out.of")
    assert got["compiles"] == 0
    want = [g(*x).item() for x in inputs]
    assert [o.item() for o in got["outs"]] == want
    for k, v in g.model.state_dict().items():
        np.testing.assert_array_equal(got["params"][k].numpy(), v.numpy(), err_msg=k)


def test_runtime_state_is_plain_data_loaded_without_pickle(tmp_path):
    import zipfile

    g = make("infer")
    g(_x(np.random.default_rng(2)))
    flow.save(g.runtime_state_dict(), tmp_path / "rt.of")
    names = zipfile.ZipFile(tmp_path / "rt.of").namelist()
    assert "oneflow/data.json" in names and "oneflow/data.pkl" not in names
    flow.load(tmp_path / "rt.of", weights_only=True)


def test_in_process_round_trip_and_repr():
    rng = np.random.default_rng(3)
    g = make("infer")
    x = _x(rng)
    want = g(x)
    g2 = make("infer")
    g2.load_runtime_state_dict(g.runtime_state_dict())
    assert g2.is_compiled and g2._compile_count == 0
    np.testing.assert_array_equal(_np(g2(x)["logits"]), _np(want["logits"]))
    assert "(INPUT:_" in repr(g2) and "(OUTPUT:_" in repr(g2)
    # a new signature still compiles as usual
    g2(_x(rng, 5))
    assert g2._compile_count == 1


def _state_of(g):
    return {k: v.numpy().copy() for k, v in g.model.state_dict().items()}


def test_another_graphs_or_corrupted_state_raises_and_loads_nothing(tmp_path):
    rng = np.random.default_rng(4)
    src = make("infer")
    x = _x(rng)
    src(x)
    rt = src.runtime_state_dict()
    target = make("infer")
    target(x)
    before, out_before = _state_of(target), _np(target(x)["logits"])

    def check(bad, match):
        with pytest.raises(RuntimeStateError, match=match):
            target.load_runtime_state_dict(bad)
        after = _state_of(target)
        for k in before:
            np.testing.assert_array_equal(after[k], before[k])
        np.testing.assert_array_equal(_np(target(x)["logits"]), out_before)
        assert len(target._cache) == 1

    train = make("train")
    for _ in range(2):
        train(*batch("cnn", rng))
    check(train.runtime_state_dict(), r"saved from a graph of class models.TrainGraph, not saved_graphs.InferGraph")
    check({"weights": 1}, r"not a graph runtime state")
    check(dict(rt, version=99), r"version 99")
    nodes = rt["signatures"][0]["ir"]["nodes"]
    bad_op = dict(rt, signatures=[dict(rt["signatures"][0], ir=dict(rt["signatures"][0]["ir"],
                                                                      nodes=[dict(nodes[0], op="no_such_op")] + nodes[1:]))])
    check(bad_op, r"corrupted .*'no_such_op' is not in this build's op registry")
    dangling = dict(rt, signatures=[dict(rt["signatures"][0], ir=dict(rt["signatures"][0]["ir"], nodes=nodes[1:]))])
    check(dangling, r"corrupted .*used before it is defined")
    truncated = dict(rt, signatures=[{"signature": rt["signatures"][0]["signature"]}])
    check(truncated, r"corrupted .*KeyError")
    wrong_shape = dict(rt, states={"model": dict(rt["states"]["model"], **{"0.weight": flow.zeros(8, 3, 2, 2)})})
    check(wrong_shape, r"(?s)does not fit .*size mismatch for model.0.weight")
    # a damaged file is refused by flow.load itself (the zip's checksums)
    path = tmp_path / "rt.of"
    flow.save(rt, path)
    data = bytearray(path.read_bytes())
    i = data.find(b'"nodes"')
    data[i + 20:i + 40] = b"#" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="is corrupted or not a valid checkpoint"):
        target.load_runtime_state_dict(flow.load(path))
    assert _state_of(target).keys() == before.keys()


def test_uncompiled_graph_and_first_step_only_have_nothing_to_save():
    g = make("train")
    with pytest.raises(RuntimeError, match="no compiled plan to save yet"):
        g.runtime_state_dict()
    g(*batch("cnn", np.random.default_rng(5)))  # the state-creating first step is not cached
    with pytest.raises(RuntimeError, match="needs a second call"):
        g.runtime_state_dict()


def test_module_reexports_error():
    assert issubclass(RuntimeStateError, RuntimeError)
    assert oneflow_graph.Graph.load_runtime_state_dict.__doc__
