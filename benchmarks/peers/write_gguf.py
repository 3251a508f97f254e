#!/usr/bin/env python3
"""Writes SmolLM2-135M-shaped GGUF files for llama.cpp's llama-bench.

The same shapes as our benchmarks (benchmarks/cpu/bench_support.h,
smollm2_135m): llama architecture, vocab 49152, hidden 576, 30 layers, 9
heads, 3 KV heads, head_dim 64, intermediate 1536, RMS eps 1e-5, RoPE theta
100000, tied embeddings. Random weights, N(0, 0.02^2) from a fixed seed: the
speed of a dense model does not depend on its values.

  write_gguf.py OUT_DIR [--types F16,Q8_0] [--seed 7]

writes OUT_DIR/smollm2-135m-random-<TYPE>.gguf (skipped when present).

Tied embeddings: llama.cpp's llama architecture takes token_embd.weight as
the output head when output.weight is absent, so no output.weight is written,
as in SmolLM2's own GGUF conversions. Weight types follow llama.cpp's
converter: 2-D tensors (token_embd included) in the file's type, 1-D norm
weights in F32. Q8_0 uses gguf's own quantizer (gguf.quants.quantize).

Tokenizer: llama-bench feeds random token ids but still loads a vocabulary, so
the file carries a minimal byte-level BPE ("gpt2") one of 49152 tokens: the
256 byte symbols (GPT-2's byte-to-unicode table, which llama.cpp needs for
"\\n"), then placeholder tokens, and one merge.
"""

import argparse
import os
import sys

import numpy as np
import gguf

VOCAB = 49152
HIDDEN = 576
LAYERS = 30
HEADS = 9
KV_HEADS = 3
HEAD_DIM = 64
INTERMEDIATE = 1536
RMS_EPS = 1e-5
ROPE_THETA = 100000.0
CONTEXT = 8192

QTYPES = {"F16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
          "Q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0)}


def byte_symbols():
    """GPT-2's bytes_to_unicode(): printable stand-ins for the 256 bytes."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return [chr(c) for c in codes]


def add_vocab(writer):
    tokens = byte_symbols()
    tokens += [f"<dummy_{i}>" for i in range(VOCAB - len(tokens))]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * VOCAB)
    writer.add_token_merges(["Ġ t"])  # one real merge: the array may not be empty
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(0)
    writer.add_add_bos_token(False)


def tensors(seed):
    """(name, float32 array in [out, in] order) of the whole model, in file order."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    ones = np.ones(HIDDEN, dtype=np.float32)
    yield "token_embd.weight", w(VOCAB, HIDDEN)  # also the output head (tied)
    for i in range(LAYERS):
        yield f"blk.{i}.attn_norm.weight", ones
        yield f"blk.{i}.attn_q.weight", w(HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_k.weight", w(KV_HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_v.weight", w(KV_HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_output.weight", w(HIDDEN, HEADS * HEAD_DIM)
        yield f"blk.{i}.ffn_norm.weight", ones
        yield f"blk.{i}.ffn_gate.weight", w(INTERMEDIATE, HIDDEN)
        yield f"blk.{i}.ffn_up.weight", w(INTERMEDIATE, HIDDEN)
        yield f"blk.{i}.ffn_down.weight", w(HIDDEN, INTERMEDIATE)
    yield "output_norm.weight", ones


def write(path, type_name, seed):
    qtype, file_type = QTYPES[type_name]
    tmp = path + ".tmp"
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name(f"SmolLM2-135M-shaped random {type_name}")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(ROPE_THETA)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(VOCAB)
    writer.add_file_type(file_type)
    add_vocab(writer)
    for name, data in tensors(seed):
        if data.ndim == 1:
            writer.add_tensor(name, data)  # norms stay F32
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, path)  # a file that exists is complete


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--types", default="F16,Q8_0")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for type_name in args.types.split(","):
        path = os.path.join(args.out_dir, f"smollm2-135m-random-{type_name}.gguf")
        if os.path.exists(path):
            continue
        print(f"writing {path}", file=sys.stderr)
        write(path, type_name, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
