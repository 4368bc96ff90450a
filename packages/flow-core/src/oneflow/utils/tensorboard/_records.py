"""The bytes of TensorBoard event files, written without TensorFlow or protobuf: the few protocol-buffer
messages the writer needs (Event, Summary, HistogramProto, Image, SummaryMetadata, TensorProto) encoded by
hand, and the TFRecord framing (length, payload, masked CRC-32C of each)."""
import struct

# ---- CRC-32C (Castagnoli), as TFRecord frames it ----------------------------------------------------------
_POLY = 0x82F63B78  # the reflected Castagnoli polynomial


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    """The CRC-32C of ``data`` (bytes)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    """TFRecord's masked CRC: rotated right by 15 bits plus a constant, so CRCs of CRCs stay distinct."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload):
    """One TFRecord: length, its masked CRC, the payload, the payload's masked CRC."""
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", masked_crc(header)) + payload + struct.pack("<I", masked_crc(payload))


# ---- protocol-buffer wire format --------------------------------------------------------------------------
def _varint(n):
    n &= (1 << 64) - 1  # negative int64 values take ten bytes, as two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def f_varint(field, n):
    return _key(field, 0) + _varint(int(n))


def f_double(field, x):
    return _key(field, 1) + struct.pack("<d", float(x))


def f_float(field, x):
    return _key(field, 5) + struct.pack("<f", float(x))


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return _key(field, 2) + _varint(len(b)) + b


def f_packed_doubles(field, xs):
    return f_bytes(field, struct.pack(f"<{len(xs)}d", *xs))


# ---- the messages -----------------------------------------------------------------------------------------
def event(wall_time, step=None, summary=None, file_version=None):
    """tensorflow.Event: wall_time = 1, step = 2, file_version = 3, summary = 5."""
    out = f_double(1, wall_time)
    if step is not None:
        out += f_varint(2, step)
    if file_version is not None:
        out += f_bytes(3, file_version)
    if summary is not None:
        out += f_bytes(5, summary)
    return out


def summary(*values):
    """tensorflow.Summary: repeated Value value = 1."""
    return b"".join(f_bytes(1, v) for v in values)


def value(tag, *, simple_value=None, image=None, histo=None, tensor=None, metadata=None):
    """Summary.Value: tag = 1, simple_value = 2, image = 4, histo = 5, tensor = 8, metadata = 9."""
    out = f_bytes(1, tag)
    if simple_value is not None:
        out += f_float(2, simple_value)
    if image is not None:
        out += f_bytes(4, image)
    if histo is not None:
        out += f_bytes(5, histo)
    if tensor is not None:
        out += f_bytes(8, tensor)
    if metadata is not None:
        out += f_bytes(9, metadata)
    return out


def histogram(lo, hi, num, total, sum_squares, bucket_limit, bucket):
    """HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5, bucket_limit 6, bucket 7 (packed)."""
    return (f_double(1, lo) + f_double(2, hi) + f_double(3, num) + f_double(4, total) + f_double(5, sum_squares)
            + f_packed_doubles(6, bucket_limit) + f_packed_doubles(7, bucket))


def image(height, width, colorspace, png):
    """Summary.Image: height 1, width 2, colorspace 3, encoded_image_string 4."""
    return f_varint(1, height) + f_varint(2, width) + f_varint(3, colorspace) + f_bytes(4, png)


def plugin_metadata(plugin_name, content=b""):
    """SummaryMetadata with plugin_data (field 1) = PluginData{plugin_name 1, content 2}."""
    data = f_bytes(1, plugin_name) + (f_bytes(2, content) if content else b"")
    return f_bytes(1, data)


def string_tensor(strings):
    """TensorProto of dtype DT_STRING (7) and shape [len(strings)]: dtype 1, tensor_shape 2, string_val 8."""
    shape = f_bytes(2, f_varint(1, len(strings)))  # TensorShapeProto.dim (2) = Dim{size 1}
    return f_varint(1, 7) + f_bytes(2, shape) + b"".join(f_bytes(8, s) for s in strings)
