"""flow.save / flow.load: round trips, shared storage, atomic writes, corrupt files, PyTorch .pt files."""
import collections
import io
import json
import math
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import nn, serialization

from helpers import assert_close

ALL_DTYPES = [flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64, flow.float16, flow.bfloat16,
              flow.float32, flow.float64]


def roundtrip(obj, tmp_path, **kw):
    p = tmp_path / "ckpt.of"
    flow.save(obj, p)
    return flow.load(p, **kw)


def sample(dtype, shape=(3, 4)):
    a = np.random.RandomState(0).randn(*shape) * 5
    return flow.tensor(a, dtype=flow.float64).to(dtype)


def same_values(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(np.asarray(a.float() if a.dtype == flow.bfloat16 else a),
                                  np.asarray(b.float() if b.dtype == flow.bfloat16 else b))


# ---------------------------------------------------------------------------------------------------------
# our format
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tensor_roundtrip_every_dtype(tmp_path, dtype):
    for shape in [(3, 4), (), (0, 5), (2, 1, 3)]:
        t = sample(dtype, shape)
        r = roundtrip(t, tmp_path)
        assert type(r) is flow.Tensor and not r.requires_grad
        same_values(r, t)


def test_noncontiguous_and_views(tmp_path):
    x = flow.arange(24, dtype=flow.float32).reshape(4, 6)
    obj = {"t": x.t(), "slice": x[1:3, ::2], "sel": x[2], "scalar_view": x[3, 5]}
    r = roundtrip(obj, tmp_path)
    for k in obj:
        same_values(r[k], obj[k])
    assert r["t"].stride() == obj["t"].stride()
    assert r["slice"].stride() == obj["slice"].stride()
    # all four share the one storage: writing through one is seen by the others
    r["sel"].fill_(-1.0)
    assert r["t"][0, 2].item() == -1.0 and r["slice"][1, 0].item() == -1.0
    assert r["scalar_view"].item() == 23.0


def test_shared_storage_same_tensor_twice(tmp_path):
    x = flow.randn(5)
    r = roundtrip({"a": x, "b": [x, (x,)]}, tmp_path)
    assert r["a"] is r["b"][0] is r["b"][1][0]


def test_shared_storage_mutation_visible(tmp_path):
    x = flow.arange(10, dtype=flow.float32)
    r = roundtrip({"base": x, "view": x[3:7], "view2": x.view(2, 5)}, tmp_path)
    r["view"].mul_(10)
    np.testing.assert_array_equal(r["base"].numpy(), [0, 1, 2, 30, 40, 50, 60, 7, 8, 9])
    assert r["view2"][1, 0].item() == 50
    assert r["base"]._storage_ptr() == r["view"]._storage_ptr() == r["view2"]._storage_ptr()


def test_storage_written_once(tmp_path):
    x = flow.zeros(1000)
    p = tmp_path / "f.of"
    flow.save([x, x[1:], x[:10], x.view(10, 100)], p)
    with zipfile.ZipFile(p) as zf:
        storages = [n for n in zf.namelist() if "/storages/" in n]
        assert len(storages) == 1
        assert zf.getinfo(storages[0]).file_size == 4000
        assert not any(n.endswith(".pkl") for n in zf.namelist())  # our format never holds a pickle


def test_unrelated_tensors_do_not_share(tmp_path):
    a, b = flow.ones(3), flow.ones(3)
    r = roundtrip([a, b], tmp_path)
    r[0].add_(1)
    assert r[1].sum().item() == 3.0


def test_parameters_and_requires_grad(tmp_path):
    p = nn.Parameter(flow.randn(3, 2))
    q = nn.Parameter(flow.randn(2), requires_grad=False)
    g = flow.randn(4).requires_grad_()
    r = roundtrip({"p": p, "q": q, "g": g, "nonleaf": g * 2}, tmp_path)
    assert isinstance(r["p"], nn.Parameter) and r["p"].requires_grad
    assert isinstance(r["q"], nn.Parameter) and not r["q"].requires_grad
    assert type(r["g"]) is flow.Tensor and r["g"].requires_grad and r["g"].is_leaf
    assert r["nonleaf"].requires_grad and r["nonleaf"].is_leaf
    same_values(r["p"].detach(), p.detach())
    assert r["p"].grad is None
    # the loaded parameter trains
    (r["p"] * 3).sum().backward()
    np.testing.assert_array_equal(r["p"].grad.numpy(), np.full((3, 2), 3, np.float32))


def test_tied_parameters_stay_tied(tmp_path):
    w = nn.Parameter(flow.randn(4, 3))
    r = roundtrip({"enc": w, "dec": w, "dec_t": w.detach().t()}, tmp_path)
    assert r["enc"] is r["dec"]
    with flow.no_grad():
        r["enc"][0, 0] = 42.0
    assert r["dec_t"][0, 0].item() == 42.0


Point = collections.namedtuple("Point", ["x", "y"])


def test_nested_containers_and_scalars(tmp_path):
    od = collections.OrderedDict([("z", 1), ("a", 2), ("m", 3)])
    obj = {
        "none": None, "true": True, "false": False, "int": -7, "big": 2 ** 80, "float": 1.5, "one": 1.0,
        "nan": float("nan"), "inf": float("inf"), "ninf": -float("inf"), "str": "héllo\n\"x\"", "bytes": b"\x00\xff",
        "bytearray": bytearray(b"ab"), "complex": 1 + 2j, "list": [1, [2, [3]]], "tuple": (1, (2,), ()),
        "set": {1, 2, 3}, "frozenset": frozenset({"a"}), "od": od, 3: "int key", (1, 2): "tuple key",
        None: "none key", 2.5: "float key", "dtype": flow.bfloat16, "device": flow.device("cpu"),
        "size": flow.Size([2, 3]), "np": np.int64(5), "npf": np.float32(0.25), "npb": np.bool_(True),
        "point": Point(1, flow.ones(2)),
    }
    r = roundtrip(obj, tmp_path)
    assert type(r) is dict and list(r) == list(obj)
    for k in ["none", "true", "false", "int", "big", "float", "one", "inf", "ninf", "str", "bytes", "bytearray",
              "complex", "list", "tuple", "set", "frozenset", 3, (1, 2), None, 2.5]:
        assert r[k] == obj[k] and type(r[k]) is type(obj[k]), k
    assert math.isnan(r["nan"])
    assert type(r["od"]) is collections.OrderedDict and list(r["od"].items()) == list(od.items())
    assert r["dtype"] is flow.bfloat16 and r["device"] == flow.device("cpu")
    assert type(r["size"]) is flow.Size and r["size"] == (2, 3)
    assert r["np"] == 5 and type(r["np"]) is int and r["npf"] == 0.25 and r["npb"] is True
    assert r["point"].x == 1 and type(r["point"]).__name__ == "Point" and r["point"]._fields == ("x", "y")
    same_values(r["point"].y, flow.ones(2))


def test_optimizer_state_dict_int_keys(tmp_path):
    sd = {"state": {0: {"step": flow.tensor(3.0), "exp_avg": flow.randn(3)}, 1: {"momentum_buffer": None}},
          "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False}]}
    r = roundtrip(sd, tmp_path)
    assert set(r["state"]) == {0, 1} and all(type(k) is int for k in r["state"])
    assert r["state"][0]["step"].item() == 3.0 and r["state"][1]["momentum_buffer"] is None
    assert r["param_groups"] == [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False}]


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(flow.randn(3, 4))
        self.b = nn.Parameter(flow.zeros(3))
        self.register_buffer("count", flow.tensor(0, dtype=flow.int64))
        self.inner = nn.Module()
        self.inner.scale = nn.Parameter(flow.ones(1))

    def forward(self, x):
        return (x @ self.w.t() + self.b) * self.inner.scale


def test_module_state_dict_roundtrip_and_load(tmp_path):
    src, dst = TinyNet(), TinyNet()
    with flow.no_grad():
        src.count.fill_(7)
    sd = src.state_dict()
    r = roundtrip(sd, tmp_path)
    assert type(r) is type(sd) and list(r) == list(sd)
    if hasattr(sd, "_metadata"):
        assert r._metadata == sd._metadata
    dst.load_state_dict(r)
    x = flow.randn(2, 4)
    same_values(dst(x).detach(), src(x).detach())
    assert dst.count.item() == 7 and dst.count.dtype == flow.int64


def test_paths_and_file_objects(tmp_path):
    t = flow.randn(2, 3)
    for target in [str(tmp_path / "a.of"), tmp_path / "b.of"]:
        flow.save(t, target)
        same_values(flow.load(target), t)
    buf = io.BytesIO()
    flow.save({"t": t}, buf)
    buf.seek(0)
    same_values(flow.load(buf)["t"], t)
    with open(tmp_path / "c.of", "wb") as f:
        flow.save(t, f)
    with open(tmp_path / "c.of", "rb") as f:
        same_values(flow.load(f), t)

    class Unseekable(io.RawIOBase):
        def __init__(self, data):
            self.b = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, m):
            return self.b.readinto(m)

        def seekable(self):
            return False

    same_values(flow.load(Unseekable(buf.getvalue()))["t"], t)
    with pytest.raises(TypeError, match="path or a writable file"):
        flow.save(t, 123)
    with pytest.raises(TypeError, match="path or a readable file"):
        flow.load(123)


