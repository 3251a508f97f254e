#!/usr/bin/env python3
"""Independent Hugging Face model-folder oracle for tests/model
(numpy + ml_dtypes + struct + json only; deliberately not the `safetensors`
or `transformers` packages, and sharing no code with the C++ writer).

  make_hf_folder.py make MODEL_DIR EXPECTED_DIR MODEL LAYOUT DTYPE [CORRUPTION]
      Writes a model folder as transformers' save_pretrained lays it out:
      MODEL_DIR/config.json and either model.safetensors (LAYOUT "single") or
      three shards plus model.safetensors.index.json (LAYOUT "sharded").
        MODEL       llama_tied | llama_untied | llama_bias | qwen2 | qwen3
        DTYPE       F32 | BF16 | F16 | mixed (tensor i stored as BF16, F16, F32 by i % 3)
        CORRUPTION  missing:NAME (left out of its file, still indexed),
                    unindexed:NAME (in its shard, not in weight_map),
                    shape:NAME (one extra row), dtype:NAME:I32, nan:NAME, inf:NAME
      The data area is laid out in reverse name order with json.dumps' spacing,
      and extra tensors a loader must ignore are added (rotary inv_freq, and
      lm_head.weight in a tied model). EXPECTED_DIR receives names.txt (the
      tensor names the model must have, in no particular order) and one
      NAME.f32 per tensor: the stored values widened to float32 exactly.

  make_hf_folder.py check MODEL_DIR REF_DIR DTYPE LAYOUT SHARDS
      Verifies a folder written by the C++ save_hf_model. REF_DIR holds
      names.txt ("name<TAB>d0,d1" lines) and NAME.f32, the float32 values that
      were saved. Checks the layout (SHARDS shards when LAYOUT is "sharded",
      no stale index or single file), each header (dtype, shape, offsets that
      tile the data, metadata {"format": "pt"}), the index (weight_map,
      total_size) and every stored code against the float32 values rounded to
      DTYPE by ml_dtypes / numpy (round to nearest even). Exit 0 when all
      match, 1 with a message otherwise.

  make_hf_folder.py batch FILE
      Runs one command per line of FILE (its arguments separated by tabs), so
      a test pays Python's start-up once. Exit 0 when every command succeeds.
"""
import json
import os
import re
import struct
import sys

import ml_dtypes
import numpy as np

MODELS = {
    # Sizes on purpose not multiples of 128 (nor of 8, mostly).
    "llama_tied": dict(model_type="llama", vocab_size=37, hidden_size=24, num_hidden_layers=2,
                       num_attention_heads=3, num_key_value_heads=1, intermediate_size=40,
                       tie_word_embeddings=True, attention_bias=False),
    "llama_untied": dict(model_type="llama", vocab_size=37, hidden_size=24, num_hidden_layers=2,
                         num_attention_heads=3, num_key_value_heads=1, intermediate_size=40,
                         tie_word_embeddings=False, attention_bias=False),
    "llama_bias": dict(model_type="llama", vocab_size=19, hidden_size=12, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, intermediate_size=20,
                       tie_word_embeddings=False, attention_bias=True),
    "qwen2": dict(model_type="qwen2", vocab_size=41, hidden_size=24, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, intermediate_size=36,
                  tie_word_embeddings=True),
    "qwen3": dict(model_type="qwen3", vocab_size=29, hidden_size=16, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=6, intermediate_size=28,
                  tie_word_embeddings=False, attention_bias=False),
}

ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def config_json(model):
    config = dict(MODELS[model])
    config.update(architectures=[ARCHITECTURES[config["model_type"]]], hidden_act="silu",
                  max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0,
                  torch_dtype="bfloat16", initializer_range=0.02, use_cache=True)
    return config


def tensor_shapes(config):
    """The Hugging Face parameter names and shapes, written out from the
    transformers modeling code (LlamaForCausalLM, Qwen2/Qwen3ForCausalLM)."""
    hidden, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim", hidden // heads)
    model_type = config["model_type"]
    qkv_bias = model_type == "qwen2" or config.get("attention_bias", False)
    o_bias = model_type != "qwen2" and config.get("attention_bias", False)
    shapes = {"model.embed_tokens.weight": [vocab, hidden]}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = [hidden]
        shapes[p + "post_attention_layernorm.weight"] = [hidden]
        for proj, rows in (("q", heads * head_dim), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)):
            shapes[p + f"self_attn.{proj}_proj.weight"] = [rows, hidden]
            if qkv_bias:
                shapes[p + f"self_attn.{proj}_proj.bias"] = [rows]
        shapes[p + "self_attn.o_proj.weight"] = [hidden, heads * head_dim]
        if o_bias:
            shapes[p + "self_attn.o_proj.bias"] = [hidden]
        if model_type == "qwen3":
            shapes[p + "self_attn.q_norm.weight"] = [head_dim]
            shapes[p + "self_attn.k_norm.weight"] = [head_dim]
        shapes[p + "mlp.gate_proj.weight"] = [inter, hidden]
        shapes[p + "mlp.up_proj.weight"] = [inter, hidden]
        shapes[p + "mlp.down_proj.weight"] = [hidden, inter]
    shapes["model.norm.weight"] = [hidden]
    if not config["tie_word_embeddings"]:
        shapes["lm_head.weight"] = [vocab, hidden]
    return shapes


