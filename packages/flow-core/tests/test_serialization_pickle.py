"""flow.save / flow.load of any picklable object: safe by default (weights_only=True), full pickle only on request
(weights_only=False), the safe-globals allowlist, and PyTorch files either way; compared with torch 2.13."""
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import nn, serialization

from helpers import assert_close


class Config:
    """A user class: plain objects like this need weights_only=False or an allowlist entry."""

    def __init__(self, lr, betas):
        self.lr, self.betas = lr, betas


class Boom:
    def __init__(self):
        self.state = 1  # pickled as state, so that unpickling calls __setstate__

    def __setstate__(self, state):
        raise ValueError("boom from __setstate__")


CALLS = []


def record_call(tag):
    CALLS.append(tag)
    return tag


class CallsOnLoad:
    """Unpickling it calls record_call: shows whether a load ran code named by the file."""

    def __reduce__(self):
        return (record_call, ("ran",))


@pytest.fixture(autouse=True)
def _no_leftover_allowlist():
    serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()
    CALLS.clear()
    yield
    serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()


def flow_bytes(obj, **kw):
    b = io.BytesIO()
    flow.save(obj, b, **kw)
    return b.getvalue()


def torch_bytes(obj, **kw):
    b = io.BytesIO()
    torch.save(obj, b, **kw)
    return b.getvalue()


def load_both(data_flow, data_torch, **kw):
    return flow.load(io.BytesIO(data_flow), **kw), torch.load(io.BytesIO(data_torch), **kw)


# ---- whole modules ----------------------------------------------------------------------------------------
def test_whole_module_needs_weights_only_false(tmp_path):
    m = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    p = tmp_path / "model.pt"
    flow.save(m, p)
    with pytest.raises(pickle.UnpicklingError, match="weights_only.*\n.*weights_only=False") as e:
        flow.load(p)
    assert "oneflow.nn.modules.container.Sequential" in str(e.value)
    r = flow.load(p, weights_only=False)
    assert type(r) is nn.Sequential and type(r[0]) is nn.Linear
    assert isinstance(r[0].weight, nn.Parameter) and r[0].weight.requires_grad
    x = flow.randn(5, 2)
    assert_close(r(x), m(x))
    r(x).sum().backward()  # the loaded module trains
    assert r[0].weight.grad is not None


def test_module_and_optimizer_saved_together_share_parameters(tmp_path):
    lin = nn.Linear(3, 3)
    head = nn.Linear(3, 3)
    head.weight = lin.weight  # tied
    model = nn.Sequential(lin, head)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    p = tmp_path / "ck.pt"
    flow.save({"model": model, "opt": opt.state_dict(), "epoch": 4}, p)
    r = flow.load(p, weights_only=False)
    assert r["model"][0].weight is r["model"][1].weight
    assert r["epoch"] == 4 and r["opt"]["param_groups"][0]["lr"] == 0.1
    with flow.no_grad():
        r["model"][0].weight.fill_(2.0)
    assert r["model"][1].weight[0, 0].item() == 2.0


def test_map_location_applies_to_pickled_objects(tmp_path):
    p = tmp_path / "m.pt"
    flow.save(nn.Linear(2, 2), p)
    seen = []
    r = flow.load(p, weights_only=False, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cpu", "cpu"] and type(r) is nn.Linear


# ---- NumPy arrays and the allowlist, against torch -----------------------------------------------------------
NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.int64)),
                 type(np.dtype(np.float32))]


def test_numpy_arrays_refused_by_default_like_torch():
    obj = {"a": np.arange(3), "t": [1, 2]}
    data_f = flow_bytes({**obj, "t": flow.tensor([1, 2])})
    data_t = torch_bytes({**obj, "t": torch.tensor([1, 2])})
    for lib, data in ((flow, data_f), (torch, data_t)):
        with pytest.raises(pickle.UnpicklingError, match="weights_only") as e:
            lib.load(io.BytesIO(data))
        assert "numpy._core.multiarray._reconstruct" in str(e.value)
        assert "add_safe_globals" in str(e.value)
    rf, rt = load_both(data_f, data_t, weights_only=False)
    np.testing.assert_array_equal(rf["a"], rt["a"])
    assert rf["t"].tolist() == rt["t"].tolist() == [1, 2]


def test_safe_globals_context_admits_numpy_like_torch():
    arrays = {"i": np.arange(4), "f": np.linspace(0, 1, 3).astype(np.float32)}
    data_f, data_t = flow_bytes(arrays), torch_bytes(arrays)
    with serialization.safe_globals(NUMPY_GLOBALS), torch.serialization.safe_globals(NUMPY_GLOBALS):
        assert set(serialization.get_safe_globals()) == set(NUMPY_GLOBALS)
        rf, rt = load_both(data_f, data_t)
    for k in arrays:
        np.testing.assert_array_equal(rf[k], arrays[k])
        np.testing.assert_array_equal(rt[k], arrays[k])
        assert rf[k].dtype == arrays[k].dtype
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        flow.load(io.BytesIO(data_f))
    # the allowlist also serves PyTorch's files
    with serialization.safe_globals(NUMPY_GLOBALS):
        np.testing.assert_array_equal(flow.load(io.BytesIO(data_t))["i"], arrays["i"])


