#!/usr/bin/env python3
"""PyTorch baseline of the rollout benchmark (bench_rollout.cpp).

The same model as the benchmark (SmolLM2-135M shapes, random weights) in
plain torch: embedding, RMSNorm, GQA attention with RoPE and a KV cache,
SwiGLU, tied head; greedy sampling. Timed exactly as the benchmark times our
engine: a prefill pass over batch x prompt tokens (ending with the argmax of
the last position's logits), then new_tokens single-token decode steps
(forward + argmax each), each phase timed on its own; the median of
`repeats` runs after one warm-up. Prints one JSON object on stdout.

  torch_rollout_baseline.py --threads N [--dtypes float32[,bfloat16]] [--batches 1,32]
                            [--prompt 128] [--new-tokens 32] [--repeats 3]
"""

import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
except ImportError as error:
    print(json.dumps({"available": False, "reason": str(error)}))
    sys.exit(0)

# The benchmarked shapes, from each model's config.json (random weights; Llama-3.2-1B's
# rope scaling changes no work, so it is left out).
CONFIGS = {
    "smollm2-135m": dict(vocab=49152, hidden=576, layers=30, heads=9, kv_heads=3, head_dim=64, intermediate=1536,
                         rope_theta=100000.0, eps=1e-5),
    "llama-3.2-1b": dict(vocab=128256, hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64,
                         intermediate=8192, rope_theta=500000.0, eps=1e-5),
}
CONFIG = dict(CONFIGS["smollm2-135m"])  # the shape in use; select_model() switches it


def select_model(name):
    """Makes CONFIG (read by this module and by torch_train_baseline.py) the shape of `name`."""
    CONFIG.clear()
    CONFIG.update(CONFIGS[name])


class Model:
    def __init__(self, dtype, seed=7):
        c = CONFIG
        g = torch.Generator().manual_seed(seed)

        def w(*shape):
            return (torch.randn(*shape, generator=g) * 0.02).to(dtype)

        h, q, kv, i = c["hidden"], c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"], c["intermediate"]
        self.dtype = dtype
        self.embed = w(c["vocab"], h)  # tied: also the head
        self.layers = []
        for _ in range(c["layers"]):
            self.layers.append(dict(
                ln1=torch.ones(h, dtype=dtype), ln2=torch.ones(h, dtype=dtype),
                # q, k and v fused into one [q + 2 kv, hidden] matrix, and gate
                # with up: what a tuned PyTorch implementation does.
                qkv=w(q + 2 * kv, h), o=w(h, q), gate_up=w(2 * i, h), down=w(h, i)))
        self.norm = torch.ones(h, dtype=dtype)
        half = c["head_dim"] // 2
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, half, dtype=torch.float32) * 2 / c["head_dim"]))

    def rms_norm(self, x, weight):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + CONFIG["eps"])).to(self.dtype) * weight

    def rope(self, x, positions):
        # x [B, H, T, D]; positions [T]
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        cos, sin = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def new_cache(self, batch, length):
        c = CONFIG
        shape = (c["layers"], batch, c["kv_heads"], length, c["head_dim"])
        return torch.zeros(shape, dtype=self.dtype), torch.zeros(shape, dtype=self.dtype)

    def forward(self, tokens, start, cache):
        """tokens [B, T] at positions start .. start + T - 1 -> next-token ids [B]."""
        c = CONFIG
        b, t = tokens.shape
        heads, kv_heads, d = c["heads"], c["kv_heads"], c["head_dim"]
        group = heads // kv_heads
        k_cache, v_cache = cache
        positions = torch.arange(start, start + t)
        end = start + t
        mask = None
        if t > 1:  # causal over the new tokens (the cache before them is all visible)
            mask = torch.full((t, end), float("-inf"), dtype=self.dtype).triu(start + 1)
        # Activations as 2-D [B * T, features]: torch 1.13's 3-D matmul takes a much slower path.
        x = self.embed[tokens.reshape(-1)]
        for li, layer in enumerate(self.layers):
            h = self.rms_norm(x, layer["ln1"])
            qkv = h @ layer["qkv"].T
            q, k, v = qkv.split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
            q = self.rope(q.view(b, t, heads, d).transpose(1, 2), positions)
            k = self.rope(k.view(b, t, kv_heads, d).transpose(1, 2), positions)
            k_cache[li, :, :, start:end] = k
            v_cache[li, :, :, start:end] = v.view(b, t, kv_heads, d).transpose(1, 2)
            keys = k_cache[li, :, :, :end]  # [B, KV, end, D]
            values = v_cache[li, :, :, :end]
            # GQA without copying K/V: fold the query heads of a group into the rows.
            qg = q.reshape(b, kv_heads, group * t, d)
            scores = (qg @ keys.transpose(-1, -2)) / math.sqrt(d)  # [B, KV, group * T, end]
            if mask is not None:
                scores = scores.view(b, kv_heads, group, t, end) + mask
                scores = scores.view(b, kv_heads, group * t, end)
            probs = torch.softmax(scores.float(), dim=-1).to(self.dtype)
            attn = (probs @ values).view(b, heads, t, d).transpose(1, 2).reshape(b * t, heads * d)
            x = x + attn @ layer["o"].T
            h = self.rms_norm(x, layer["ln2"])
            gate, up = (h @ layer["gate_up"].T).chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(gate) * up) @ layer["down"].T
        last = self.rms_norm(x.view(b, t, -1)[:, -1], self.norm)
        return (last @ self.embed.T).argmax(dim=-1)


def measure(model, batch, prompt, new_tokens, repeats, warmup, seed=11):
    g = torch.Generator().manual_seed(seed)
    prompts = torch.randint(0, CONFIG["vocab"], (batch, prompt), generator=g)
    prefill, decode = [], []
    first = 0 if warmup else 1
    for run in range(first, repeats + 1):  # run 0 warms up
        cache = model.new_cache(batch, prompt + new_tokens)
        t0 = time.perf_counter()
        token = model.forward(prompts, 0, cache)
        t1 = time.perf_counter()
        for step in range(new_tokens):
            token = model.forward(token[:, None], prompt + step, cache)
        t2 = time.perf_counter()
        if run > 0:
            prefill.append(t1 - t0)
            decode.append(t2 - t1)
    return {"prefill_tokens_per_s": batch * prompt / statistics.median(prefill),
            "decode_tokens_per_s": batch * new_tokens / statistics.median(decode)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    # bfloat16 is off by default: Debian's torch 1.13 runs a [1, 576] x [576, 1728]
    # BF16 matmul in ~12 ms (vs 0.4 ms in FP32), i.e. ~1 token/s decode.
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = []
    with torch.inference_mode():
        for name in args.dtypes.split(","):
            model = Model(getattr(torch, name))
            for batch in (int(b) for b in args.batches.split(",")):
                # Batch 1 runs first and warms the allocator and threads up;
                # a warm-up of batch 32 would cost more than the measurement.
                repeats = args.repeats if batch == 1 else max(1, args.repeats - 1)  # as bench_rollout
                r = measure(model, batch, args.prompt, args.new_tokens, repeats, warmup=batch == 1)
                results.append(dict(dtype=name, batch=batch, **r))
                print(f"torch {name} batch {batch}: {r}", file=sys.stderr)
    print(json.dumps({"available": True, "torch_version": torch.__version__, "threads": torch.get_num_threads(),
                      "results": results}))


if __name__ == "__main__":
    main()