# Values that probe exact widening: subnormals and near-max values of each type.
SPECIALS = {"BF16": [1e-40, -3.0e38], "F16": [2.0 ** -24, -65504.0], "F32": [1e-45, 3.4e38]}


def stored_array(values, dtype):
    """float32 values -> (bytes to store, exact float32 of the stored values)."""
    if dtype == "F32":
        stored = values.astype(np.float32)
        return stored.tobytes(), stored
    if dtype == "F16":
        stored = values.astype(np.float16)
        return stored.tobytes(), stored.astype(np.float32)
    stored = values.astype(ml_dtypes.bfloat16)
    return stored.tobytes(), stored.astype(np.float32)


def pack(tensors, metadata):
    """tensors: name -> (dtype, shape, bytes). Data in reverse name order."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors, reverse=True):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = metadata
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make(model_dir, expected_dir, model, layout, dtype_choice, corruption="none"):
    os.makedirs(model_dir, exist_ok=True)
    os.makedirs(expected_dir, exist_ok=True)
    config = config_json(model)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    shapes = tensor_shapes(config)
    with open(os.path.join(expected_dir, "names.txt"), "w") as f:
        f.write("".join(name + "\n" for name in shapes))

    kind, _, target = corruption.partition(":")
    missing = set()
    target, _, corrupt_dtype = target.partition(":")
    rng = np.random.default_rng(20240611)
    tensors = {}
    for index, (name, shape) in enumerate(shapes.items()):
        dtype = ["BF16", "F16", "F32"][index % 3] if dtype_choice == "mixed" else dtype_choice
        count = int(np.prod(shape))
        if len(shape) == 1 and "bias" not in name:
            values = 1.0 + 0.1 * rng.standard_normal(count)
        else:
            values = 0.5 * rng.standard_normal(count)
        values = values.astype(np.float32)
        values[:2] = SPECIALS[dtype]
        data, exact = stored_array(values, dtype)
        exact.tofile(os.path.join(expected_dir, name + ".f32"))
        stored_shape = list(shape)
        if name == target:
            if kind == "missing":
                missing.add(name)
            if kind == "shape":
                stored_shape[0] += 1
                data, _ = stored_array(np.concatenate([values, values[: count // shape[0]]]), dtype)
            elif kind == "dtype":
                dtype, data = corrupt_dtype, np.arange(count, dtype=np.int32).tobytes()
            elif kind in ("nan", "inf"):
                values[3] = np.nan if kind == "nan" else -np.inf
                data, _ = stored_array(values, dtype)
        tensors[name] = (dtype, stored_shape, data)

    # Tensors a loader must ignore.
    inv_freq = (1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = ("F32", [4], inv_freq.tobytes())
    if config["tie_word_embeddings"]:
        junk = np.full(config["vocab_size"] * config["hidden_size"], 7.0, dtype=np.float32)
        tensors["lm_head.weight"] = ("F32", [config["vocab_size"], config["hidden_size"]], junk.tobytes())

    metadata = {"format": "pt"}
    if layout == "single":
        write(os.path.join(model_dir, "model.safetensors"),
              pack({n: t for n, t in tensors.items() if n not in missing}, metadata))
        return
    names = list(tensors)
    count = 3
    chunks = [names[i * len(names) // count:(i + 1) * len(names) // count] for i in range(count)]
    weight_map, total = {}, 0
    for i, chunk in enumerate(chunks):
        file = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        write(os.path.join(model_dir, file), pack({n: tensors[n] for n in chunk if n not in missing}, metadata))
        for n in chunk:
            total += len(tensors[n][2]) if n not in missing else 0
            if not (kind == "unindexed" and n == target):
                weight_map[n] = file
    index = {"metadata": {"total_size": total, "total_parameters": total // 2},
             "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)


DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length].decode("utf-8"))
    data = blob[8 + length:]
    metadata = header.pop("__metadata__", None)
    spans = sorted(tuple(info["data_offsets"]) for info in header.values())
    position = 0
    for begin, end in spans:
        if begin != position:
            raise AssertionError(f"{path}: data offsets do not tile the data area at {begin}")
        position = end
    if position != len(data):
        raise AssertionError(f"{path}: {len(data) - position} trailing bytes")
    if (8 + length) % 8 != 0:
        raise AssertionError(f"{path}: data does not start 8-aligned")
    tensors = {name: (info["dtype"], info["shape"], data[info["data_offsets"][0]:info["data_offsets"][1]])
               for name, info in header.items()}
    return metadata, tensors


def expected_codes(values, dtype):
    if dtype == "F32":
        return values.astype(np.float32).tobytes()
    if dtype == "F16":
        return values.astype(np.float16).tobytes()
    return values.astype(ml_dtypes.bfloat16).tobytes()


def check(model_dir, ref_dir, dtype, layout, shards):
    shard_pattern = re.compile(r"model-(\d{5})-of-(\d{5})\.safetensors$")
    present = sorted(os.listdir(model_dir))
    shard_files = [f for f in present if shard_pattern.match(f)]
    has_single = "model.safetensors" in present
    has_index = "model.safetensors.index.json" in present
    if "config.json" not in present:
        raise AssertionError("no config.json")
    with open(os.path.join(model_dir, "config.json")) as f:
        json.load(f)
    stray = [f for f in present if ".tmp." in f]
    if stray:
        raise AssertionError(f"temporary files left behind: {stray}")

    stored = {}
    if layout == "single":
        if has_index or shard_files or not has_single:
            raise AssertionError(f"single layout expected, folder holds {present}")
        metadata, stored = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        if metadata != {"format": "pt"}:
            raise AssertionError(f"metadata {metadata}")
    else:
        expected_files = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
        if has_single or not has_index or shard_files != expected_files:
            raise AssertionError(f"{shards} shards expected, folder holds {present}")
        with open(os.path.join(model_dir, "model.safetensors.index.json")) as f:
            index = json.load(f)
        weight_map = index["weight_map"]
        total = 0
        for file in expected_files:
            metadata, tensors = read_safetensors(os.path.join(model_dir, file))
            if metadata != {"format": "pt"}:
                raise AssertionError(f"{file}: metadata {metadata}")
            if not tensors:
                raise AssertionError(f"{file}: empty shard")
            for name, tensor in tensors.items():
                if weight_map.get(name) != file:
                    raise AssertionError(f"{name} is in {file}, index says {weight_map.get(name)}")
                total += len(tensor[2])
            stored.update(tensors)
        if set(weight_map) != set(stored):
            raise AssertionError("weight_map and shard contents differ")
        if index["metadata"]["total_size"] != total:
            raise AssertionError(f"total_size {index['metadata']['total_size']} != {total}")

    with open(os.path.join(ref_dir, "names.txt")) as f:
        reference = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    if sorted(name for name, _ in reference) != sorted(stored):
        raise AssertionError(f"tensor names differ: {sorted(stored)}")
    for name, shape_text in reference:
        shape = [int(d) for d in shape_text.split(",")]
        file_dtype, file_shape, data = stored[name]
        if file_dtype != dtype or file_shape != shape:
            raise AssertionError(f"{name}: {file_dtype} {file_shape}, expected {dtype} {shape}")
        values = np.fromfile(os.path.join(ref_dir, name + ".f32"), dtype=np.float32)
        if len(data) != values.size * DTYPE_BYTES[dtype]:
            raise AssertionError(f"{name}: {len(data)} bytes for {values.size} values")
        expected = expected_codes(values, dtype)
        if data != expected:
            width = DTYPE_BYTES[dtype]
            first = next(i for i in range(values.size) if data[i * width:(i + 1) * width] != expected[i * width:(i + 1) * width])
            raise AssertionError(f"{name}: element {first} ({values[first]!r}) stored as "
                                 f"{data[first * width:(first + 1) * width].hex()}, expected "
                                 f"{expected[first * width:(first + 1) * width].hex()}")


def main(argv):
    if len(argv) >= 7 and argv[1] == "make":
        make(*argv[2:7], *(argv[7:8] or ["none"]))
        return 0
    if len(argv) == 7 and argv[1] == "check":
        try:
            check(argv[2], argv[3], argv[4], argv[5], int(argv[6]))
        except (AssertionError, KeyError, ValueError, OSError) as error:
            print(f"make_hf_folder.py check {argv[2]}: {error}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 3 and argv[1] == "batch":
        with open(argv[2]) as f:
            commands = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        return max([main([argv[0]] + command) for command in commands] + [0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
