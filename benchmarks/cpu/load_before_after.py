#!/usr/bin/env python3
"""Checkpoint load time before and after the pread reader (issue 16).

Saves a random policy of SmolLM2-135M's shape (BF16, one model.safetensors of
~270 MB) once, then times fp8rl_policy_load with two builds of libfp8rl.so:
BEFORE (the memory-mapped reader) and AFTER (pread into the destination,
with the regular-file and size checks). Each build runs in its own Python
process (the binding loads the library named by FP8RL_LIBRARY); rounds
alternate between the builds so that both see the same page-cache state
(warm: the file was just written), and medians are compared. The floor is a
plain read of the file's bytes in the same process, for scale.

  load_before_after.py BEFORE_LIB AFTER_LIB [--rounds N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

BINDING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python")

# Saves (first argument "save") or loads N times and prints one duration per line.
WORKER = r"""
import sys, time
import fp8rl
mode, folder = sys.argv[1], sys.argv[2]
if mode == "save":
    config = fp8rl.ModelConfig(vocab_size=49152, hidden_size=576, num_layers=30, num_attention_heads=9,
                               num_key_value_heads=3, intermediate_size=1536, max_position_embeddings=8192,
                               tie_word_embeddings=True)
    fp8rl.Policy.random(config, seed=1).save(folder)
else:
    for _ in range(int(sys.argv[3])):
        start = time.perf_counter()
        policy = fp8rl.Policy.load(folder)
        print(time.perf_counter() - start, flush=True)
        del policy
"""


def worker(library, *args):
    env = dict(os.environ, FP8RL_LIBRARY=library, PYTHONPATH=BINDING)
    out = subprocess.run([sys.executable, "-c", WORKER, *args], env=env, check=True, capture_output=True, text=True)
    return [float(line) for line in out.stdout.split()]


def read_floor(folder, repeats=3):
    import time
    path = os.path.join(folder, "model.safetensors")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        worker(args.after, "save", folder)
        size = os.path.getsize(os.path.join(folder, "model.safetensors"))
        times = {"before": [], "after": []}
        for _ in range(args.rounds):
            for name in ("before", "after"):
                times[name] += worker(getattr(args, name), "load", folder, "1")
        floor = read_floor(folder)
    before, after = statistics.median(times["before"]), statistics.median(times["after"])
    print(f"SmolLM2-135M-shaped BF16 checkpoint, {size / 1e6:.0f} MB, warm page cache, {args.rounds} rounds each")
    print(f"{'build':<28}{'median load (s)':>16}{'min':>10}{'max':>10}")
    for name, label in (("before", "before (mmap)"), ("after", "after (pread + checks)")):
        print(f"{label:<28}{statistics.median(times[name]):>16.3f}{min(times[name]):>10.3f}{max(times[name]):>10.3f}")
    print(f"{'read() of the file (floor)':<28}{floor:>16.3f}")
    print(f"after / before: {after / before:.3f}")


if __name__ == "__main__":
    main()
