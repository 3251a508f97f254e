#!/usr/bin/env python3
"""Model logits against an independent PyTorch reference.

For each model family this script writes a random tiny Hugging Face folder
(config.json + model.safetensors with BF16 weights, written by the minimal
safetensors writer below), runs our forward pass on a few sequences through
dump_logits (one run per precision recipe), and recomputes the logits in
torch float64 following Hugging Face's modeling code (RMSNorm, rotate-half
RoPE with llama3 frequency scaling, GQA, causal softmax attention, SwiGLU,
q/k/v biases, per-head q/k RMSNorm before RoPE, tied head).

Two references per recipe:
  emulated  float64 plus the rounding points the recipe defines (below): our
            result should match it up to FP32-vs-FP64 arithmetic and the
            rounding flips that difference causes (see TOLERANCES below);
            asserted.
  plain     float64 with no rounding at all: what BF16/FP8 costs (reported,
            only loosely bounded).

Rounding points (kernels/transformer_ops.h, kernels/common/attention_math.h):
  every recipe    embeddings and head weights BF16 (exact here: the file is
                  BF16); the LM head a BF16 linear layer (below), except
  fp8-head        the LM head an FP8 linear layer (a tied one quantizes the
                  embedding matrix for the head only).
  BF16 linear     the input of every linear layer rounded to BF16.
  FP8 linear      weights fake-quantized to E4M3 in 128x128 blocks, inputs in
                  1x128 tiles along the input dimension; scale = amax / 448
                  in float32 (pow2: smallest power of two >= amax / 448);
                  code = round-to-nearest-even E4M3, saturating at 448,
                  subnormals down to 2^-9.
  BF16 attention  q, K and V rounded to BF16; the probabilities
                  p = exp(s - max) rounded to BF16 before P.V; the sum is
                  divided by the unrounded sum of p.
  FP8 KV cache    K and V stored as E4M3 of value / scale (scales are 1).
  FP8 attention   q as E4M3 of q / q_scale, p as E4M3 of p * 448, and the
                  P.V sum multiplied by 1 / 448.
The E4M3 and BF16 roundings are implemented here from frexp and np.round
(round half to even), independently of the C++ code.

torch_moe.py extends this model and comparison to Qwen3-MoE (router, top-k
experts, dense layers by mlp_only_layers / decoder_sparse_step) through
Reference.mlp, reference_logits and compare_logits.

torch_grads.py reuses this model for the gradient oracles: Reference with
requires_grad=True makes every parameter a leaf of autograd, and each
rounding point then acts as a straight-through estimator (the rounded value
forward, the identity backward; see straight_through and attention).

Usage: torch_reference.py --dump-logits PATH --family llama|smollm2|qwen2|qwen3|all
Exit status: 0 pass, 1 fail, 77 skipped (torch not importable).
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {error} (install Debian's python3-torch)")
    sys.exit(77)

F64 = torch.float64
RECIPES = ["bf16", "fp8", "fp8-pow2", "fp8-kv", "fp8-kv-attn", "fp8-edges", "fp8-head"]

# TOLERANCES. How the comparison with the emulated reference is judged. Both sides put
# values through the same BF16/E4M3 roundings, but ours computes between them
# in FP32 and the reference in FP64, so now and then an element lands on the
# other side of a rounding boundary (one BF16 ulp, or one E4M3 step of 1/8;
# FP8 activations of BF16-valued data even land exactly on E4M3 ties in
# FP32), and that flip moves every later logit of its sequence. Such flips
# are why the max and mean errors cannot be FP32-tight; the table shows the
# "floor": the emulated reference against itself run with its embeddings
# perturbed by a relative NOISE (FP32-level), which is as large as ours.
# Three assertions, errors relative to max |logit| of the reference:
#  1. max error <= MAX_TOL, 2. mean error <= MEAN_TOL: measured worst over
#     the four families (bf16 3.0e-3 / 2.7e-4, fp8 recipes 4.9e-2 / 5.2e-3)
#     times ~2-3;
#  3. of the rows at positions 0-4 (before flips pile up), at least
#     MIN_EXACT_EARLY match to 1e-5: measured >= 50% (mostly 80-100%),
#     while a wrong rounding point (p not rounded, q not rounded, E4M3 p
#     without the 448 scale, BF16 instead of E4M3 KV, amax/240 scales, a
#     BF16 edge layer missing, no llama3 RoPE scaling) leaves <= 25%: only
#     position-0 rows, whose attention is trivial, or none.
NOISE = 3e-7
EXACT = 1e-5
EARLY_POSITIONS = 5
MIN_EXACT_EARLY = 0.4
MAX_TOL = {"bf16": 1e-2, "fp8": 0.1, "fp8-pow2": 0.1, "fp8-kv": 0.1, "fp8-kv-attn": 0.1, "fp8-edges": 0.1,
           "fp8-head": 0.1}
MEAN_TOL = {"bf16": 1e-3, "fp8": 1.5e-2, "fp8-pow2": 1.5e-2, "fp8-kv": 1.5e-2, "fp8-kv-attn": 1.5e-2,
            "fp8-edges": 1.5e-2, "fp8-head": 1.5e-2}
# Against the plain float64 reference (no emulation): the recipes' own cost,
# reported; bounded only loosely (measured 4.6e-3 and 9.0e-2), against gross errors.
PLAIN_TOL = {"bf16": 0.03, "fp8": 0.2, "fp8-pow2": 0.2, "fp8-kv": 0.2, "fp8-kv-attn": 0.2, "fp8-edges": 0.2,
             "fp8-head": 0.2}
# The three per-recipe bounds together, as compare_logits takes them.
BOUNDS = {"max": MAX_TOL, "mean": MEAN_TOL, "plain": PLAIN_TOL}

# Short sequences give many rows that no rounding flip has reached yet (see
# "rows<1e-5"); long ones exercise attention over more than 128 keys and a
# batch of more than one 256-row logits pass (299 tokens).
SEQUENCE_LENGTHS = [1, 2, 3, 5, 8, 13, 37, 140, 90]
# Standard deviations of the random weights: linear layers gain / sqrt(in),
# embeddings `embed`, biases `bias`, norm weights 1 + N(0, 0.1^2).
GAIN = {"qk": 1.0, "gate": 1.0, "head": 1.0, "embed": 1.0, "bias": 0.5}


# ---------------------------------------------------------------- models ---

def base_config(model_type, **overrides):
    config = {
        "architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                           "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM"}[model_type]],
        "model_type": model_type,
        "vocab_size": 300,
        "hidden_size": 160,
        "intermediate_size": 200,
        "num_hidden_layers": 3,
        "num_attention_heads": 5,
        "num_key_value_heads": 1,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "bfloat16",
    }
    config.update(overrides)
    return config


FAMILIES = {
    # Llama 3.x: GQA 5:1, untied, llama3 RoPE scaling whose original context
    # (64) puts head_dim 32's frequencies in all three bands.
    "llama": base_config("llama", rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}, rope_theta=500000.0),
    # SmolLM2-like: tied embeddings, head_dim 40, GQA 3:1.
    "smollm2": base_config("llama", hidden_size=240, num_attention_heads=6, num_key_value_heads=2,
                           intermediate_size=200, tie_word_embeddings=True, rope_theta=100000.0),
    # Qwen2: q/k/v biases, GQA 2:1, head_dim 40.
    "qwen2": base_config("qwen2", num_attention_heads=4, num_key_value_heads=2, intermediate_size=232,
                         rope_theta=1000000.0, use_sliding_window=False, sliding_window=None),
    # Qwen3: per-head q/k RMSNorm, explicit head_dim 32 with q_dim 192 != hidden 160, tied.
    "qwen3": base_config("qwen3", num_attention_heads=6, num_key_value_heads=2, head_dim=32,
                         intermediate_size=200, tie_word_embeddings=True, rope_theta=1000000.0,
                         attention_bias=False, use_sliding_window=False, sliding_window=None),
}


def dims(config):
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return heads, config["num_key_value_heads"], head_dim


def random_weights(config, seed, gains=None):
    """name -> BF16 tensor. Scales chosen so that activations are O(1), the
    attention is far from uniform and logits spread over several units.
    gains overrides entries of GAIN."""
    gain = dict(GAIN, **(gains or {}))
    g = torch.Generator().manual_seed(seed)
    hidden, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv_heads, head_dim = dims(config)
    family = config["model_type"]

    def normal(shape, std, mean=0.0):
        return (torch.randn(shape, generator=g, dtype=torch.float32) * std + mean).to(torch.bfloat16)

    def linear(out_f, in_f, gain=1.0):
        return normal((out_f, in_f), gain / math.sqrt(in_f))

    w = {"model.embed_tokens.weight": normal((vocab, hidden), gain["embed"])}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = normal((hidden,), 0.1, 1.0)
        w[p + "post_attention_layernorm.weight"] = normal((hidden,), 0.1, 1.0)
        w[p + "self_attn.q_proj.weight"] = linear(heads * head_dim, hidden, gain["qk"])
        w[p + "self_attn.k_proj.weight"] = linear(kv_heads * head_dim, hidden, gain["qk"])
        w[p + "self_attn.v_proj.weight"] = linear(kv_heads * head_dim, hidden)
        w[p + "self_attn.o_proj.weight"] = linear(hidden, heads * head_dim)
        if family == "qwen2":
            w[p + "self_attn.q_proj.bias"] = normal((heads * head_dim,), gain["bias"])
            w[p + "self_attn.k_proj.bias"] = normal((kv_heads * head_dim,), gain["bias"])
            w[p + "self_attn.v_proj.bias"] = normal((kv_heads * head_dim,), gain["bias"])
        if family in ("qwen3", "qwen3_moe"):
            w[p + "self_attn.q_norm.weight"] = normal((head_dim,), 0.2, 1.5)
            w[p + "self_attn.k_norm.weight"] = normal((head_dim,), 0.2, 1.5)
        w[p + "mlp.gate_proj.weight"] = linear(inter, hidden, gain["gate"])
        w[p + "mlp.up_proj.weight"] = linear(inter, hidden)
        w[p + "mlp.down_proj.weight"] = linear(hidden, inter)
    w["model.norm.weight"] = normal((hidden,), 0.1, 1.0)
    if not config["tie_word_embeddings"]:
        w["lm_head.weight"] = linear(vocab, hidden, gain["head"])
    # Something a real checkpoint carries and loaders must ignore.
    w["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(head_dim // 2, dtype=torch.bfloat16)
    return w


SAFETENSORS_DTYPES = {torch.bfloat16: ("BF16", torch.int16, "<i2"), torch.float32: ("F32", torch.float32, "<f4")}


def write_safetensors(path, tensors):
    """Minimal safetensors writer (BF16 and F32 tensors): little-endian u64
    header size, JSON header padded with spaces to 8 bytes, then the raw data
    in header order."""
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        dtype, view, little = SAFETENSORS_DTYPES[tensor.dtype]
        data = tensor.contiguous().view(view).numpy().astype(little).tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """name -> float64 tensor of a safetensors file with F32 / BF16 tensors
    (BF16 widened exactly by putting its 16 bits on top of an FP32)."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    base = 8 + size
    result = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = blob[base + begin:base + end]
        if entry["dtype"] == "F32":
            values = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif entry["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32).astype(np.float64)
        else:
            raise ValueError(f"{path}: tensor {name} has dtype {entry['dtype']} (F32 or BF16 expected)")
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if values.size != count:
            raise ValueError(f"{path}: tensor {name} holds {values.size} values, shape {entry['shape']}")
        result[name] = torch.from_numpy(values.copy()).reshape(entry["shape"])
    return result


def write_folder(folder, config, weights):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(folder, "model.safetensors"), weights)