def test_save_overwrites_and_keeps_mode(tmp_path):
    p = tmp_path / "m.of"
    flow.save(flow.ones(1), p)
    os.chmod(p, 0o640)
    flow.save(flow.zeros(2), p)
    assert (os.stat(p).st_mode & 0o777) == 0o640
    same_values(flow.load(p), flow.zeros(2))
    assert os.listdir(tmp_path) == ["m.of"]


def test_save_through_symlink_updates_target(tmp_path):
    real = tmp_path / "real.of"
    link = tmp_path / "link.of"
    flow.save(flow.ones(1), real)
    link.symlink_to(real)
    flow.save(flow.zeros(3), link)
    assert link.is_symlink()
    same_values(flow.load(real), flow.zeros(3))


def test_unpicklable_object_leaves_old_file_intact(tmp_path):
    p = tmp_path / "ck.of"
    flow.save({"w": flow.ones(3)}, p)
    before = p.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        flow.save({"w": flow.zeros(3), "bad": lambda: 0}, p)
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["ck.of"]


def test_crash_mid_write_leaves_old_file_intact(tmp_path, monkeypatch):
    p = tmp_path / "ck.of"
    flow.save({"w": flow.ones(3)}, p)
    before = p.read_bytes()
    calls = []
    real = serialization._raw_buffer

    def failing(ptr, nbytes):  # the second storage fails after the first one has been written
        calls.append(nbytes)
        if len(calls) == 2:
            raise OSError("disk on fire")
        return real(ptr, nbytes)

    monkeypatch.setattr(serialization, "_raw_buffer", failing)
    with pytest.raises(OSError, match="disk on fire"):
        flow.save({"a": flow.zeros(1000), "b": flow.zeros(1000)}, p)
    assert len(calls) == 2
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["ck.of"]
    monkeypatch.setattr(serialization, "_raw_buffer", real)

    def no_fsync(fd):
        raise OSError("fsync failed")

    monkeypatch.setattr(os, "fsync", no_fsync)
    with pytest.raises(OSError, match="fsync failed"):
        flow.save(flow.zeros(5), p)
    assert p.read_bytes() == before and os.listdir(tmp_path) == ["ck.of"]
    monkeypatch.undo()
    same_values(flow.load(p)["w"], flow.ones(3))