def test_add_get_clear_safe_globals():
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([Config])
    serialization.add_safe_globals([Config, (record_call, "somewhere.else")])
    assert serialization.get_safe_globals() == [Config, (record_call, "somewhere.else")]
    with serialization.safe_globals([Config, Boom]):  # Config was there before: it stays after
        assert Boom in serialization.get_safe_globals()
    assert serialization.get_safe_globals() == [Config, (record_call, "somewhere.else")]
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with pytest.raises(ValueError, match="Expected tuple of length 2"):
        serialization.add_safe_globals([(Config,)])
    with pytest.raises(TypeError, match="str of callable full path"):
        serialization.add_safe_globals([(Config, 3)])
    with pytest.raises(TypeError, match="list of globals"):
        serialization.add_safe_globals(Config)
    assert serialization.get_safe_globals() == []


def test_allowlisted_class_loads_with_weights_only_like_torch():
    cfg = Config(0.1, (0.9, 0.99))
    data_f, data_t = flow_bytes({"cfg": cfg}), torch_bytes({"cfg": cfg})
    for lib, data in ((flow, data_f), (torch, data_t)):
        with pytest.raises(pickle.UnpicklingError, match="test_serialization_pickle.Config"):
            lib.load(io.BytesIO(data))
    serialization.add_safe_globals([Config])
    torch.serialization.add_safe_globals([Config])
    rf, rt = load_both(data_f, data_t)
    for r in (rf, rt):
        assert type(r["cfg"]) is Config and r["cfg"].lr == 0.1 and r["cfg"].betas == (0.9, 0.99)
    assert type(flow.load(io.BytesIO(data_t))["cfg"]) is Config


def test_allowlist_entry_under_another_name():
    data = flow_bytes({"cfg": Config(1, 2)})
    serialization.add_safe_globals([(Config, "test_serialization_pickle.Other")])
    with pytest.raises(pickle.UnpicklingError, match="Config"):  # the file's name doesn't match the entry's
        flow.load(io.BytesIO(data))
    serialization.clear_safe_globals()
    serialization.add_safe_globals([(Config, f"{Config.__module__}.Config")])
    assert flow.load(io.BytesIO(data))["cfg"].lr == 1


def test_blocked_modules_stay_blocked_even_when_allowlisted(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    data = torch_bytes({"e": Evil()})
    serialization.add_safe_globals([os.system])
    torch.serialization.add_safe_globals([os.system])
    for lib in (flow, torch):
        with pytest.raises(pickle.UnpicklingError, match=r"(posix|os|nt)\.system.*is blocked"):
            lib.load(io.BytesIO(data))
    assert not marker.exists()


# ---- what runs when --------------------------------------------------------------------------------------
def test_weights_only_never_runs_code_and_false_is_full_pickle():
    data = flow_bytes({"x": CallsOnLoad(), "t": flow.ones(1)})
    with pytest.raises(pickle.UnpicklingError, match="test_serialization_pickle.record_call"):
        flow.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError):
        flow.load(io.BytesIO(data), weights_only=True)
    assert CALLS == []
    r = flow.load(io.BytesIO(data), weights_only=False)
    assert CALLS == ["ran"] and r["x"] == "ran"


