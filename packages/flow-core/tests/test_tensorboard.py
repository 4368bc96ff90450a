"""oneflow.utils.tensorboard: the event-file bytes against encodings made by TensorBoard's own protobuf classes
and record writer (hex below), CRC-32C test vectors, and whole files read back through an independent wire
format parser: scalars, new-style scalars, add_scalars runs, histograms, images (PNG decoded), text,
purge_step, buffering and close."""
import os
import struct
import zlib

import numpy as np
import pytest

import oneflow as flow
from oneflow.utils.tensorboard import SummaryWriter
from oneflow.utils.tensorboard import _records as rec

# Event(wall_time=1.5, step=3, summary=Summary(value=[Value(tag="loss", simple_value=0.25)])), serialized by
# TensorBoard's event_pb2, and the same framed by its RecordWriter
SCALAR_EVENT = "09000000000000f83f10032a0d0a0b0a046c6f7373150000803e"
SCALAR_RECORD = "1a00000000000000129bd82d" + SCALAR_EVENT + "d054b255"
VERSION_EVENT = "0900000000000000401a0d627261696e2e4576656e743a32"  # wall_time=2, file_version="brain.Event:2"
# Event(wall_time=1, step=-1, histo=HistogramProto(min=-1, max=2, num=3, sum=1, sum_squares=6,
# bucket_limit=[0, 2.5], bucket=[1, 2])) under tag "h"
HISTO_EVENT = ("09000000000000f03f10ffffffffffffffffff012a580a560a01682a5109000000000000f0bf11000000000000004019"
               "000000000000084021000000000000f03f2900000000000018403210000000000000000000000000000004403a1000000000"
               "0000f03f0000000000000040")


def test_crc32c_test_vectors():
    assert rec.crc32c(b"") == 0
    assert rec.crc32c(b"123456789") == 0xE3069283
    assert rec.crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720's 32 zero bytes
    assert rec.crc32c(bytes(range(32))) == 0x46DD794E


def test_bytes_match_tensorboards_encoding():
    scalar = rec.event(1.5, 3, summary=rec.summary(rec.value("loss", simple_value=0.25)))
    assert scalar.hex() == SCALAR_EVENT
    assert rec.frame(scalar).hex() == SCALAR_RECORD
    assert rec.event(2.0, file_version="brain.Event:2").hex() == VERSION_EVENT
    histo = rec.histogram(-1, 2, 3, 1, 6, [0.0, 2.5], [1.0, 2.0])
    assert rec.event(1.0, -1, summary=rec.summary(rec.value("h", histo=histo))).hex() == HISTO_EVENT


# ---- an independent reader: TFRecord framing with CRC checks, then protobuf wire format ------------------
def read_records(path):
    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == rec.masked_crc(header)
        payload = data[i + 12:i + 12 + n]
        assert struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == rec.masked_crc(payload)
        out.append(payload)
        i += 16 + n
    return out


def parse(buf):
    """{field: [values]}: varints as ints, fixed64/fixed32 as raw bytes, length-delimited as bytes."""
    fields, i = {}, 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        fields.setdefault(field, []).append(v)
    return fields


def varint(buf, i):
    shift = n = 0
    while True:
        b = buf[i]
        n |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if not b & 0x80:
            return n, i


