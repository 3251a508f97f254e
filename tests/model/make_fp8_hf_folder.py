#!/usr/bin/env python3
"""Independent writer of FP8 block-quantized Hugging Face folders for
tests/model (numpy + ml_dtypes + struct + json; the safetensors packing and
the tensor list come from make_hf_folder.py, nothing from the C++ code).

  make_fp8_hf_folder.py make MODEL_DIR EXPECTED_DIR MODEL LAYOUT SCALE_DTYPE STYLE [CORRUPTION]
      Writes MODEL_DIR as published fine-grained FP8 checkpoints are laid out
      (Qwen3-*-FP8, DeepSeek-V3): config.json with
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
          "activation_scheme": "dynamic", "weight_block_size": [128, 128],
          "modules_to_not_convert": ["lm_head", "model.embed_tokens", <the last layer's mlp.down_proj>]}
      and every *_proj.weight not listed there as F8_E4M3 [out, in] plus
      <name>_scale_inv [ceil(out/128), ceil(in/128)] in SCALE_DTYPE (F32 |
      BF16), the dequantization multiplier of each 128x128 block. Other
      tensors are BF16.
        MODEL   llama_wide | qwen3_wide (dimensions above 128, partial
                blocks) or a model of make_hf_folder.py
        LAYOUT  single | sharded (three shards and an index)
        STYLE   random: arbitrary codes up to 416 in magnitude (never NaN or
                448; one block all zero, one of -0) and arbitrary scales, as
                a quantizer whose scales are not amax / 448 (rounded up to a
                power of two, say) writes them: requantizing their
                dequantization would not give them back;
                amax: quantized from random weights as DeepSeek does
                (scale = amax / 448 in float32, then SCALE_DTYPE; codes =
                clip(w / scale, +-448) rounded to nearest even).
        CORRUPTION (NAME a tensor name):
                scale_shape:NAME   one extra block row in NAME_scale_inv
                codes_dtype:NAME:D the weight stored as D (F16, BF16, F8_E5M2)
                scale_dtype:NAME:D the scales stored as D (I32)
                no_scale:NAME      NAME_scale_inv left out
                scale_nan:NAME | scale_inf:NAME | scale_negative:NAME | scale_zero:NAME | scale_huge:NAME
                nan_code:NAME      one code 0x7F, nan_code_neg:NAME one 0xFF
                quantize:NAME      NAME stored quantized although fp8rl keeps
                                   it unquantized (a norm, the embeddings) or
                                   modules_to_not_convert lists it
                quant_method:M | block:B (weight_block_size [B, B]) |
                fmt:F | activation_scheme:A | no_block_size | no_quant_config |
                block_not_pair ([128]) | modules_not_names (["lm_head", 3])
      EXPECTED_DIR receives names.txt (every tensor the model has),
      quantized.txt (those stored quantized), NAME.f32 (the masters a loader
      must produce: float32(decode(code)) * float32(scale) for quantized
      tensors, one float32 rounding; the stored values otherwise), NAME.codes
      and NAME.scales (the stored codes, and the scales as float32) for
      quantized tensors, and dequantized/: an F32 folder of those masters
      with no quantization_config.

  make_fp8_hf_folder.py batch FILE
      Runs one command per line of FILE (arguments separated by tabs), so a
      test pays Python's start-up once. Exit 0 when every command succeeds.
"""
import json
import os
import sys

import ml_dtypes
import numpy as np

import make_hf_folder as hf

E4M3 = ml_dtypes.float8_e4m3fn

WIDE_MODELS = {
    "llama_wide": dict(model_type="llama", vocab_size=40, hidden_size=160, num_hidden_layers=2,
                       num_attention_heads=5, num_key_value_heads=1, intermediate_size=264,
                       tie_word_embeddings=False, attention_bias=False),
    "qwen3_wide": dict(model_type="qwen3", vocab_size=33, hidden_size=144, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=40, intermediate_size=200,
                       tie_word_embeddings=True, attention_bias=False),
}
hf.MODELS.update(WIDE_MODELS)


