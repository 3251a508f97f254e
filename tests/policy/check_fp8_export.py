"""Independent check of an FP8 block-quantized Hugging Face export.

usage: check_fp8_export.py FP8_FOLDER F32_FOLDER SCALE_FORMAT(fp32|pow2)

Reads both folders with its own safetensors parser. For every *_proj.weight
of the F32 (master) folder it recomputes, with numpy and ml_dtypes, the
128x128 block scales (amax / 448 in float32, or the smallest power of two p
with amax <= 448 p; amax 0 gives 1; floor 2^-126) and the E4M3 codes of
w / scale (float32 division, ml_dtypes' round-to-nearest-even), and demands
the exported F8_E4M3 weight and F32 weight_scale_inv be those exactly. Every
other tensor must be the BF16 rounding of the master. Exit 0 when all holds.
"""
import json
import math
import os
import struct
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np

DTYPES = {"F32": np.float32, "BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[base + begin : base + end], dtype=DTYPES[info["dtype"]])
        tensors[name] = (info["dtype"], array.reshape(info["shape"]))
    return tensors


def block_scale(amax, pow2):
    if amax == 0.0:
        return np.float32(1.0)
    if pow2:
        k = -126
        while Fraction(float(amax)) > 448 * Fraction(2) ** k:
            k += 1
        return np.float32(math.ldexp(1.0, min(k, 127)))
    return max(np.float32(amax) / np.float32(448.0), np.float32(2.0**-126))


def check_projection(name, master, codes, scales, pow2):
    rows, cols = master.shape
    blocks = (-(-rows // 128), -(-cols // 128))
    assert codes[0] == "F8_E4M3" and codes[1].shape == master.shape, f"{name}: {codes[0]} {codes[1].shape}"
    assert scales[0] == "F32" and scales[1].shape == blocks, f"{name}_scale_inv: {scales[0]} {scales[1].shape}"
    for br in range(blocks[0]):
        for bc in range(blocks[1]):
            block = master[br * 128 : (br + 1) * 128, bc * 128 : (bc + 1) * 128]
            scale = block_scale(np.float32(np.max(np.abs(block))), pow2)
            got = scales[1][br, bc]
            assert got == scale, f"{name} block ({br}, {bc}): scale {got!r}, expected {scale!r}"
            expected = (block / scale).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
            exported = codes[1][br * 128 : (br + 1) * 128, bc * 128 : (bc + 1) * 128]
            same = expected.view(np.uint8) == exported.view(np.uint8)
            assert same.all(), f"{name} block ({br}, {bc}): {int((~same).sum())} codes differ"


def main():
    fp8_folder, f32_folder, scale_format = sys.argv[1:4]
    pow2 = scale_format == "pow2"
    with open(os.path.join(fp8_folder, "config.json")) as f:
        config = json.load(f)
    quantization = config["quantization_config"]
    assert quantization == {
        "quant_method": "fp8",
        "fmt": "e4m3",
        "activation_scheme": "dynamic",
        "weight_block_size": [128, 128],
    }, quantization
    exported = read_safetensors(os.path.join(fp8_folder, "model.safetensors"))
    masters = read_safetensors(os.path.join(f32_folder, "model.safetensors"))
    projections = 0
    for name, (dtype, master) in masters.items():
        assert dtype == "F32", f"master {name} is {dtype}"
        if name.endswith("_proj.weight"):
            check_projection(name, master, exported[name], exported[name + "_scale_inv"], pow2)
            projections += 1
        else:
            got_dtype, got = exported[name]
            assert got_dtype == "BF16", f"{name}: {got_dtype}"
            assert (got.view(np.uint16) == master.astype(ml_dtypes.bfloat16).view(np.uint16)).all(), name
    expected_names = set(masters) | {n + "_scale_inv" for n in masters if n.endswith("_proj.weight")}
    assert set(exported) == expected_names, sorted(set(exported) ^ expected_names)
    print(f"ok: {projections} FP8 projections and {len(masters) - projections} BF16 tensors match")


if __name__ == "__main__":
    main()
