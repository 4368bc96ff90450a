"""flow.save / flow.load compared with torch.save / torch.load: PyTorch files of many shapes load exactly as
torch.load gives them, torch.save's keyword arguments are accepted, and bad arguments or files fail clearly."""
import collections
import io
import math
import pickle

import numpy as np
import pytest

import oneflow as flow
from helpers import torch


def _np(t):
    t = t.detach()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy()


def _check_same(got, ref, path="obj"):
    """``got`` (from flow.load) holds what ``ref`` (from torch.load) holds: same container types and keys, and
    tensors with the same dtype, shape, strides, offset, requires_grad, Parameter-ness and values."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(got, flow.Tensor), path
        assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], path
        assert tuple(got.shape) == tuple(ref.shape) and got.stride() == ref.stride(), path
        assert got.storage_offset() == ref.storage_offset(), path
        assert got.requires_grad == ref.requires_grad, path
        assert isinstance(got, flow.nn.Parameter) == isinstance(ref, torch.nn.Parameter), path
        np.testing.assert_array_equal(_np(got), _np(ref), err_msg=path)
    elif isinstance(ref, dict):
        assert type(got).__name__ == type(ref).__name__ and list(got) == list(ref), path
        for k in ref:
            _check_same(got[k], ref[k], f"{path}[{k!r}]")
        if hasattr(ref, "_metadata"):
            assert dict(got._metadata) == dict(ref._metadata), path
    elif isinstance(ref, (list, tuple, set, frozenset)) and not isinstance(ref, torch.Size):
        assert type(got) is type(ref) and len(got) == len(ref), path
        if isinstance(ref, (set, frozenset)):
            assert got == ref, path
        for i, (g, r) in enumerate(zip(got, ref)):
            _check_same(g, r, f"{path}[{i}]")
    elif isinstance(ref, float) and math.isnan(ref):
        assert math.isnan(got), path
    elif isinstance(ref, (torch.dtype, torch.device, torch.Size)):
        assert str(got).replace("oneflow", "torch") == str(ref), path
    else:
        assert type(got) is type(ref) and got == ref, path


def _base():
    return torch.arange(24, dtype=torch.float32).reshape(4, 6)


CASES = {
    "0-dim": lambda: torch.tensor(3.5),
    "0-dim bool and int64": lambda: [torch.tensor(True), torch.tensor(2 ** 40)],
    "empty": lambda: [torch.empty(0, 3), torch.zeros(0, dtype=torch.int64), torch.ones(3)[3:]],
    "transposed and sliced views of one storage": lambda: (lambda b: [b, b.t(), b[1:3, 2:5], b[:, ::2], b[2]])(
        _base()),
    "expanded (stride 0)": lambda: torch.ones(3, 1).expand(3, 4),
    "channels_last": lambda: torch.arange(120.).reshape(2, 3, 4, 5).contiguous(memory_format=torch.channels_last),
    "offset into a large storage": lambda: torch.arange(100.)[50:],
    "every dtype": lambda: {str(d): torch.arange(3).to(d) for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16,
        torch.int32, torch.int64, torch.bool)},
    "special floats": lambda: [torch.tensor([-0.0, float("nan"), float("inf")]),
                               torch.tensor([65504.0, float("-inf")], dtype=torch.float16)],
    "parameters": lambda: [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2), requires_grad=False),
                           torch.ones(2).requires_grad_()],
    "plain containers": lambda: {"a": [1, 2.5, "s", None, True, (1, 2)], 3: {4: 5}, (1, 2): "tuple key",
                                 "b": b"bytes", "nan": float("nan"), "c": 1 + 2j, "set": {1, 2},
                                 "ba": bytearray(b"ab"), "deep": [[[[torch.ones(1)]]]]},
    "ordered dict and metadata": lambda: torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    .state_dict(),
    "size, dtype and device objects": lambda: [torch.Size([2, 3]), torch.float16, torch.device("cpu")],
    "optimizer state": lambda: _stepped_adam_state(),
}


def _stepped_adam_state():
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.Adam([p], lr=0.1)
    p.sum().backward()
    opt.step()
    return opt.state_dict()


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("name", list(CASES))
def test_torch_files_load_like_torch_load(tmp_path, name, legacy):
    path = tmp_path / "t.pt"
    torch.save(CASES[name](), path, _use_new_zipfile_serialization=not legacy)
    _check_same(flow.load(path), torch.load(path, weights_only=False))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_views_keep_sharing_memory(tmp_path, legacy):
    b = _base()
    path = tmp_path / "v.pt"
    torch.save({"base": b, "row": b[1], "t": b.t()}, path, _use_new_zipfile_serialization=not legacy)
    r = flow.load(path)
    r["base"][1, 0] = 99.0
    assert r["row"][0].item() == 99.0 and r["t"][0, 1].item() == 99.0


def test_save_accepts_torch_save_keywords(tmp_path):
    path = tmp_path / "k.of"
    flow.save({"a": flow.ones(2)}, path, pickle_protocol=2, _use_new_zipfile_serialization=False)
    flow.save({"a": flow.ones(2)}, io.BytesIO(), pickle_module=pickle, _disable_byteorder_record=True)
    assert flow.load(path)["a"].tolist() == [1.0, 1.0]


def test_save_to_a_directory_names_it(tmp_path):
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="Is a directory"):
            lib.save({"a": 1}, tmp_path)
    with pytest.raises(RuntimeError, match=f"cannot write to {tmp_path}"):
        flow.save({"a": 1}, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_mmap_needs_a_path(tmp_path):
    for lib in (flow, torch):
        buf = io.BytesIO()
        lib.save({"a": lib.ones(1)}, buf)
        buf.seek(0)
        with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
            lib.load(buf, mmap=True)
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"a": lib.ones(1)}, path)
        assert lib.load(path, mmap=True)["a"].tolist() == [1.0]


def test_bad_map_location_type_is_a_type_error():
    buf = io.BytesIO()
    flow.save({"a": flow.ones(1)}, buf)
    buf.seek(0)
    with pytest.raises(TypeError, match="map_location must be"):
        flow.load(buf, map_location=3)


@pytest.mark.parametrize("dtype", ["complex64", "uint16", "float8_e4m3fn"])
def test_unsupported_torch_dtypes_are_named(tmp_path, dtype):
    path = tmp_path / "u.pt"
    torch.save({"t": torch.ones(2).to(getattr(torch, dtype))}, path)
    with pytest.raises(pickle.UnpicklingError, match="a dtype oneflow does not support"):
        flow.load(path)


def test_saved_device_without_map_location(tmp_path):
    """Without map_location tensors go back to the device they were saved from (as in torch); where that
    device does not exist the error says how to load them on the CPU."""
    import json
    import zipfile

    src, dst = tmp_path / "a.of", tmp_path / "b.of"
    flow.save({"w": flow.arange(3.0)}, src)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("data.json"):
                header = json.loads(data)
                header["tensors"][0]["device"] = "cuda:0"
                data = json.dumps(header).encode()
            zout.writestr(info.filename, data)
    if flow.cuda.is_available():
        assert flow.load(dst)["w"].device == flow.device("cuda:0")
    else:
        with pytest.raises(RuntimeError, match="is_available\\(\\) is False\\); pass map_location='cpu'"):
            flow.load(dst)
    assert flow.load(dst, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("kind", ["flow", "zip", "legacy"])
def test_every_truncation_raises_a_clear_error(kind):
    buf = io.BytesIO()
    if kind == "flow":
        flow.save({"w": flow.arange(6.0).reshape(2, 3).t(), "s": [1, "a"]}, buf)
    else:
        torch.save(collections.OrderedDict(w=torch.arange(6.0).reshape(2, 3).t(), s=[1, "a"]), buf,
                   _use_new_zipfile_serialization=kind == "zip")
    data = buf.getvalue()
    for n in range(len(data)):
        with pytest.raises((RuntimeError, pickle.UnpicklingError), match="flow.load"):
            flow.load(io.BytesIO(data[:n]))
    assert flow.load(io.BytesIO(data))["s"] == [1, "a"]