def blocks_of(shape):
    return (-(-shape[0] // 128), -(-shape[1] // 128))


def expand(scales, shape):
    """[block rows, block cols] -> [rows, cols], each scale over its block."""
    return np.repeat(np.repeat(scales, 128, axis=0), 128, axis=1)[: shape[0], : shape[1]]


def random_pair(rng, shape):
    codes = rng.integers(0, 256, size=shape, dtype=np.uint8)
    codes[(codes & 0x7F) >= 0x7E] = 0x3C  # no NaN codes, and none of magnitude 448
    codes[:8, :8] = 0x80  # -0
    scales = (10.0 ** rng.uniform(-4, -1, size=blocks_of(shape))).astype(np.float32)
    if blocks_of(shape) != (1, 1):
        codes[-(shape[0] % 128 or 128):, -(shape[1] % 128 or 128):] = 0  # the last block all zero
    return codes, scales


def amax_pair(rng, shape, scale_dtype):
    weight = (0.05 * rng.standard_normal(shape)).astype(np.float32)
    rows, cols = blocks_of(shape)
    scales = np.zeros((rows, cols), dtype=np.float32)
    for r in range(rows):
        for c in range(cols):
            amax = np.float32(np.max(np.abs(weight[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128])))
            scales[r, c] = amax / np.float32(448.0)
    scales = round_scales(scales, scale_dtype)
    scaled = np.clip(weight / expand(scales, shape), -448.0, 448.0).astype(np.float32)
    return scaled.astype(E4M3).view(np.uint8), scales


def round_scales(scales, scale_dtype):
    return scales if scale_dtype == "F32" else scales.astype(ml_dtypes.bfloat16).astype(np.float32)


def scale_bytes(scales, scale_dtype):
    return scales.astype(np.float32 if scale_dtype == "F32" else ml_dtypes.bfloat16).tobytes()


def dequantize(codes, scales, shape):
    return codes.view(E4M3).astype(np.float32) * expand(scales, shape)


def quantization_config(config, corruption):
    kind, _, value = corruption.partition(":")
    last = config["num_hidden_layers"] - 1
    quantization = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                    "weight_block_size": [128, 128],
                    "modules_to_not_convert": ["lm_head", "model.embed_tokens", f"model.layers.{last}.mlp.down_proj"]}
    if kind in ("quant_method", "fmt", "activation_scheme"):
        quantization[kind] = value
    elif kind == "block":
        quantization["weight_block_size"] = [int(value), int(value)]
    elif kind == "no_block_size":
        del quantization["weight_block_size"]
    elif kind == "block_not_pair":
        quantization["weight_block_size"] = [128]
    elif kind == "modules_not_names":
        quantization["modules_to_not_convert"] = ["lm_head", 3]
    return quantization


def write_folder(model_dir, config, tensors):
    """tensors: name -> (dtype, shape, bytes); LAYOUT in config['__layout']."""
    layout = config.pop("__layout")
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    metadata = {"format": "pt"}
    if layout == "single":
        hf.write(os.path.join(model_dir, "model.safetensors"), hf.pack(tensors, metadata))
        return
    names = sorted(tensors)
    count = 3
    weight_map = {}
    for i in range(count):
        file = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        # Round-robin, so that a weight and its scales often land in different shards.
        chunk = {n: tensors[n] for n in names[i::count]}
        hf.write(os.path.join(model_dir, file), hf.pack(chunk, metadata))
        weight_map.update({n: file for n in chunk})
    total = sum(len(t[2]) for t in tensors.values())
    with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)