# ------------------------------------------------------------- rounding ---

def round_to_grid(x, mantissa_bits, min_exponent, max_value):
    """Round float64 values to a binary format with `mantissa_bits` explicit
    mantissa bits, normal exponents >= min_exponent (below: subnormal spacing
    2^(min_exponent - mantissa_bits)), round half to even, saturating at
    max_value. Exact: every step is a power-of-two scaling or np.round."""
    a = np.abs(x)
    _, e = np.frexp(a)                      # a = m * 2^e, m in [0.5, 1)
    e = np.maximum(e - 1, min_exponent)     # exponent of the leading bit
    quantum = np.ldexp(1.0, e - mantissa_bits)
    r = np.minimum(np.round(a / quantum) * quantum, max_value)
    return np.copysign(r, x)


def f32(t):
    """Our activations are FP32 values: round there first, so that a value the
    FP32 computation leaves exactly on a BF16/E4M3 tie rounds the same way."""
    return t.to(torch.float32).to(F64)


def bf16(t):
    return torch.from_numpy(round_to_grid(f32(t).numpy(), 7, -126, np.inf))


def e4m3(t):
    return torch.from_numpy(round_to_grid(f32(t).numpy(), 3, -6, 448.0))


def e4m3_quotient(x, scale):
    """E4M3 code value of x / scale with the division in FP32, as
    block_scale.h's quantize_value defines it (scale is an FP32 value). With a
    non-power-of-two scale the FP32 rounding of the quotient matters: it often
    lands BF16-valued weights exactly on an E4M3 tie."""
    return e4m3((x.to(torch.float32) / scale.to(torch.float32)).to(F64))