def events(log_dir):
    files = [f for f in os.listdir(log_dir) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1
    return [parse(r) for r in read_records(os.path.join(log_dir, files[0]))]


def values_of(ev):
    return [parse(v) for v in parse(ev[5][0])[1]]


def f64(b):
    return struct.unpack("<d", b)[0]


def test_scalars_and_steps(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalar("loss/train", 1.0 / (i + 1), i)
        w.add_scalar("acc", flow.tensor(0.75), global_step=flow.tensor(9), walltime=123.5)
        w.add_scalar("np", np.float64(2.0))
        assert w.get_logdir() == str(tmp_path)
    ev = events(tmp_path)
    assert ev[0][3] == [b"brain.Event:2"] and 5 not in ev[0]
    got = [(e.get(2, [None])[0], values_of(e)[0][1][0].decode(), struct.unpack("<f", values_of(e)[0][2][0])[0])
           for e in ev[1:]]
    assert got == [(0, "loss/train", 1.0), (1, "loss/train", 0.5), (2, "loss/train", np.float32(1 / 3)),
                   (9, "acc", 0.75), (None, "np", 2.0)]
    assert f64(ev[4][1][0]) == 123.5
    with pytest.raises(ValueError, match="one-element"):
        SummaryWriter(tmp_path / "x").add_scalar("bad", flow.ones(2))


def test_new_style_scalar_is_a_tensor_summary(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("s", 2.5, 1, new_style=True)
        w.add_scalar("d", 0.1, 2, new_style=True, double_precision=True)
    v1, v2 = values_of(events(tmp_path)[1])[0], values_of(events(tmp_path)[2])[0]
    t1, t2 = parse(v1[8][0]), parse(v2[8][0])
    assert t1[1] == [1] and struct.unpack("<f", t1[5][0])[0] == 2.5  # DT_FLOAT, float_val
    assert t2[1] == [2] and f64(t2[6][0]) == 0.1  # DT_DOUBLE, double_val
    assert parse(parse(v1[9][0])[1][0])[1] == [b"scalars"]


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalars("train/loss", {"a": 1.0, "b": 2.0}, 5)
        w.add_scalars("train/loss", {"a": 3.0}, 6)
    for tag, want in [("a", [1.0, 3.0]), ("b", [2.0])]:
        ev = events(tmp_path / f"train_loss_{tag}")[1:]
        assert [values_of(e)[0][1][0] for e in ev] == [b"train/loss"] * len(want)
        assert [struct.unpack("<f", values_of(e)[0][2][0])[0] for e in ev] == want


def test_histogram_counts_and_range(tmp_path):
    x = np.random.default_rng(0).standard_normal(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", flow.tensor(x), 1)
        w.add_histogram("u", np.arange(100.0), 2, bins=10)
        w.add_histogram("m", np.arange(100.0), 3, bins=10, max_bins=4)
        with pytest.raises(ValueError, match="non-finite"):
            w.add_histogram("bad", np.array([1.0, np.nan]))
    ev = events(tmp_path)[1:]
    h = parse(values_of(ev[0])[0][5][0])
    assert f64(h[1][0]) == x.min() and f64(h[2][0]) == x.max() and f64(h[3][0]) == 1000
    assert np.isclose(f64(h[4][0]), x.sum()) and np.isclose(f64(h[5][0]), (x * x).sum())
    counts = np.frombuffer(h[7][0], "<f8")
    limits = np.frombuffer(h[6][0], "<f8")
    assert counts.sum() == 1000 and len(limits) == len(counts) and counts[0] == 0  # one empty bucket in front
    u = parse(values_of(ev[1])[0][5][0])
    np.testing.assert_array_equal(np.frombuffer(u[7][0], "<f8"), [10] * 10)
    np.testing.assert_allclose(np.frombuffer(u[6][0], "<f8"), np.linspace(9.9, 99, 10))
    m = parse(values_of(ev[2])[0][5][0])
    np.testing.assert_array_equal(np.frombuffer(m[7][0], "<f8"), [30, 30, 30, 10])


def decode_png(b):
    """Width, height, color type and pixels of an unfiltered 8-bit PNG."""
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    i, chunks = 8, {}
    while i < len(b):
        (n,) = struct.unpack(">I", b[i:i + 4])
        kind, data = b[i + 4:i + 8], b[i + 8:i + 8 + n]
        assert struct.unpack(">I", b[i + 8 + n:i + 12 + n])[0] == zlib.crc32(kind + data)
        chunks[kind] = chunks.get(kind, b"") + data
        i += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    c = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all() and depth == 8
    return raw[:, 1:].reshape(h, w, c)


def test_images_decode_to_the_pixels(tmp_path):
    rng = np.random.default_rng(0)
    chw = rng.random((3, 6, 5)).astype(np.float32)
    gray_u8 = rng.integers(0, 256, (4, 7), dtype=np.uint8)
    batch = rng.random((10, 1, 2, 3))
    with SummaryWriter(tmp_path) as w:
        w.add_image("rgb", flow.tensor(chw), 0)
        w.add_image("gray", gray_u8, 1, dataformats="HW")
        w.add_images("grid", batch, 2)
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("bad", chw, dataformats="HWCN")
    ev = events(tmp_path)[1:]
    img = parse(values_of(ev[0])[0][4][0])
    assert img[1] == [6] and img[2] == [5] and img[3] == [3]
    np.testing.assert_array_equal(decode_png(img[4][0]),
                                  (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8))
    g = parse(values_of(ev[1])[0][4][0])
    np.testing.assert_array_equal(decode_png(g[4][0])[:, :, 0], gray_u8)
    grid = decode_png(parse(values_of(ev[2])[0][4][0])[4][0])[:, :, 0]
    assert grid.shape == (4, 24)  # two rows of eight 2x3 cells
    np.testing.assert_array_equal(grid[2:4, 3:6], (batch[9, 0] * 255).astype(np.uint8))
    assert (grid[2:4, 6:] == 0).all()


def test_text_summary(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "hello **world**", 4)
    v = values_of(events(tmp_path)[1])[0]
    assert v[1] == [b"notes/text_summary"]
    t = parse(v[8][0])
    assert t[1] == [7] and t[8] == [b"hello **world**"]  # DT_STRING
    assert parse(parse(v[9][0])[1][0])[1] == [b"text"]


def test_purge_step_buffering_and_close(tmp_path):
    w = SummaryWriter(tmp_path, purge_step=10, max_queue=3, flush_secs=3600, filename_suffix=".v1")
    (name,) = os.listdir(tmp_path)
    assert name.endswith(".v1")
    path = os.path.join(tmp_path, name)
    start = len(read_records(path))
    w.add_scalar("a", 1.0, 10)
    assert len(read_records(path)) == start  # still buffered
    w.add_scalar("a", 2.0, 11)
    w.add_scalar("a", 3.0, 12)
    assert len(read_records(path)) > start  # max_queue reached
    w.close()
    ev = [parse(r) for r in read_records(path)]
    assert ev[1][2] == [10] and parse(ev[1][6][0])[1] == [1]  # SessionLog START at purge_step
    with pytest.raises(RuntimeError, match="closed"):
        w.add_scalar("a", 4.0, 13)


def test_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_lr0.1")
        assert os.path.isdir(w.get_logdir())
