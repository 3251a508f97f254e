#!/usr/bin/env python3
"""The last thing gpu_check.sh prints: each stage's result and the GPU targets
(issue 22), read from the stage logs in the folder given, each target marked
met, missed or not measured.

  gpu_check_summary.py OUT_DIR STAGES_TSV
"""

import json
import os
import re
import sys


def read(folder, name):
    path = os.path.join(folder, name)
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def ctest_counts(log):
    """(passed, total, names of the tests that failed or were skipped) from a ctest log, or None."""
    found = re.findall(r"\d+% tests passed(?:, \d+ tests? failed)? out of (\d+)", log)
    if not found:
        return None
    passed = len(re.findall(r"Test\s+#\d+: .*\s+Passed\s+[\d.]+ sec", log))
    names = re.findall(r"^\s*\d+ - (\S.*?) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Skipped|Not Run)",
                       log, re.M)
    return passed, int(found[-1]), names


def test_passed(log, fragment):
    """True/False when the test whose name holds `fragment` ran, else None."""
    for line in log.splitlines():
        if fragment in line and re.search(r"Test\s+#\d+:", line):
            return None if re.search(r"Skipped|Not Run", line) else "Passed" in line
    return None


def sanitizer_counts(log):
    errors = re.findall(r"ERROR SUMMARY: (\d+) error", log)
    hazards = re.findall(r"RACECHECK SUMMARY: (\d+) hazard", log)
    return (sum(map(int, errors)) if errors else None), (sum(map(int, hazards)) if hazards else None)


def gemm_row(log, name):
    """(bf16, fp8, ratio) TFLOP/s of the GEMM table's row `name`."""
    m = re.search(r"^\| " + re.escape(name) + r" \|[^|]*\|[^|]*\|[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", log, re.M)
    return tuple(float(x) for x in m.groups()) if m else None


def rl_rows(log):
    """recipe -> dict of our RL-step table's columns (seconds; share in %)."""
    rows = {}
    pattern = r"^(BF16|FP8|FP8\+KV\+attn)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%"
    for m in re.finditer(pattern, log, re.M):
        keys = ("generation", "recompute", "train", "recalibration", "total", "share")
        rows[m.group(1)] = dict(zip(keys, (float(x) for x in m.groups()[1:])))
    return rows


def torch_rl(log):
    for line in reversed(log.splitlines()):
        if '"torch_rl_step"' in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def training_tokens_per_second(log, name):
    m = re.search(r"^" + re.escape(name) + r"\s+([\d.]+)\s", log, re.M)
    return float(m.group(1)) if m else None