def corrupt_pair(kind, extra, codes, scales, shape, scale_dtype):
    """The stored (codes dtype, codes bytes, scales dtype, scales shape, scales bytes), corrupted by kind."""
    codes_dtype, codes_bytes = "F8_E4M3", codes.tobytes()
    scale_shape = list(blocks_of(shape))
    scales = scales.copy()
    if kind == "codes_dtype":
        codes_dtype = extra
        width = 1 if extra.startswith("F8") else 2
        codes_bytes = np.zeros(codes.size * width, dtype=np.uint8).tobytes()
    elif kind in ("nan_code", "nan_code_neg"):
        flat = codes.copy().reshape(-1)
        flat[5] = 0x7F if kind == "nan_code" else 0xFF
        codes_bytes = flat.tobytes()
    elif kind == "scale_nan":
        scales[0, 0] = np.nan
    elif kind == "scale_inf":
        scales[-1, -1] = np.inf
    elif kind == "scale_negative":
        scales[0, -1] = -scales[0, -1]
    elif kind == "scale_zero":
        scales[-1, 0] = 0.0
    elif kind == "scale_huge":
        scales[0, 0] = np.float32(1e38)
    stored_scales = scale_bytes(scales, scale_dtype)
    if kind == "scale_shape":
        scale_shape[0] += 1
        stored_scales = scale_bytes(np.concatenate([scales, scales[:1]]), scale_dtype)
    scale_dtype_name = scale_dtype
    if kind == "scale_dtype":
        scale_dtype_name, stored_scales = extra, np.ones(scales.size, dtype=np.int32).tobytes()
    return codes_dtype, codes_bytes, scale_dtype_name, scale_shape, stored_scales


def make(model_dir, expected_dir, model, layout, scale_dtype, style, corruption="none"):
    os.makedirs(expected_dir, exist_ok=True)
    config = hf.config_json(model)
    config["torch_dtype"] = "bfloat16"
    quantization = quantization_config(config, corruption)
    excluded = set(quantization["modules_to_not_convert"])
    kind, _, target = corruption.partition(":")
    target, _, extra = target.partition(":")
    shapes = hf.tensor_shapes(config)
    rng = np.random.default_rng(20251205)
    tensors, masters, quantized = {}, {}, []
    for name, shape in shapes.items():
        module = name.rsplit(".", 1)[0]
        is_projection = name.endswith("_proj.weight") and module not in excluded
        if is_projection or (kind == "quantize" and name == target):
            if len(shape) == 1:  # a norm, stored as a [1, size] matrix would be another shape: keep its own
                shape2 = [1, shape[0]]
            else:
                shape2 = shape
            codes, scales = random_pair(rng, shape2) if style == "random" else amax_pair(rng, shape2, scale_dtype)
            scales = round_scales(scales, scale_dtype)
            codes = codes.reshape(shape)
            masters[name] = dequantize(codes.reshape(shape2), scales, shape2).reshape(shape)
            quantized.append(name)
            codes.tofile(os.path.join(expected_dir, name + ".codes"))
            scales.astype(np.float32).tofile(os.path.join(expected_dir, name + ".scales"))
            stored = corrupt_pair(kind if name == target else "none", extra, codes, scales, shape2, scale_dtype)
            tensors[name] = (stored[0], list(shape), stored[1])
            if not (kind == "no_scale" and name == target):
                tensors[name + "_scale_inv"] = (stored[2], stored[3], stored[4])
        else:
            values = (1.0 + 0.1 * rng.standard_normal(shape)) if len(shape) == 1 and "bias" not in name \
                else 0.05 * rng.standard_normal(shape)
            stored = np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16)
            masters[name] = stored.astype(np.float32)
            tensors[name] = ("BF16", list(shape), stored.tobytes())
    if kind != "no_quant_config":
        config["quantization_config"] = quantization
    config["__layout"] = layout
    write_folder(model_dir, dict(config), tensors)

    with open(os.path.join(expected_dir, "names.txt"), "w") as f:
        f.write("".join(name + "\n" for name in shapes))
    with open(os.path.join(expected_dir, "quantized.txt"), "w") as f:
        f.write("".join(name + "\n" for name in quantized))
    for name, values in masters.items():
        values.astype(np.float32).tofile(os.path.join(expected_dir, name + ".f32"))
    plain = hf.config_json(model)
    plain["__layout"] = "single"
    write_folder(os.path.join(expected_dir, "dequantized"), plain,
                 {name: ("F32", list(shapes[name]), values.astype(np.float32).tobytes())
                  for name, values in masters.items()})


def main(argv):
    if len(argv) >= 8 and argv[1] == "make":
        make(*argv[2:8], *(argv[8:9] or ["none"]))
        return 0
    if len(argv) == 3 and argv[1] == "batch":
        with open(argv[2]) as f:
            commands = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        return max([main([argv[0]] + command) for command in commands] + [0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