def test_circular_reference_round_trips(tmp_path):
    # JSON can't hold the cycle, so the list is pickled; plain containers still load with weights_only=True
    a = [flow.ones(1)]
    a.append(a)
    flow.save(a, tmp_path / "x.of")
    r = flow.load(tmp_path / "x.of")
    assert r[1] is r and r[0].tolist() == [1.0]


def test_map_location(tmp_path):
    t = flow.randn(3)
    p = tmp_path / "m.of"
    flow.save({"t": t, "v": t[1:]}, p)
    for ml in ["cpu", flow.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s]:
        r = flow.load(p, map_location=ml)
        same_values(r["t"], t)
        r["t"][1:].fill_(0)
        assert r["v"].sum().item() == 0
    seen = []
    r = flow.load(p, map_location=lambda s, loc: seen.append(loc) or s.clone())
    assert seen == ["cpu"]
    same_values(r["t"], t)
    r["t"].fill_(1)
    assert r["v"].sum().item() == 2
    with pytest.raises(RuntimeError, match="map_location callable must return"):
        flow.load(p, map_location=lambda s, loc: s.double())


def _rewrite(src, dst, edit_json=None, edit_entry=None):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("data.json") and edit_json:
                h = json.loads(data)
                edit_json(h)
                data = json.dumps(h).encode()
            if edit_entry:
                data = edit_entry(info.filename, data)
            zout.writestr(info.filename, data)