def listed(names, most=4):
    """The first `most` names, and how many more."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return "; not passed: " + ", ".join(names[:most]) + more if names else ""


def verdict(value, ok):
    if value is None:
        return "not measured"
    return "met" if ok(value) else "MISSED"


def main():
    folder, stages = sys.argv[1], sys.argv[2]
    print("\n## gpu-check stages\n")
    print("| stage | result | seconds |\n| --- | --- | ---: |")
    for line in read(os.path.dirname(stages), os.path.basename(stages)).splitlines():
        name, result, seconds = line.split("\t")
        print(f"| {name} | {result} | {seconds} |")

    unit = ctest_counts(read(folder, "a_unit_tests.log"))
    policy_log = read(folder, "c_policy_tests.log")
    policy = ctest_counts(policy_log)
    memcheck, _ = sanitizer_counts(read(folder, "b_sanitizer.log"))
    _, racecheck = sanitizer_counts(read(folder, "b_sanitizer.log"))
    bitwise = test_passed(policy_log, "training log-probs equal rollout log-probs bit for bit")
    gemm = gemm_row(read(folder, "d_gemm.log"), "square 8192")
    rl_log = read(folder, "e_rl_step.log")
    ours = rl_rows(rl_log)
    theirs = torch_rl(rl_log)

    rows = []
    if unit:
        rows.append(("GPU unit tests pass", f"{unit[0]}/{unit[1]}" + listed(unit[2]),
                     verdict(unit, lambda u: u[0] == u[1])))
    else:
        rows.append(("GPU unit tests pass", "-", "not measured"))
    if policy:
        rows.append(("whole-policy GPU tests pass",
                     f"{policy[0]}/{policy[1]}" + listed(policy[2]),
                     verdict(policy, lambda p: p[0] == p[1])))
    else:
        rows.append(("whole-policy GPU tests pass", "-", "not measured"))
    rows.append(("no memcheck error", "-" if memcheck is None else f"{memcheck} errors", verdict(memcheck, lambda n: n == 0)))
    rows.append(("no racecheck hazard", "-" if racecheck is None else f"{racecheck} hazards",
                 verdict(racecheck, lambda n: n == 0)))
    rows.append(("token_mult_prob_error == 1 on the GPU (one recipe)",
                 {True: "1 (bitwise test passed)", False: "test failed: see c_policy_tests.log", None: "-"}[bitwise],
                 verdict(bitwise, lambda b: b)))
    rows.append(("FP8 GEMM >= 1.6x BF16 at 8192^3",
                 "-" if gemm is None else f"{gemm[1]:.0f} vs {gemm[0]:.0f} TFLOP/s = {gemm[2]:.2f}x",
                 verdict(gemm, lambda g: g[2] >= 1.6)))
    bf16, full = ours.get("BF16"), ours.get("FP8+KV+attn")
    speedup = bf16["total"] / full["total"] if bf16 and full and full["total"] > 0 else None
    rows.append(("FP8+KV+attn RL step >= 1.5x our BF16 step",
                 "-" if speedup is None else f"{bf16['total']:.2f} s / {full['total']:.2f} s = {speedup:.2f}x",
                 verdict(speedup, lambda s: s >= 1.5)))
    shares = {name: row["share"] for name, row in ours.items()}
    rows.append(("recalibration <= 1% of the step",
                 ", ".join(f"{n} {s:.1f}%" for n, s in shares.items()) or "-",
                 verdict(shares or None, lambda s: max(s.values()) <= 1.0)))
    versus = theirs["total_seconds"] / bf16["total"] if bf16 and theirs and bf16["total"] > 0 else None
    rows.append(("our BF16 RL step faster than PyTorch BF16",
                 "-" if versus is None else
                 f"PyTorch {theirs['total_seconds']:.2f} s / ours {bf16['total']:.2f} s = {versus:.2f}x",
                 verdict(versus, lambda v: v > 1.0)))
    ours_tps = training_tokens_per_second(rl_log, "ours BF16")
    torch_tps = training_tokens_per_second(rl_log, "PyTorch bf16_autocast")
    if ours_tps and torch_tps:
        rows.append(("(training tokens/s, ours BF16 vs PyTorch bf16 autocast)",
                     f"{ours_tps:.0f} vs {torch_tps:.0f} = {ours_tps / torch_tps:.2f}x", "for information"))

    print("\n## GPU targets (issue 22)\n")
    print("| target | measured | |\n| --- | --- | --- |")
    for target, measured, mark in rows:
        print(f"| {target} | {measured} | {mark} |")
    if ours:
        print("\nour RL step (s): " + "; ".join(
            f"{n}: gen {r['generation']:.2f}, recompute {r['recompute']:.2f}, train {r['train']:.2f}, "
            f"recal {r['recalibration']:.2f}, total {r['total']:.2f}" for n, r in ours.items()))
    if theirs:
        s = theirs["seconds"]
        print(f"PyTorch RL step (s): gen {s['generation']:.2f}, train {s['train']:.2f}, sync {s['sync']:.2f}, "
              f"total {theirs['total_seconds']:.2f} (torch {theirs['torch_version']}, "
              f"transformers {theirs['transformers_version']})")


if __name__ == "__main__":
    main()