def block_scale(amax, pow2):
    """Dequantization scale of blocks from their amax: float32(amax) / 448 in
    float32, or the smallest power of two p with amax <= 448 p."""
    amax32 = amax.to(torch.float32)
    if pow2:
        ratio = amax32.to(F64) / 448.0
        m, e = np.frexp(ratio.numpy())
        e = np.where(m == 0.5, e - 1, e)
        scale = torch.from_numpy(np.ldexp(1.0, e))
    else:
        scale = (amax32 / torch.tensor(448.0, dtype=torch.float32)).to(F64)
    return torch.where(amax32 > 0, scale, torch.ones_like(scale))


def fake_quant_tiles(x, pow2):
    """x [rows, cols] -> dequantized E4M3 with 1x128 tiles along cols."""
    rows, cols = x.shape
    pad = -cols % 128
    xp = torch.nn.functional.pad(x, (0, pad)).reshape(rows, -1, 128)
    scale = block_scale(xp.abs().amax(dim=2, keepdim=True), pow2)
    return (e4m3_quotient(xp, scale) * scale).reshape(rows, -1)[:, :cols]


def straight_through(rounding, x):
    """rounding(x) in the forward, the identity in the backward: the value is
    exactly rounding(x) (x - x.detach() is an exact zero that only carries
    x's gradient). Without autograd on x it is plain rounding(x)."""
    rounded = rounding(x.detach())
    return rounded + (x - x.detach()) if x.requires_grad else rounded


