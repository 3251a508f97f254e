#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer harnesses (nothing binary is
committed; ./run fuzz calls this before each run).

  make_corpus.py OUT_DIR STATE_SEED_TOOL

OUT_DIR/<harness>/<seed> for each harness, every seed in that harness's
input format (fuzz_support.h): files joined by SEPARATOR in the harness's
order. Model folders come from an independent writer, the safetensors
packing and Hugging Face tensor list of tests/model/make_hf_folder.py
(numpy + ml_dtypes + json, no code shared with the C++ writer); the
training-state seed is saved by the library (STATE_SEED_TOOL, built from
make_state_seed.c), since its format is the library's own.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
from make_hf_folder import ARCHITECTURES, pack, stored_array, tensor_shapes  # noqa: E402

SEPARATOR = b"\n--fp8rl-next-file--\n"  # as fp8rl_fuzz::kSeparator

# Tiny models (vocab 32, hidden 8, 1 layer, 2 heads), one per family and
# option the loader branches on, each stored in a different dtype.
BASE = dict(vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
            max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, hidden_act="silu")
MODELS = {
    "llama_tied_bf16": (dict(model_type="llama", num_key_value_heads=1, tie_word_embeddings=True,
                             attention_bias=False, bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16"), "BF16"),
    "llama_bias_rope3_f32": (dict(model_type="llama", num_key_value_heads=2, tie_word_embeddings=False,
                                  attention_bias=True, eos_token_id=[2, 3],
                                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                    high_freq_factor=4.0, original_max_position_embeddings=16)),
                             "F32"),
    "qwen2_f16": (dict(model_type="qwen2", num_key_value_heads=1, tie_word_embeddings=True, rope_scaling=None),
                  "F16"),
    "qwen3_headdim_mixed": (dict(model_type="qwen3", num_key_value_heads=1, head_dim=6, tie_word_embeddings=False,
                                 attention_bias=False, dtype="float32"), "mixed"),
}


def config_of(name):
    extra, _ = MODELS[name]
    config = dict(BASE, **extra)
    config["architectures"] = [ARCHITECTURES[config["model_type"]]]
    return config


def tensors_of(config, dtype_choice, rng):
    """name -> (dtype, shape, bytes): norms near 1, the rest small normals."""
    tensors = {}
    for index, (name, shape) in enumerate(tensor_shapes(config).items()):
        dtype = ["BF16", "F16", "F32"][index % 3] if dtype_choice == "mixed" else dtype_choice
        count = int(np.prod(shape))
        centre = 1.0 if len(shape) == 1 and "bias" not in name else 0.0
        values = (centre + 0.3 * rng.standard_normal(count)).astype(np.float32)
        tensors[name] = (dtype, list(shape), stored_array(values, dtype)[0])
    return tensors


def join(*files):
    """The harness input: files joined by SEPARATOR. Only the last may hold it."""
    for data in files[:-1]:
        if SEPARATOR in data:
            raise ValueError("a file before the last contains the separator")
    return SEPARATOR.join(files)


def sharded(config_bytes, tensors, shards):
    """config, index and `shards` shard files (the harness's fixed names)."""
    names = sorted(tensors)
    files = [f"model-0000{i + 1}-of-00002.safetensors" for i in range(shards)]
    parts = [names[i * len(names) // shards:(i + 1) * len(names) // shards] for i in range(shards)]
    weight_map = {n: files[i] for i, part in enumerate(parts) for n in part}
    total = sum(len(tensors[n][2]) for n in names)
    index = json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2).encode()
    blobs = [pack({n: tensors[n] for n in part}, {"format": "pt"}) for part in parts]
    return join(config_bytes, index, *blobs)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, state_tool = argv[1], argv[2]
    rng = np.random.default_rng(16)
    for name in MODELS:
        config = config_of(name)
        config_bytes = json.dumps(config, indent=2, sort_keys=True).encode()
        tensors = tensors_of(config, MODELS[name][1], rng)
        write(os.path.join(out, "fuzz_config_json"), name + ".json", config_bytes)
        write(os.path.join(out, "fuzz_model_folder"), name, join(config_bytes, pack(tensors, {"format": "pt"})))
        write(os.path.join(out, "fuzz_sharded_folder"), name + "_2shards", sharded(config_bytes, tensors, 2))
        write(os.path.join(out, "fuzz_sharded_folder"), name + "_1shard", sharded(config_bytes, tensors, 1))
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "state.safetensors")
        subprocess.run([state_tool, path], check=True)
        with open(path, "rb") as f:
            write(os.path.join(out, "fuzz_training_state"), "tiny_after_one_step", f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
