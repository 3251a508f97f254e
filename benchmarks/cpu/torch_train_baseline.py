#!/usr/bin/env python3
"""PyTorch baseline of the training benchmark (bench_train.cpp).

The same model as the benchmark (SmolLM2-135M or Llama-3.2-1B shapes, random weights) in
plain torch, written out: embedding, RMSNorm, RoPE, GQA causal attention
(torch's scaled_dot_product_attention when the installed torch has it, a
manual softmax otherwise), SwiGLU MLP, tied head. One training step is what
our Trainer times as "train": forward over all but each sequence's last
token, the head only on the completion positions, loss = token-mean
cross-entropy of the completion tokens, backward, global gradient-norm
clipping at 1.0 and a torch.optim.AdamW step. Timed per step; the median of
`steps` steps after one warm-up step. Prints one JSON object on stdout.

  torch_train_baseline.py --threads N [--modes float32,bf16_autocast] [--sequences 4]
                          [--prompt 32] [--completion 96] [--steps 5]
                          [--device cpu|cuda] [--model smollm2-135m|llama-3.2-1b]

Modes: float32 (FP32 weights and math); bf16_autocast (FP32 master weights,
matmuls under torch.autocast(device, dtype=torch.bfloat16): mixed precision as
a PyTorch user trains in BF16). On CUDA each step ends with a synchronize.
"""

import argparse
import contextlib
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:
    print(json.dumps({"available": False, "reason": str(error)}))
    sys.exit(0)

from torch_rollout_baseline import CONFIG, CONFIGS, select_model  # noqa: E402  (the rollout baseline's shapes)

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


class RMSNorm(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(size))

    def forward(self, x):
        # In FP32 whatever autocast does around it, as the HF Llama does.
        x32 = x.float()
        return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + CONFIG["eps"]) * self.weight


class Layer(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        c = CONFIG
        h, q, kv, i = c["hidden"], c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"], c["intermediate"]
        self.ln1, self.ln2 = RMSNorm(h), RMSNorm(h)
        # q, k and v fused into one [q + 2 kv, hidden] matrix, and gate with
        # up: what a tuned PyTorch implementation does (same arithmetic).
        self.qkv = torch.nn.Parameter(w(q + 2 * kv, h))
        self.o = torch.nn.Parameter(w(h, q))
        self.gate_up = torch.nn.Parameter(w(2 * i, h))
        self.down = torch.nn.Parameter(w(h, i))

    def attention(self, x, b, t, cos, sin, mask):
        """x [B * T, hidden] -> [B * T, heads * head_dim]."""
        c = CONFIG
        heads, kv_heads, d = c["heads"], c["kv_heads"], c["head_dim"]
        group = heads // kv_heads
        q, k, v = F.linear(x, self.qkv).split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
        q = rope(q.view(b, t, heads, d).transpose(1, 2), cos, sin)  # [B, H, T, D]
        k = rope(k.view(b, t, kv_heads, d).transpose(1, 2), cos, sin)  # [B, KV, T, D]
        v = v.view(b, t, kv_heads, d).transpose(1, 2)  # [B, KV, T, D]
        if HAS_SDPA:
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, H, T, D]
        else:
            # GQA without copying K/V: fold a group's query heads into the rows.
            qg = q.reshape(b, kv_heads, group * t, d)
            scores = (qg @ k.transpose(-1, -2)) / math.sqrt(d)  # [B, KV, group * T, T]
            scores = scores.view(b, kv_heads, group, t, t) + mask
            probs = torch.softmax(scores.float(), dim=-1).to(v.dtype).view(b, kv_heads, group * t, t)
            out = (probs @ v).view(b, heads, t, d)
        return out.transpose(1, 2).reshape(b * t, heads * d)

    def forward(self, x, b, t, cos, sin, mask):
        """x [B * T, hidden] residual stream (2-D: torch 1.13's 3-D matmul takes a slower path)."""
        x = x + F.linear(self.attention(self.ln1(x), b, t, cos, sin, mask), self.o)
        gate, up = F.linear(self.ln2(x), self.gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, self.down)