def test_device_location_requires_map_location(tmp_path):
    p, q = tmp_path / "a.of", tmp_path / "b.of"
    flow.save(flow.ones(2), p)

    def to_cuda(h):
        h["tensors"][0]["device"] = "cuda:0"

    _rewrite(p, q, to_cuda)
    with pytest.raises(RuntimeError, match="cuda:0.*map_location"):
        flow.load(q)
    same_values(flow.load(q, map_location="cpu"), flow.ones(2))
    same_values(flow.load(q, map_location={"cuda:0": "cpu"}), flow.ones(2))


def test_corrupt_and_truncated_files(tmp_path):
    p = tmp_path / "good.of"
    flow.save({"w": flow.arange(100, dtype=flow.float32), "s": "x" * 50}, p)
    data = p.read_bytes()
    bad = tmp_path / "bad.of"
    cases = {
        "empty": b"", "garbage": b"hello world, not a checkpoint", "truncated": data[: len(data) // 2],
        "truncated_end": data[:-10], "zip_of_nothing": None,
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "hi")
    cases["zip_of_nothing"] = buf.getvalue()
    # flip bytes inside the storage data: the CRC check catches it
    with zipfile.ZipFile(p) as zf:
        info = zf.getinfo("oneflow/storages/0")
    hdr = data[info.header_offset: info.header_offset + 30]
    off = info.header_offset + 30 + int.from_bytes(hdr[26:28], "little") + int.from_bytes(hdr[28:30], "little") + 8
    flipped = bytearray(data)
    flipped[off] ^= 0xFF
    cases["flipped"] = bytes(flipped)
    for name, content in cases.items():
        bad.write_bytes(content)
        with pytest.raises(RuntimeError, match="flow.load: .*(not a valid checkpoint|corrupted)"):
            flow.load(bad)


@pytest.mark.parametrize("edit", [
    lambda h: h["tensors"][0].update(size=[1000]),
    lambda h: h["tensors"][0].update(size=[2 ** 62, 2 ** 62], stride=[2 ** 62, 1]),
    lambda h: h["tensors"][0].update(offset=99),
    lambda h: h["tensors"][0].update(stride=[-1]),
    lambda h: h["tensors"][0].update(storage=5),
    lambda h: h["tensors"][0].update(dtype="float64"),
    lambda h: h["storages"][0].update(nbytes=2 ** 60),
    lambda h: h["storages"][0].update(dtype="object"),
    lambda h: h.update(root={"T": "tensor", "i": 3}),
    lambda h: h.update(root={"T": "evil", "v": "os.system"}),
    lambda h: h.update(root={"T": "namedtuple", "name": "a b", "fields": ["x"], "v": [1]}),
    lambda h: h.update(root={"T": "dict", "v": [[1]]}),
    lambda h: h.update(version="2"),
    lambda h: h.pop("tensors"),
])
def test_tampered_headers_raise_clear_errors(tmp_path, edit):
    p, q = tmp_path / "a.of", tmp_path / "b.of"
    flow.save({"w": flow.arange(10, dtype=flow.float32)}, p)
    _rewrite(p, q, edit)
    with pytest.raises(RuntimeError, match="flow.load: "):
        flow.load(q)


def test_missing_storage_record(tmp_path):
    p, q = tmp_path / "a.of", tmp_path / "b.of"
    flow.save(flow.ones(4), p)
    with zipfile.ZipFile(p) as zin, zipfile.ZipFile(q, "w") as zout:
        for info in zin.infolist():
            if "storages" not in info.filename:
                zout.writestr(info.filename, zin.read(info.filename))
    with pytest.raises(RuntimeError, match="missing storage record"):
        flow.load(q)


# ---------------------------------------------------------------------------------------------------------
# PyTorch files
# ---------------------------------------------------------------------------------------------------------
def _torch_to_np(t):
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _flow_to_np(t):
    t = t.detach()
    return (t.float() if t.dtype == flow.bfloat16 else t).numpy()


def _same_as_torch(f, t):
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(f.shape) == tuple(t.shape)
    np.testing.assert_array_equal(_flow_to_np(f), _torch_to_np(t))


def test_torch_model_state_dict(tmp_path):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                            torch.nn.Linear(4, 2))
    m(torch.randn(2, 3, 3, 3))  # update running stats and num_batches_tracked
    sd = m.state_dict()
    p = tmp_path / "model.pth"
    torch.save(sd, p)
    r = flow.load(p)
    assert type(r) is collections.OrderedDict and list(r) == list(sd)
    for k in sd:
        _same_as_torch(r[k], sd[k])
    assert r["1.num_batches_tracked"].dtype == flow.int64 and r["1.num_batches_tracked"].dim() == 0
    assert r["1.num_batches_tracked"].item() == 1
    assert r._metadata == sd._metadata
    assert all(type(v) is flow.Tensor and not v.requires_grad for v in r.values())