def _our_archive_with_record(payload):
    """A file in our format whose pickle record is ``payload`` (as an attacker could write it)."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as zf:
        zf.writestr("oneflow/version", "1")
        zf.writestr("oneflow/byteorder", "little")
        zf.writestr("oneflow/data.json",
                    '{"format":"oneflow","version":"1","root":{"T":"pickle"},"tensors":[],"storages":[]}')
        zf.writestr("oneflow/data.pkl", payload)
    return b.getvalue()


@pytest.mark.parametrize("payload", [
    b"cbuiltins\neval\n(V__import__('os').system('touch PWNED')\ntR.",
    b"cos\nsystem\n(Vtouch PWNED\ntR.",
    b"ccopyreg\n_reconstructor\n(cos\nsystem\ntR.",
    b"\x80\x02coneflow\nload\nq\x00.",
])
def test_handmade_records_are_refused(tmp_path, monkeypatch, payload):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="flow.load: Weights only load failed"):
        flow.load(io.BytesIO(_our_archive_with_record(payload)))
    assert not (tmp_path / "PWNED").exists()


def test_bad_persistent_ids_in_a_record_are_refused():
    for pid in (b"(S'storage'\nI0\nt", b"(S'tensor'\nI7\nt", b"(S'dtype'\nS'complex64'\nt"):
        with pytest.raises((pickle.UnpicklingError, RuntimeError), match="flow.load"):
            flow.load(io.BytesIO(_our_archive_with_record(pid + b"Q.")))


def test_plain_data_is_stored_as_data_and_loads_either_way():
    obj = {"w": flow.arange(3.0), "meta": collections.OrderedDict(a=1), "s": {1, 2}, "n": None}
    data = flow_bytes(obj)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert "oneflow/data.pkl" not in zf.namelist()
    for wo in (True, False, None):
        r = flow.load(io.BytesIO(data), weights_only=wo)
        assert r["w"].tolist() == [0.0, 1.0, 2.0] and r["meta"] == obj["meta"] and r["s"] == {1, 2}


def test_container_subclasses_keep_their_type_through_pickle():
    dd = collections.defaultdict(list, a=[1])
    data_f, data_t = flow_bytes(dd), torch_bytes(dd)
    for lib, data in ((flow, data_f), (torch, data_t)):
        with pytest.raises(pickle.UnpicklingError, match="collections.defaultdict"):
            lib.load(io.BytesIO(data))
    rf, rt = load_both(data_f, data_t, weights_only=False)
    assert type(rf) is type(rt) is collections.defaultdict and rf == rt and rf["new"] == []
    # containers with no globals of their own load by default, as in torch
    counter = collections.Counter("abca")
    rf, rt = load_both(flow_bytes(counter), torch_bytes(counter))
    assert type(rf) is collections.Counter and rf == rt


def test_errors_of_the_files_objects_propagate_with_weights_only_false():
    data_f, data_t = flow_bytes({"b": Boom()}), torch_bytes({"b": Boom()})
    serialization.add_safe_globals([Boom])
    for lib, data in ((flow, data_f), (torch, data_t)):
        with pytest.raises(ValueError, match="boom from __setstate__"):
            lib.load(io.BytesIO(data), weights_only=False)


def test_pickle_module_argument_like_torch():
    data_f, data_t = flow_bytes(nn.Identity()), torch_bytes(torch.nn.Identity())
    for lib, data in ((flow, data_f), (torch, data_t)):
        with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
            lib.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    # pickle_module alone means weights_only=False
    rf, rt = load_both(data_f, data_t, pickle_module=pickle)
    assert type(rf) is nn.Identity and type(rt) is torch.nn.Identity
    # and save pickles with it, at the protocol asked for
    data = flow_bytes(Config(1, 2), pickle_module=pickle, pickle_protocol=2)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.read("oneflow/data.pkl")[:2] == b"\x80\x02"


# ---- PyTorch files with weights_only=False -------------------------------------------------------------------
def test_torch_saved_module_loads_as_the_oneflow_module():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    data = torch_bytes(tm)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential"):
        flow.load(io.BytesIO(data))
    fm = flow.load(io.BytesIO(data), weights_only=False)
    assert type(fm) is flow.nn.modules.container.Sequential and type(fm[0]) is nn.Linear
    x = np.random.randn(5, 4).astype(np.float32)
    assert_close(fm(flow.tensor(x)), tm(torch.tensor(x)).detach().numpy())
    # allowlisting oneflow's classes admits PyTorch's at the same paths, as under mock_torch
    with serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        fm = flow.load(io.BytesIO(data))
    assert_close(fm(flow.tensor(x)), tm(torch.tensor(x)).detach().numpy())


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_file_with_numpy_and_user_objects(legacy):
    obj = {"w": torch.arange(4.0), "np": np.eye(2), "cfg": Config(0.5, (1, 2)), "x": CallsOnLoad()}
    data = torch_bytes(obj, _use_new_zipfile_serialization=not legacy)
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        flow.load(io.BytesIO(data))
    assert CALLS == []
    r = flow.load(io.BytesIO(data), weights_only=False)
    assert r["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and isinstance(r["w"], flow.Tensor)
    np.testing.assert_array_equal(r["np"], np.eye(2))
    assert type(r["cfg"]) is Config and r["cfg"].betas == (1, 2)
    assert r["x"] == "ran" and CALLS == ["ran"]


def test_torch_global_without_a_oneflow_counterpart_is_named():
    import torch.ao.nn.quantized.functional as qf

    data = torch_bytes({"f": qf.linear})
    with pytest.raises(pickle.UnpicklingError, match="holds a 'torch.ao.nn.quantized.functional.linear', and "
                                                     "oneflow has no 'oneflow.ao.nn.quantized.functional.linear'"):
        flow.load(io.BytesIO(data), weights_only=False)


def test_tensor_subclass_and_attributes_from_torch():
    t = torch.arange(3.0)
    t.note = "kept"
    data = torch_bytes({"t": t})
    rf, rt = load_both(data, data, weights_only=False)
    assert rf["t"].tolist() == rt["t"].tolist() and rf["t"].note == rt["t"].note == "kept"