def rope(x, cos, sin):
    """x [B, H, T, D]; cos, sin [T, D / 2] (rotate-half form, as HF Llama)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Model(torch.nn.Module):
    def __init__(self, seed=7):
        super().__init__()
        c = CONFIG
        g = torch.Generator().manual_seed(seed)

        def w(*shape):
            return torch.randn(*shape, generator=g) * 0.02

        self.embed = torch.nn.Parameter(w(c["vocab"], c["hidden"]))  # tied: also the head
        self.layers = torch.nn.ModuleList(Layer(w) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        half = c["head_dim"] // 2
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, half, dtype=torch.float32) * 2 / c["head_dim"]))

    def loss(self, inputs, targets, head_rows):
        """inputs [B, T] tokens; head_rows [N] flat indices into B * T of the
        completion positions; targets [N] the tokens they predict."""
        b, t = inputs.shape
        device = inputs.device
        freqs = torch.arange(t, dtype=torch.float32, device=device)[:, None] * self.inv_freq.to(device)[None, :]
        cos, sin = freqs.cos(), freqs.sin()  # [T, D / 2]
        mask = torch.full((t, t), float("-inf"), device=device).triu(1)  # causal, for the manual attention
        x = self.embed[inputs.reshape(-1)]  # [B * T, hidden]
        for layer in self.layers:
            x = layer(x, b, t, cos, sin, mask)
        h = self.norm(x.index_select(0, head_rows))  # [N, hidden]
        logits = F.linear(h, self.embed)  # [N, vocab]
        return F.cross_entropy(logits.float(), targets)  # token mean


def make_batch(sequences, prompt, completion, seed=11):
    """Random tokens; the training forward runs all but each sequence's last token."""
    g = torch.Generator().manual_seed(seed)
    length = prompt + completion
    tokens = torch.randint(0, CONFIG["vocab"], (sequences, length), generator=g)
    inputs, t = tokens[:, :-1], length - 1
    # Position p predicts token p + 1: the completion tokens are predicted from p >= prompt - 1.
    positions = torch.arange(prompt - 1, t)
    head_rows = (torch.arange(sequences)[:, None] * t + positions[None, :]).reshape(-1)
    targets = tokens[:, prompt:].reshape(-1)
    return inputs.contiguous(), targets, head_rows


def measure(mode, sequences, prompt, completion, steps, device):
    torch.manual_seed(0)
    model = Model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.01)
    inputs, targets, head_rows = (x.to(device) for x in make_batch(sequences, prompt, completion))
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if mode == "bf16_autocast"
                else contextlib.nullcontext())
    # CUDA work is asynchronous: a step ends when the device is done.
    finish = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = []
    for step in range(steps + 1):  # step 0 warms up
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model.loss(inputs, targets, head_rows)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        finish()
        elapsed = time.perf_counter() - start
        print(f"torch {mode} step {step}: {elapsed:.3f} s, loss {loss.item():.4f}", file=sys.stderr)
        if step > 0:
            times.append(elapsed)
    trained = inputs.numel()  # tokens through forward and backward, as the Trainer counts them
    return {"mode": mode, "tokens_per_s": trained / statistics.median(times), "seconds": statistics.median(times)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--modes", default="float32,bf16_autocast")
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--completion", type=int, default=96)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--model", default="smollm2-135m", choices=sorted(CONFIGS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    select_model(args.model)
    device = torch.device(args.device)
    results = []
    for mode in args.modes.split(","):
        try:
            results.append(measure(mode, args.sequences, args.prompt, args.completion, args.steps, device))
        except RuntimeError as error:  # e.g. an op without a BF16 CPU kernel in this torch
            print(f"torch {mode}: failed: {error}", file=sys.stderr)
            results.append({"mode": mode, "error": str(error).splitlines()[0]})
    print(json.dumps({"available": True, "torch_version": torch.__version__, "threads": torch.get_num_threads(),
                      "device": str(device), "model": args.model,
                      "attention": "scaled_dot_product_attention" if HAS_SDPA else "manual softmax",
                      "results": results}))


if __name__ == "__main__":
    main()