def fake_quant_blocks(w, pow2):
    """w [out, in] -> dequantized E4M3 with 128x128 blocks."""
    out_f, in_f = w.shape
    wp = torch.nn.functional.pad(w, (0, -in_f % 128, 0, -out_f % 128))
    blocks = wp.reshape(wp.shape[0] // 128, 128, wp.shape[1] // 128, 128)
    scale = block_scale(blocks.abs().amax(dim=(1, 3), keepdim=True), pow2)
    return (e4m3_quotient(blocks, scale) * scale).reshape(wp.shape)[:out_f, :in_f]


# -------------------------------------------------------------- forward ---

def recipe_layers(recipe, num_layers):
    """Per layer: (linear 'bf16'|'fp8', kv 'bf16'|'e4m3', attention 'bf16'|'fp8')."""
    linear = "bf16" if recipe == "bf16" else "fp8"
    kv = "e4m3" if recipe in ("fp8-kv", "fp8-kv-attn", "fp8-edges") else "bf16"
    attention = "fp8" if recipe in ("fp8-kv-attn", "fp8-edges") else "bf16"
    layers = [(linear, kv, attention)] * num_layers
    if recipe == "fp8-edges":
        layers[0] = layers[-1] = ("bf16", "bf16", "bf16")
    return layers


def rope_inverse_frequencies(config, head_dim):
    """Hugging Face's default and llama3 rope init, in float64."""
    base = config["rope_theta"]
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=F64) / head_dim)
    scaling = config.get("rope_scaling")
    if not scaling:
        return inv
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv
    inv_llama = torch.where(wavelen > low_freq_wavelen, inv / factor, inv)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_llama)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def is_parameter(name):
    """Tensors of the file that are model parameters (not rotary buffers)."""
    return not name.endswith("rotary_emb.inv_freq")


