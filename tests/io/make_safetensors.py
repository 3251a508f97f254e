#!/usr/bin/env python3
"""Independent safetensors oracle for tests/io (numpy + struct + json only;
deliberately not the `safetensors` package).

  make_safetensors.py make OUT_DIR
      Writes OUT_DIR/oracle.safetensors, one raw OUT_DIR/<i>.bin per tensor and
      OUT_DIR/manifest.txt with lines "name<TAB>DTYPE<TAB>d0,d1,...<TAB><i>.bin".
      The data area is laid out in reverse name order and the header uses
      json.dumps' default spacing and \\u escapes, so the C++ reader sees a
      layout different from what its own writer produces.

  make_safetensors.py check FILE
      Verifies the file written by the C++ test (safetensors_test.cpp): exit 0
      when header, layout and every byte match, 1 with a message otherwise.
"""
import json
import os
import struct
import sys

import numpy as np


def bf16_codes(values):
    # Round-to-nearest-even float32 -> bfloat16 bit patterns, by hand.
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def oracle_tensors():
    rng = np.random.default_rng(1234)
    i64 = np.iinfo(np.int64)
    return {
        # name: (dtype, shape, array whose bytes are the tensor data)
        "model.embed.weight": ("F32", [4, 3], (np.arange(12, dtype=np.float32) * 0.5 - 1.0)),
        "f64.scalar": ("F64", [], np.array(3.25, dtype=np.float64)),
        "f16.vec": ("F16", [3], np.array([1.0, -2.5, 65504.0], dtype=np.float16)),
        "bf16.mat": ("BF16", [2, 5], bf16_codes(rng.standard_normal(10))),
        "i64.extremes": ("I64", [2, 2], np.array([i64.min, -1, 0, i64.max], dtype=np.int64)),
        "i32.vec": ("I32", [3], np.array([-(2**31), 7, 2**31 - 1], dtype=np.int32)),
        "i16.vec": ("I16", [2], np.array([-32768, 32767], dtype=np.int16)),
        "i8.vec": ("I8", [3], np.array([-128, 0, 127], dtype=np.int8)),
        "u8.vec": ("U8", [1, 1, 3], np.array([0, 128, 255], dtype=np.uint8)),
        "u16.vec": ("U16", [2], np.array([0, 65535], dtype=np.uint16)),
        "u32.vec": ("U32", [1], np.array([4000000000], dtype=np.uint32)),
        "u64.vec": ("U64", [1], np.array([2**64 - 1], dtype=np.uint64)),
        "bool.mask": ("BOOL", [5], np.array([True, False, True, True, False], dtype=np.bool_)),
        "fp8.e4m3": ("F8_E4M3", [2, 4], rng.integers(0, 256, 8, dtype=np.uint8)),
        "fp8.e5m2": ("F8_E5M2", [8], rng.integers(0, 256, 8, dtype=np.uint8)),
        "empty.rows": ("F32", [0, 3], np.zeros((0, 3), dtype=np.float32)),
        "unicode.\u00e9\U0001F600": ("U8", [2], np.array([1, 2], dtype=np.uint8)),
    }


def pack(header, data):
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def make(out_dir):
    tensors = oracle_tensors()
    header = {"__metadata__": {"format": "pt", "source": "oracle"}}
    data = b""
    for name in sorted(tensors, reverse=True):
        dtype, shape, array = tensors[name]
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    with open(os.path.join(out_dir, "oracle.safetensors"), "wb") as f:
        f.write(pack(header, data))
    with open(os.path.join(out_dir, "manifest.txt"), "w", encoding="utf-8") as manifest:
        for i, (name, (dtype, shape, array)) in enumerate(tensors.items()):
            with open(os.path.join(out_dir, f"{i}.bin"), "wb") as f:
                f.write(np.ascontiguousarray(array).tobytes())
            manifest.write(f"{name}\t{dtype}\t{','.join(map(str, shape))}\t{i}.bin\n")


def expected_cpp_tensors():
    # Mirrors the values written by safetensors_test.cpp ("C++ writer ...").
    return {
        "a.bias": ("I64", [3], np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype="<i8")),
        "b.weight": ("F32", [2, 3], np.arange(6, dtype="<f4") * 0.25 - 0.5),
        "c.codes": ("F8_E4M3", [4], np.array([0x00, 0x7E, 0x80, 0xFF], dtype=np.uint8)),
        "d.half": ("BF16", [2], np.array([0x3F80, 0xC000], dtype="<u2")),
        "e.empty": ("F16", [0], np.zeros(0, dtype="<f2")),
        "f.scalar": ("F64", [], np.array(1.5, dtype="<f8")),
    }


def check(path):
    blob = open(path, "rb").read()
    (length,) = struct.unpack("<Q", blob[:8])
    assert length % 8 == 0, f"header length {length} is not a multiple of 8"
    raw_header = blob[8 : 8 + length]
    stripped = raw_header.rstrip(b" ")
    assert stripped.endswith(b"}"), "header padding is not spaces after the JSON object"
    header = json.loads(stripped.decode("utf-8"))
    data = blob[8 + length :]
    assert header.pop("__metadata__") == {"format": "pt", "note": "\u00e9"}, "metadata differs"
    expected = expected_cpp_tensors()
    assert list(header) == sorted(expected), f"tensor names/order {list(header)}"
    cursor = 0
    for name in sorted(expected):
        dtype, shape, array = expected[name]
        entry = header[name]
        assert entry["dtype"] == dtype and entry["shape"] == shape, f"{name}: {entry}"
        begin, end = entry["data_offsets"]
        assert begin == cursor, f"{name}: begins at {begin}, expected {cursor}"
        assert data[begin:end] == array.tobytes(), f"{name}: bytes differ"
        cursor = end
    assert cursor == len(data), f"data area has {len(data) - cursor} extra bytes"


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        try:
            check(sys.argv[2])
        except AssertionError as error:
            sys.exit(f"check failed: {error}")
    print("ok")


if __name__ == "__main__":
    main()
