#!/usr/bin/env python3
"""Where the device time of one fp8rl RL step goes, kernel by kernel.

Drives fp8rl through its Python binding (FP8RL_LIBRARY: the CUDA build's
libfp8rl.so) on the same RL step as fp8rl_bench_train's stage e (Llama-3.2-1B
shapes, 32 prompts x 128 tokens, 128 new tokens), and records every kernel
and copy in the process with PyTorch's profiler (CUPTI sees the kernels of
any library sharing the device's primary context). For generation and for
the training step separately: wall seconds, the sum of device (kernel +
copy) time, their ratio (how busy the GPU was), and the kernels with the most
device time.

  profile_rl_step.py [--recipe bf16|fp8|fp8_full] [--rows 15]
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
import fp8rl  # noqa: E402

LLAMA_3_2_1B = fp8rl.ModelConfig(vocab_size=128256, hidden_size=2048, num_layers=16, num_attention_heads=32,
                                 num_key_value_heads=8, intermediate_size=8192, max_position_embeddings=131072,
                                 head_dim=64, rope_theta=500000.0, tie_word_embeddings=True)
RECIPES = {"bf16": fp8rl.Recipe.bf16, "fp8": fp8rl.Recipe.fp8, "fp8_full": fp8rl.Recipe.fp8_full}


def device_time_us(event):
    """Self device time of a profiler row, across torch's renames (cuda_* -> device_*)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(event, name):
            return getattr(event, name)
    return 0.0


def report(phase, wall, prof, rows):
    events = [e for e in prof.key_averages() if device_time_us(e) > 0]
    events.sort(key=device_time_us, reverse=True)
    busy = sum(device_time_us(e) for e in events) / 1e6
    print(f"\n### {phase}: wall {wall:.3f} s, device busy {busy:.3f} s ({100 * busy / wall:.0f}% of the wall)")
    print("| kernel or copy | calls | device ms | share of busy |\n| --- | ---: | ---: | ---: |")
    for e in events[:rows]:
        ms = device_time_us(e) / 1e3
        print(f"| {e.key[:90]} | {e.count} | {ms:.1f} | {100 * ms / 1e3 / busy:.1f}% |")


def timed(prof_phase, fn):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        began = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - began
    return result, wall, prof


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipe", default="bf16", choices=sorted(RECIPES))
    parser.add_argument("--rows", type=int, default=15)
    args = parser.parse_args()
    torch.cuda.init()
    context = fp8rl.Context(backend=fp8rl.Backend.CUDA)
    policy = fp8rl.Policy.random(LLAMA_3_2_1B, seed=7, recipe=RECIPES[args.recipe](), context=context)
    policy.start_training(loss=fp8rl.LossConfig(), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-4),
                          micro_batch_tokens=4096)
    prompts = np.random.default_rng(13).integers(0, LLAMA_3_2_1B.vocab_size, size=(32, 128), dtype=np.int32)
    sampling = fp8rl.SamplingParams(max_new_tokens=128, stop_at_eos=False)
    advantages = [1.0 if i % 2 == 0 else -1.0 for i in range(32)]
    print(f"## {args.recipe}: {context.description}")
    for warm in (True, False):  # the first step builds plans and workspaces
        rollouts, gen_wall, gen_prof = timed("generation", lambda: policy.generate(prompts, sampling))
        metrics, train_wall, train_prof = timed("train", lambda: policy.train_step(rollouts, advantages=advantages))
    report("generation", gen_wall, gen_prof, args.rows)
    report("training step (forward, backward, AdamW, recalibration)", train_wall, train_prof, args.rows)
    print(f"\nthe step's own seconds: {', '.join(f'{k} {v:.3f}' for k, v in metrics.items() if 'seconds' in k)}")


if __name__ == "__main__":
    main()