class Reference:
    """The model in float64. emulate=True applies the recipe's rounding
    points; they are straight-through estimators (identity in the backward)
    when autograd runs, which requires_grad=True turns on for every
    parameter (self.w[name].grad after backward())."""

    def __init__(self, config, weights, requires_grad=False):
        self.c = config
        self.w = {name: t.to(F64).requires_grad_(requires_grad and is_parameter(name)) for name, t in weights.items()}
        self.heads, self.kv_heads, self.head_dim = dims(config)
        self.inv_freq = rope_inverse_frequencies(config, self.head_dim)
        self.quantized = {}

    def weight(self, name, fp8, pow2):
        if not fp8:
            return self.w[name]
        key = (name, pow2)
        if key not in self.quantized:
            self.quantized[key] = fake_quant_blocks(self.w[name].detach(), pow2)
        w = self.w[name]
        return self.quantized[key] + (w - w.detach()) if w.requires_grad else self.quantized[key]

    def linear(self, x, name, mode, emulate, pow2, bias=None):
        fp8 = emulate and mode == "fp8"
        if emulate:
            x = straight_through((lambda t: fake_quant_tiles(t, pow2)) if fp8 else bf16, x)
        y = x @ self.weight(name + ".weight", fp8, pow2).T
        if bias is not None and (name + ".bias") in self.w:
            y = y + self.w[name + ".bias"]
        return y

    def attention(self, q, k, v, kv, math_mode, emulate):
        """q [T, H, D], k/v [T, KV, D] post-RoPE -> [T, H * D]; scales are 1."""
        t = q.shape[0]
        if emulate:
            kv_rounding = e4m3 if kv == "e4m3" else bf16
            k, v = straight_through(kv_rounding, k), straight_through(kv_rounding, v)
            q = straight_through(e4m3 if math_mode == "fp8" else bf16, q)
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)  # repeat_kv
        v = v.repeat_interleave(group, dim=1)
        s = torch.einsum("thd,uhd->htu", q, k) / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        s = s.masked_fill(~causal, -math.inf)
        p = torch.exp(s - s.amax(dim=-1, keepdim=True).detach())
        total = p.sum(dim=-1, keepdim=True)
        p_hat = p.detach()
        if emulate:
            p_hat = e4m3(p_hat * 448.0) / 448.0 if math_mode == "fp8" else bf16(p_hat)
        if p.requires_grad:
            # Forward: the weights p^ / l of the values; backward: the softmax
            # Jacobian of the unrounded P = p / l (p^ -> p straight through).
            probs = p / total
            weights = p_hat / total.detach() + (probs - probs.detach())
            out = torch.einsum("htu,uhd->thd", weights, v)
        else:
            out = torch.einsum("htu,uhd->thd", p_hat, v) / total.permute(1, 0, 2)
        return out.reshape(t, -1)

    def mlp(self, h, layer, linear, emulate, pow2):
        """The SwiGLU MLP of layer `layer`: h [T, hidden] -> [T, hidden]. A
        method so that the MoE reference (torch_moe.py) can replace it."""
        p = f"model.layers.{layer}.mlp."
        return self.swiglu(h, p, linear, emulate, pow2)

    def swiglu(self, h, p, linear, emulate, pow2):
        """down(silu(gate(h)) * up(h)) with the linears p + gate_proj etc."""
        gate = self.linear(h, p + "gate_proj", linear, emulate, pow2)  # [T, inter]
        up = self.linear(h, p + "up_proj", linear, emulate, pow2)      # [T, inter]
        return self.linear(torch.nn.functional.silu(gate) * up, p + "down_proj", linear, emulate, pow2)

    def forward(self, tokens, recipe, emulate, noise=None):
        """Logits [T, vocab] of one sequence. noise (a torch.Generator)
        perturbs the embeddings by a relative NOISE, about what FP32
        arithmetic adds: the spread of the result measures how much the
        rounding points amplify FP32-level differences."""
        c, w = self.c, self.w
        eps, heads, kv_heads, d = c["rms_norm_eps"], self.heads, self.kv_heads, self.head_dim
        pow2 = recipe == "fp8-pow2"
        t = len(tokens)
        x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
        if noise is not None:
            x = x * (1 + NOISE * torch.randn(x.shape, generator=noise, dtype=F64))
        angles = torch.arange(t, dtype=F64)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
        for i, (linear, kv, math_mode) in enumerate(recipe_layers(recipe, c["num_hidden_layers"])):
            p = f"model.layers.{i}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = self.linear(h, p + "self_attn.q_proj", linear, emulate, pow2, bias=True).reshape(t, heads, d)
            k = self.linear(h, p + "self_attn.k_proj", linear, emulate, pow2, bias=True).reshape(t, kv_heads, d)
            v = self.linear(h, p + "self_attn.v_proj", linear, emulate, pow2, bias=True).reshape(t, kv_heads, d)
            if p + "self_attn.q_norm.weight" in w:
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            a = self.attention(q, k, v, kv, math_mode, emulate)
            x = x + self.linear(a, p + "self_attn.o_proj", linear, emulate, pow2, bias=True)
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            x = x + self.mlp(h, i, linear, emulate, pow2)
        h = rms_norm(x, w["model.norm.weight"], eps)
        head = "lm_head" if "lm_head.weight" in w else "model.embed_tokens"
        return self.linear(h, head, "fp8" if recipe == "fp8-head" else "bf16", emulate, pow2)