def test_torch_state_dict_into_flow_module(tmp_path):
    class TorchTiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3, 4))
            self.b = torch.nn.Parameter(torch.randn(3))
            self.register_buffer("count", torch.tensor(5))
            self.inner = torch.nn.Module()
            self.inner.scale = torch.nn.Parameter(torch.full((1,), 2.0))

    tm = TorchTiny()
    torch.save(tm.state_dict(), tmp_path / "t.pt")
    fm = TinyNet()
    fm.load_state_dict(flow.load(tmp_path / "t.pt"))
    x = np.random.RandomState(1).randn(2, 4).astype(np.float32)
    expected = (torch.tensor(x) @ tm.w.t() + tm.b) * tm.inner.scale
    assert_close(fm(flow.tensor(x)).detach(), expected.detach(), rtol=1e-5, atol=1e-6)
    assert fm.count.item() == 5


def test_torch_views_share_storage(tmp_path):
    x = torch.arange(12.0)
    obj = {"x": x, "v": x[2:8].view(2, 3), "t": x.view(3, 4).t(), "x2": x}
    torch.save(obj, tmp_path / "v.pt")
    r = flow.load(tmp_path / "v.pt")
    for k in obj:
        _same_as_torch(r[k], obj[k])
    assert r["t"].stride() == obj["t"].stride() and r["v"].storage_offset() == 2
    assert r["x"] is r["x2"]
    r["v"].fill_(-1)
    assert r["x"][2:8].sum().item() == -6 and r["t"][2, 1].item() == -1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.bool, torch.int8, torch.uint8, torch.int16,
                                   torch.int32, torch.int64, torch.float32, torch.float64], ids=str)
def test_torch_dtypes(tmp_path, dtype):
    t = (torch.randn(3, 5) * 10).to(dtype)
    torch.save({"t": t, "scalar": t[1, 2], "empty": t[:0]}, tmp_path / "d.pt")
    r = flow.load(tmp_path / "d.pt")
    _same_as_torch(r["t"], t)
    _same_as_torch(r["scalar"], t[1, 2])
    _same_as_torch(r["empty"], t[:0])


def test_torch_plain_containers_and_parameter(tmp_path):
    p = torch.nn.Parameter(torch.randn(2, 2))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    obj = {"epoch": 3, "lr": 0.5, "name": "run", "flag": True, "none": None, "tuple": (1, (2.5, "a")),
           "list": [1, [2]], "bytes": b"\x00\x01\xff", "set": {1, 2}, "dtype": torch.float16, "p": p,
           "frozen": frozen, "grad_t": torch.ones(2, requires_grad=True), 7: "int key",
           "size": torch.Size([2, 3]), "dev": torch.device("cpu"), "cuda_dev": torch.device("cuda", 1),
           "optim": {"state": {0: {"step": torch.tensor(1.0), "exp_avg": torch.zeros(2)}},
                     "param_groups": [{"lr": 0.1, "params": [0], "betas": (0.9, 0.99)}]}}
    torch.save(obj, tmp_path / "c.pt")
    r = flow.load(tmp_path / "c.pt", weights_only=True)
    for k in ["epoch", "lr", "name", "flag", "none", "tuple", "list", "bytes", "set", 7]:
        assert r[k] == obj[k] and type(r[k]) is type(obj[k]), k
    assert r["dtype"] is flow.float16
    assert type(r["size"]) is flow.Size and r["size"] == (2, 3)
    assert r["dev"] == flow.device("cpu") and str(r["cuda_dev"]) == "cuda:1"
    assert isinstance(r["p"], nn.Parameter) and r["p"].requires_grad
    assert isinstance(r["frozen"], nn.Parameter) and not r["frozen"].requires_grad
    _same_as_torch(r["p"], p)
    assert type(r["grad_t"]) is flow.Tensor and r["grad_t"].requires_grad
    assert r["optim"]["param_groups"] == obj["optim"]["param_groups"]
    assert r["optim"]["state"][0]["step"].item() == 1.0


