#!/usr/bin/env python3
"""The fp8rl command-line program as an MPI job: `mpirun -np 2 fp8rl train`.

usage: cli_mpi_test.py PATH/TO/fp8rl CASE LAUNCHER...   (CASE: train | resume | kill | info | compare)
LAUNCHER is the command that starts a 2-rank job (e.g. mpiexec -n 2 --oversubscribe).
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402  (its TINY configuration, metrics reader and checks)

check, read_metrics = cli_test.check, cli_test.read_metrics
FP8RL, LAUNCHER = None, []
# One thread per rank: two ranks on this machine's two cores.
TINY = [a if a != "2" or i == 0 or cli_test.TINY[i - 1] != "--threads" else "1" for i, a in enumerate(cli_test.TINY)]


def run(args, ranks_launcher=True, expect=0):
    command = (LAUNCHER if ranks_launcher else []) + [FP8RL] + args
    proc = subprocess.run(command, capture_output=True, text=True, timeout=280)
    if proc.returncode != expect:
        sys.exit(f"FAIL: {' '.join(command)}\n  exit {proc.returncode}, expected {expect}\n"
                 f"  stdout: {proc.stdout}\n  stderr: {proc.stderr}")
    return proc


def case_train(tmp):
    out = os.path.join(tmp, "run")
    sft, grpo = 30, 100
    proc = run(["train"] + TINY + ["--sft-steps", str(sft), "--steps", str(grpo), "--eval-every", "20",
                                    "--lr", "3e-4", "--out", out])
    check(proc.stdout.count("val accuracy final") == 1, "rank 0 alone prints the summary:\n" + proc.stdout)
    check("MPI, rank 0 of 2" in proc.stderr, "the run says it is data-parallel:\n" + proc.stderr)
    records = read_metrics(os.path.join(out, "metrics.jsonl"))
    check(len(records) == sft + grpo, f"one metrics line per step, written once: {len(records)} != {sft + grpo}")
    check(all(r["bytes_reduced"] > 0 and r["bytes_gathered"] > 0 for r in records), "collective bytes per step")
    manifest = os.path.join(out, "checkpoints", "state.safetensors")
    shards = [n for n in os.listdir(os.path.dirname(manifest)) if ".rank" in n]
    check(len(shards) == 2, f"each rank wrote its optimizer shard: {shards}")
    check(os.path.exists(os.path.join(out, "model", "model.safetensors")), "rank 0 saved the final policy")
    check(os.path.exists(os.path.join(out, "summary.json")), "rank 0 wrote the summary")
    # The same run in one process: 2 ranks learn as 1 does (the validation
    # accuracy of this tiny task is too noisy to compare; the reward over 10 steps is not).
    alone = os.path.join(tmp, "alone")
    run(["train"] + TINY + ["--sft-steps", str(sft), "--steps", str(grpo), "--eval-every", "20",
                            "--lr", "3e-4", "--out", alone], ranks_launcher=False)
    single = read_metrics(os.path.join(alone, "metrics.jsonl"))
    mean = lambda rs: sum(r["reward_mean"] for r in rs) / len(rs)
    first, last = mean(records[sft:sft + 10]), mean(records[-10:])
    first_1, last_1 = mean(single[sft:sft + 10]), mean(single[-10:])
    print(f"reward over the first and last 10 GRPO steps: 2 ranks {first:.3f} -> {last:.3f}, "
          f"1 rank {first_1:.3f} -> {last_1:.3f}")
    check(last > first + 0.15 and last_1 > first_1 + 0.15, "the reward rises on 2 ranks and on 1")
    check(abs(last - last_1) < 0.15, f"2 ranks end where 1 rank does: {last:.3f} vs {last_1:.3f}")


def case_resume(tmp):
    common = ["train"] + TINY + ["--sft-steps", "4", "--eval-every", "2", "--save-every", "2"]
    whole, split = os.path.join(tmp, "whole"), os.path.join(tmp, "split")
    run(common + ["--steps", "6", "--out", whole])
    run(common + ["--steps", "3", "--out", split])
    proc = run(common + ["--steps", "6", "--out", split, "--resume"])
    check("resuming from GRPO step 3" in proc.stderr, "the resume is announced:\n" + proc.stderr)
    a, b = read_metrics(os.path.join(whole, "metrics.jsonl")), read_metrics(os.path.join(split, "metrics.jsonl"))
    check(len(a) == len(b) == 10, f"10 lines each: {len(a)}, {len(b)}")
    timing = {"tokens_per_second", "generation_seconds", "recompute_seconds", "train_seconds",
              "recalibration_seconds", "recalibration_fraction", "step_seconds", "communication_seconds"}
    for ra, rb in zip(a, b):
        for key in ra:
            if key not in timing:
                check(ra[key] == rb.get(key), f"step {ra['step']} {key}: {ra[key]} != {rb.get(key)}")
    model = lambda d: open(os.path.join(d, "model", "model.safetensors"), "rb").read()
    check(model(whole) == model(split), "the final policies are byte for byte equal")


def kill_processes_naming(text):
    """SIGKILLs every process whose command line contains text, until none has
    been seen for a while (a launcher's daemon may still be starting ranks)."""
    quiet_scans = 0
    while quiet_scans < 5:
        found = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        os.kill(int(pid), signal.SIGKILL)
                        found = True
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass  # gone meanwhile
        quiet_scans = 0 if found else quiet_scans + 1
        time.sleep(0.1)


def case_kill(tmp):
    """A 2-rank run saving every step, SIGKILLed at random moments (mid-save
    often: a save is a good part of each tiny step), always resumes."""
    out = os.path.join(tmp, "run")
    common = ["train"] + TINY + ["--sft-steps", "4", "--steps", "40", "--save-every", "1", "--eval-every", "1000",
                                 "--out", out]
    rng = random.Random(17)
    for attempt in range(5):
        proc = subprocess.Popen(LAUNCHER + [FP8RL] + common + (["--resume"] if attempt else []),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(rng.uniform(0.3, 1.0))
        # The whole job at once, as when its machine goes down: the launcher's
        # process group, and the ranks (Open MPI starts them in their own).
        os.killpg(proc.pid, signal.SIGKILL)
        kill_processes_naming(out)
        _, stderr = proc.communicate()
        check(b"error" not in stderr, f"attempt {attempt} failed before it was killed: {stderr.decode()}")
    proc = run(common + ["--resume"])
    records = read_metrics(os.path.join(out, "metrics.jsonl"))
    check(len(records) == 44, f"the resumed run completes all 4 + 40 steps: {len(records)} lines")
    names = os.listdir(os.path.join(out, "checkpoints"))
    check(len([n for n in names if ".rank" in n]) == 2, f"one complete set remains: {names}")
    check(not any(".tmp." in n for n in names), f"no temporary is left behind: {names}")


def case_info(tmp):
    proc = run(["info"])
    for rank in (0, 1):
        check(f"data-parallel rank {rank} of 2" in proc.stdout, "each rank describes itself:\n" + proc.stdout)
    single = run(["info"], ranks_launcher=False)
    check("data-parallel rank 0 of 1" in single.stdout, single.stdout)


def case_compare(tmp):
    """fp8rl compare as a 2-rank job: each run trains on both ranks; rank 0 alone writes and reports."""
    import json
    out = os.path.join(tmp, "cmp")
    args = ["compare"] + TINY + ["--sft-steps", "4", "--steps", "4", "--eval-every", "2", "--seeds", "0-1",
                                 "--runs", "bf16,fp8-gen:off:stale", "--out", out]
    proc = run(args)
    check(proc.stdout.count("Validation accuracy over seeds") == 1, "one report:\n" + proc.stdout)
    summaries = json.load(open(os.path.join(out, "summaries.json")))
    check([(s["run"], s["seed"]) for s in summaries] ==
          [("bf16:truncated", 0), ("bf16:truncated", 1), ("fp8-gen:off:stale", 0), ("fp8-gen:off:stale", 1)],
          f"every run once: {summaries}")
    for folder in ("bf16-truncated-seed0", "fp8-gen-off-stale-seed1"):
        check(len(read_metrics(os.path.join(out, folder, "metrics.jsonl"))) == 8, f"{folder}: one line per step")
        check(not any(n.endswith(".tmp") for n in os.listdir(os.path.join(out, folder))), "no half-written file")
    proc = run(args)
    check("reusing 4 finished runs of 4" in proc.stderr, "every rank reuses the finished runs:\n" + proc.stderr)
    proc = run(args + ["--jobs", "2"], expect=2)
    check("--jobs trains runs side by side in one process" in proc.stderr, proc.stderr)


def main():
    global FP8RL, LAUNCHER
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    FP8RL, LAUNCHER = os.path.abspath(sys.argv[1]), sys.argv[3:]
    cases = {"train": case_train, "resume": case_resume, "kill": case_kill, "info": case_info,
             "compare": case_compare}
    with tempfile.TemporaryDirectory(prefix="fp8rl_cli_mpi_") as tmp:
        cases[sys.argv[2]](tmp)
    print(f"ok: {sys.argv[2]}")


if __name__ == "__main__":
    main()
