#!/usr/bin/env python3
"""The RL step before and after the training iteration was rebuilt (issue 15).

Runs two builds of fp8rl_bench_train with the same arguments on this machine,
one after the other: BEFORE, built from the last commit with the old trainer
(a separate logp_old recompute pass and the optimizer on the host), and AFTER,
this tree's. Prints both RL-step tables and, per recipe, after/before ratios
of the step's parts, and the training tokens/s of each build.

  rl_step_before_after.py BEFORE_BENCH AFTER_BENCH [bench_train arguments ...]
"""
import re
import subprocess
import sys

COLUMNS = ("generation", "recompute", "train", "recalibration", "total", "recal share")


def run(bench, args):
    out = subprocess.run([bench, "--no-torch"] + args, capture_output=True, text=True, check=True).stdout
    steps, throughput = {}, {}
    for line in out.splitlines():
        m = re.match(r"^(BF16|FP8\+KV\+attn|FP8)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%", line)
        if m:
            steps[m.group(1)] = [float(v) for v in m.groups()[1:]]
        m = re.match(r"^ours (BF16|FP8)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            throughput[m.group(1)] = float(m.group(2))
    return out, steps, throughput


def main():
    before, after, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    out_before, steps_before, tps_before = run(before, args)
    out_after, steps_after, tps_after = run(after, args)
    print("== before (separate logp_old recompute, optimizer on the host)\n" + out_before)
    print("== after (no recompute pass with one mini-batch, optimizer and recalibration on the backend)\n" + out_after)
    print("RL step, after / before (seconds; recal share in points)")
    print(f"{'recipe':<14}" + "".join(f"{c:>16}" for c in COLUMNS))
    for recipe, b in steps_before.items():
        a = steps_after.get(recipe)
        if a is None:
            continue
        cells = []
        for i, name in enumerate(COLUMNS):
            if name == "recal share":
                cells.append(f"{b[i]:.1f}% -> {a[i]:.1f}%")
            else:
                cells.append(f"{a[i]:.2f}/{b[i]:.2f}" + (f" {a[i] / b[i]:.2f}x" if b[i] > 0 else ""))
        print(f"{recipe:<14}" + "".join(f"{c:>16}" for c in cells))
    for recipe, b in tps_before.items():
        if recipe in tps_after:
            print(f"training tokens/s {recipe}: before {b:.1f}, after {tps_after[recipe]:.1f} "
                  f"({tps_after[recipe] / b:.2f}x)")


if __name__ == "__main__":
    main()