# ------------------------------------------------------------------ run ---

def errors(ours, ref):
    """(max abs, max abs / max |ref|, mean abs / max |ref|)."""
    diff = (ours - ref).abs()
    scale = ref.abs().max().item()
    return diff.max().item(), diff.max().item() / scale, diff.mean().item() / scale


def random_sequences(config, seed, lengths=SEQUENCE_LENGTHS):
    """Token sequences of the given lengths drawn uniformly from the vocabulary."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, config["vocab_size"], (n,), generator=g).tolist() for n in lengths]


def reference_logits(reference, sequences, recipes, seed):
    """The references compare_logits judges against, all [tokens, vocab]:
    {"plain": float64 without rounding, recipe: (emulated, perturbed)}, where
    perturbed is emulated with FP32-level noise on the embeddings (the floor)."""
    result = {"plain": torch.cat([reference.forward(s, "bf16", emulate=False) for s in sequences])}
    for recipe in recipes:
        emulated = torch.cat([reference.forward(s, recipe, emulate=True) for s in sequences])
        noise = torch.Generator().manual_seed(seed + 100)
        perturbed = torch.cat([reference.forward(s, recipe, emulate=True, noise=noise) for s in sequences])
        result[recipe] = (emulated, perturbed)
    return result


def run_family(family, dump_logits, workdir, seed):
    config = FAMILIES[family]
    weights = random_weights(config, seed)
    folder = os.path.join(workdir, family)
    write_folder(folder, config, weights)
    sequences = random_sequences(config, seed + 1)
    references = reference_logits(Reference(config, weights), sequences, RECIPES, seed)
    return compare_logits(family, config, sequences, references,
                          dump_logits_runner(dump_logits, folder, sequences, workdir))


def dump_logits_runner(dump_logits, folder, sequences, workdir):
    """recipe -> our logits [tokens, vocab] of the sequences (dump_logits on
    the folder), or a message saying why there are none."""
    lengths = [len(s) for s in sequences]
    tokens = np.array([x for s in sequences for x in s], dtype="<i4")
    offsets = np.cumsum([0] + lengths).astype("<i8")
    tokens_path, offsets_path = os.path.join(workdir, "tokens.bin"), os.path.join(workdir, "offsets.bin")
    tokens.tofile(tokens_path)
    offsets.tofile(offsets_path)

    def run(recipe):
        out = os.path.join(workdir, f"{os.path.basename(folder)}-{recipe}.bin")
        result = subprocess.run([dump_logits, folder, recipe, tokens_path, offsets_path, out],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return f"dump_logits exited {result.returncode}: {result.stderr.strip()}"
        return torch.from_numpy(np.fromfile(out, dtype="<f4").astype(np.float64))
    return run


def compare_logits(family, config, sequences, references, ours_for, bounds=BOUNDS):
    """Judges ours_for(recipe) (dump_logits_runner's result) against the
    references (reference_logits' result) for every recipe they hold
    (TOLERANCES; bounds: the per-recipe max, mean and plain bounds).
    Returns (table rows, failure messages)."""
    positions = np.concatenate([np.arange(len(s)) for s in sequences])
    early = positions < EARLY_POSITIONS
    plain = references["plain"]
    tokens, vocab = len(positions), config["vocab_size"]
    rows, failures = [], []
    for recipe in [r for r in references if r != "plain"]:
        name = f"{family}/{recipe}"
        ours = ours_for(recipe)
        if isinstance(ours, str):
            failures.append(f"{name}: {ours}")
            continue
        if ours.numel() != tokens * vocab:
            failures.append(f"{name}: {ours.numel()} logits, expected {tokens * vocab}")
            continue
        ours = ours.reshape(tokens, vocab)
        if not torch.isfinite(ours).all():
            failures.append(f"{name}: non-finite logits")
            continue
        emulated, perturbed = references[recipe]
        _, floor_max, floor_mean = errors(perturbed, emulated)
        e_abs, e_rel, e_mean = errors(ours, emulated)
        _, p_rel, p_mean = errors(ours, plain)
        scale = emulated.abs().max().item()
        row_error = ((ours - emulated).abs().amax(dim=1) / scale).numpy()
        exact_early = (row_error[early] <= EXACT).mean()
        top1 = (ours.argmax(dim=1) == plain.argmax(dim=1)).double().mean().item()
        rows.append(dict(family=family, recipe=recipe, scale=scale, e_rel=e_rel, e_mean=e_mean, floor_max=floor_max,
                         floor_mean=floor_mean, exact_early=exact_early, exact_all=(row_error <= EXACT).mean(),
                         p_rel=p_rel, p_mean=p_mean, top1=top1))
        worst_row, worst_col = divmod(int((ours - emulated).abs().argmax()), vocab)
        if not e_rel <= bounds["max"][recipe]:
            failures.append(f"{name}: max error {e_rel:.3g} (abs {e_abs:.3g}, at token {worst_row}, logit "
                            f"{worst_col}) vs the emulated reference exceeds {bounds['max'][recipe]:.3g}")
        if not e_mean <= bounds["mean"][recipe]:
            failures.append(f"{name}: mean error {e_mean:.3g} vs the emulated reference exceeds "
                            f"{bounds['mean'][recipe]:.3g}")
        if not exact_early >= MIN_EXACT_EARLY:
            failures.append(f"{name}: only {exact_early:.0%} of the rows at positions < {EARLY_POSITIONS} match the "
                            f"emulated reference to {EXACT:g} (at least {MIN_EXACT_EARLY:.0%} expected): a rounding "
                            f"point, scale or layer assignment differs")
        if not p_rel <= bounds["plain"][recipe]:
            failures.append(f"{name}: max error {p_rel:.3g} vs the plain float64 reference exceeds "
                            f"{bounds['plain'][recipe]:.3g}")
    return rows, failures


def print_table(rows, bounds=BOUNDS):
    print("Logits of our forward (CPU backend) vs PyTorch float64, errors relative to max |logit|.")
    print("  emulated: float64 + the recipe's BF16/E4M3 rounding points; floor: that reference vs itself with")
    print(f"  FP32-level noise ({NOISE:g}) on the embeddings; exact: rows within {EXACT:g} (positions < "
          f"{EARLY_POSITIONS} / all);")
    print("  plain: float64 without rounding (what the recipe costs); top1: argmax agreement with plain.")
    width = max([8] + [len(r["family"]) for r in rows])
    print(f"{'model':{width}} {'recipe':12} {'max|logit|':>10} | {'emulated max':>12} {'mean':>8} | {'floor max':>9} "
          f"{'mean':>8} | {'exact':>9} | {'plain max':>9} {'mean':>8} {'top1':>6}")
    for r in rows:
        print(f"{r['family']:{width}} {r['recipe']:12} {r['scale']:10.3f} | {r['e_rel']:12.2e} {r['e_mean']:8.1e} | "
              f"{r['floor_max']:9.2e} {r['floor_mean']:8.1e} | {r['exact_early']:4.0%}/{r['exact_all']:3.0%} | "
              f"{r['p_rel']:9.2e} {r['p_mean']:8.1e} {r['top1']:6.1%}")
    top, mean, plain = bounds["max"], bounds["mean"], bounds["plain"]
    print(f"Asserted: emulated max <= {top['bf16']:g} (bf16) / {top['fp8']:g} (fp8 recipes), mean <= "
          f"{mean['bf16']:g} / {mean['fp8']:g}, exact rows at positions < {EARLY_POSITIONS} >= "
          f"{MIN_EXACT_EARLY:.0%}; plain max <= {plain['bf16']:g} / {plain['fp8']:g}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump-logits", required=True, help="path of the fp8rl_dump_logits executable")
    parser.add_argument("--family", default="all", choices=list(FAMILIES) + ["all"])
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    torch.set_num_threads(1)
    families = list(FAMILIES) if args.family == "all" else [args.family]
    all_rows, all_failures = [], []
    with tempfile.TemporaryDirectory(prefix="fp8rl_oracle_torch_") as workdir:
        for family in families:
            seed = args.seed + 10 * list(FAMILIES).index(family)
            rows, failures = run_family(family, args.dump_logits, workdir, seed)
            all_rows += rows
            all_failures += failures
    return report(all_rows, all_failures, print_table)


def run_families(family, run_family, args, prefix, print_rows):
    """Runs run_family(name, args, workdir) for one family or "all", in a temporary folder; returns the exit status."""
    families = list(FAMILIES) if family == "all" else [family]
    all_rows, all_failures = [], []
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        for name in families:
            rows, failures = run_family(name, args, workdir)
            all_rows += rows
            all_failures += failures
    return report(all_rows, all_failures, print_rows)


def report(rows, failures, print_rows):
    """Prints the table and the failures; returns the exit status."""
    print_rows(rows)
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