def test_torch_map_location_and_file_object(tmp_path):
    t = torch.randn(4)
    buf = io.BytesIO()
    torch.save({"t": t, "v": t[1:]}, buf)
    buf.seek(0)
    r = flow.load(buf, map_location="cpu")
    _same_as_torch(r["t"], t)
    locs = []
    buf.seek(0)
    r = flow.load(buf, map_location=lambda s, loc: locs.append(loc) or s)
    assert locs == ["cpu"]
    r["v"].fill_(0)
    assert r["t"][0].item() == t[0].item() and r["t"][1:].abs().sum().item() == 0


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_torch_malicious_pickle_refused(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"w": torch.ones(2), "evil": _Evil(marker)}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"refusing to load the global '(posix|os|nt)\.system'"):
        flow.load(tmp_path / "evil.pt")
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="refusing.*whose module (posix|os|nt) is blocked"):
        flow.load(tmp_path / "evil.pt", weights_only=True)
    assert not marker.exists()


@pytest.mark.parametrize("payload", [
    b"cbuiltins\neval\n(V__import__('os').system('touch PWNED')\ntR.",
    b"cos\nsystem\n(Vtouch PWNED\ntR.",
    b"ctorch._utils\n_rebuild_tensor_v2\n(I1\nI2\ntR.",
    b"ccopyreg\n_reconstructor\n(cos\nsystem\ntR.",
    b"\x80\x02ctorch\nload\nq\x00.",
    b"\x80\x02(X\x03\x00\x00\x00badQ.",
])
def test_handmade_malicious_pickles(tmp_path, payload, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "x.pt"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("x/data.pkl", payload)
        zf.writestr("x/byteorder", "little")
    with pytest.raises((pickle.UnpicklingError, RuntimeError), match="flow.load"):
        flow.load(p)
    assert not (tmp_path / "PWNED").exists()


def test_torch_truncated_file(tmp_path):
    torch.save({"w": torch.randn(100)}, tmp_path / "t.pt")
    data = (tmp_path / "t.pt").read_bytes()
    (tmp_path / "t.pt").write_bytes(data[: len(data) - 200])
    with pytest.raises(RuntimeError, match="flow.load"):
        flow.load(tmp_path / "t.pt")


def test_flow_file_is_not_a_pickle(tmp_path):
    flow.save({"w": flow.ones(2)}, tmp_path / "a.of")
    with pytest.raises(Exception):
        pickle.loads((tmp_path / "a.of").read_bytes())


def test_deflated_archive_loads_and_checks_crc(tmp_path):
    """Archives re-zipped with compression go through zipfile's reader (and its CRC check)."""
    p, q = tmp_path / "a.of", tmp_path / "b.of"
    x = flow.arange(1000, dtype=flow.int64)
    flow.save({"x": x, "v": x[10:20]}, p)
    with zipfile.ZipFile(p) as zin, zipfile.ZipFile(q, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
    r = flow.load(q)
    same_values(r["x"], x)
    r["x"][15] = -5
    assert r["v"][5].item() == -5
    data = bytearray(q.read_bytes())
    with zipfile.ZipFile(q) as zf:
        info = zf.getinfo("oneflow/storages/0")
    hdr = data[info.header_offset: info.header_offset + 30]
    start = info.header_offset + 30 + int.from_bytes(hdr[26:28], "little") + int.from_bytes(hdr[28:30], "little")
    data[start + info.compress_size // 2] ^= 0x55
    q.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="flow.load: "):
        flow.load(q)


def test_torch_legacy_format(tmp_path):
    m = torch.nn.BatchNorm1d(3)
    m(torch.randn(4, 3))
    x = torch.arange(6.0)
    obj = {"sd": m.state_dict(), "x": x, "v": x[2:].view(2, 2), "bf": torch.ones(3, dtype=torch.bfloat16),
           "meta": (1, "a", None)}
    p = tmp_path / "legacy.pt"
    torch.save(obj, p, _use_new_zipfile_serialization=False)
    r = flow.load(p, map_location="cpu")
    for k, v in obj["sd"].items():
        _same_as_torch(r["sd"][k], v)
    _same_as_torch(r["v"], obj["v"])
    _same_as_torch(r["bf"], obj["bf"])
    assert r["meta"] == (1, "a", None)
    r["v"].fill_(0)
    assert r["x"].sum().item() == 1.0
    data = p.read_bytes()
    p.write_bytes(data[:-5])
    with pytest.raises(RuntimeError, match="flow.load: .*truncated"):
        flow.load(p)
    marker = tmp_path / "pwned"
    torch.save({"evil": _Evil(marker)}, p, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load the global"):
        flow.load(p)
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["flow", "torch", "torch_legacy"])
def test_fuzzed_files_never_crash(tmp_path, kind):
    """Every single-bit corruption or truncation either loads the original values or raises a clear error
    (never a crash, never another exception type)."""
    p = tmp_path / "f"
    if kind == "flow":
        flow.save({"w": flow.arange(16, dtype=flow.float32), "v": [1, "a"]}, p)
    else:
        torch.save({"w": torch.arange(16, dtype=torch.float32), "v": [1, "a"]}, p,
                   _use_new_zipfile_serialization=kind == "torch")
    data = p.read_bytes()
    rng = np.random.RandomState(0)
    bad = tmp_path / "bad"
    for i in range(300):
        d = bytearray(data)
        if i % 3 == 0:
            d = d[: rng.randint(0, len(d))]
        else:
            d[rng.randint(0, len(d))] ^= 1 << rng.randint(0, 8)
        bad.write_bytes(bytes(d))
        try:
            r = flow.load(bad)
        except (RuntimeError, pickle.UnpicklingError) as e:
            assert "flow.load" in str(e)
            continue
        if kind == "torch_legacy":  # the legacy format has no checksums: flipped data bits load as they are
            continue
        np.testing.assert_array_equal(r["w"].numpy(), np.arange(16, dtype=np.float32))
        assert r["v"] == [1, "a"]


def test_load_reads_the_archive_at_the_stream_position_only():
    # two saves to one stream: each load reads one archive and leaves the stream after it
    buf = io.BytesIO()
    flow.save({"a": 1}, buf)
    flow.save({"b": flow.ones(3)}, buf)
    buf.seek(0)
    assert flow.load(buf) == {"a": 1}
    assert flow.load(buf)["b"].tolist() == [1.0, 1.0, 1.0]
    # leading and trailing bytes (with a stray end-of-directory signature in the trailer)
    buf = io.BytesIO()
    buf.write(b"HEADER")
    flow.save({"x": flow.arange(4)}, buf)
    buf.write(b"trailer PK\x05\x06 trailer")
    buf.seek(6)
    assert flow.load(buf)["x"].tolist() == [0, 1, 2, 3]
    # PyTorch's writer (offsets from the archive's start, a zip64 record in every archive)
    buf = io.BytesIO()
    torch.save({"t": torch.ones(2)}, buf)
    torch.save({"u": 1}, buf)
    buf.seek(0)
    assert flow.load(buf)["t"].tolist() == [1.0, 1.0]
    assert flow.load(buf) == {"u": 1}


def test_save_to_missing_directory_and_cuda_map_location_errors(tmp_path):
    missing = tmp_path / "no_such_dir" / "x.of"
    with pytest.raises(RuntimeError, match=f"Parent directory {missing.parent} does not exist."):
        flow.save({"a": 1}, missing)
    assert not missing.parent.exists()
    path = tmp_path / "ok.of"
    flow.save({"a": flow.ones(1)}, path)
    if not flow.cuda.is_available():
        for loc in ("cuda", {"cpu": "cuda:0"}):
            with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
                flow.load(path, map_location=loc)
    assert flow.load(path, map_location="cpu")["a"].tolist() == [1.0]
