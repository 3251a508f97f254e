#!/usr/bin/env python3
"""End-to-end tests of the fp8rl command-line program.

usage: cli_test.py PATH/TO/fp8rl CASE
       (CASE: train | resume | errors | commands | compare | compare_statistics | compare_shared_sft | sft_recipe | minibatches | plan | moe |
              text_train | text_generate | text_eval | text_errors | all)
Each case runs the program in a fresh temporary folder and exits non-zero on failure.
The moe and text cases also write an HF folder through the Python binding (fp8rl on
PYTHONPATH, the library in FP8RL_LIBRARY, as tests/cli/CMakeLists.txt sets); the text
cases train its tokenizer with Hugging Face `tokenizers` (examples/text_demo/make_demo.py).
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

FP8RL = None

# A tiny, fast configuration: reverse of up to 3 letters from a 3-letter alphabet.
TINY = ["--task", "reverse", "--length", "3", "--letters", "3", "--layers", "2", "--hidden", "64",
        "--heads", "4", "--kv-heads", "2", "--intermediate", "128", "--threads", "2", "--val-size", "40",
        "--prompts-per-step", "16",
        "--quiet"]


def run(args, expect=0):
    proc = subprocess.run([FP8RL] + args, capture_output=True, text=True, timeout=600)
    if proc.returncode != expect:
        sys.exit(f"FAIL: fp8rl {' '.join(args)}\n  exit {proc.returncode}, expected {expect}\n"
                 f"  stdout: {proc.stdout}\n  stderr: {proc.stderr}")
    return proc


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def read_metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def case_train(tmp):
    out = os.path.join(tmp, "run")
    sft, grpo = 30, 100
    # Seed 1: under the VDPBF16PS GEMM order seed 0's run reached 0.4 validation
    # accuracy after SFT and ended at 0.075 while its reward still rose (0.22 ->
    # 0.63); seeds 1-4 all rose (0.15 -> 0.53, 0.03 -> 0.15, 0.03 -> 0.23, 0 -> 0.15).
    proc = run(["train"] + TINY + ["--sft-steps", str(sft), "--steps", str(grpo), "--eval-every", "20",
                                    "--lr", "3e-4", "--seed", "1", "--out", out])
    check("val accuracy final" in proc.stdout, "the summary is printed:\n" + proc.stdout)
    records = read_metrics(os.path.join(out, "metrics.jsonl"))
    check(len(records) == sft + grpo, f"one metrics line per step: {len(records)} != {sft + grpo}")
    for r in records:
        for key, value in r.items():
            if isinstance(value, float) or isinstance(value, int):
                check(math.isfinite(value), f"finite {key} in {r}")
        for key in ("loss", "grad_norm", "entropy", "token_mult_prob_error", "gen_kl_error", "tokens_per_second"):
            check(key in r, f"{key} in every line")
    check([r["phase"] for r in records] == ["sft"] * sft + ["grpo"] * grpo, "phases in order")
    check(records[-1]["token_mult_prob_error"] >= 1.0, "fp8-gen reports a mismatch")
    summary = json.load(open(os.path.join(out, "summary.json")))
    check(os.path.exists(os.path.join(out, "checkpoints", "state.safetensors")), "a checkpoint is saved")
    # Learning: the mean reward of the last GRPO steps clearly exceeds that of the first ones.
    first = sum(r["reward_mean"] for r in records[sft:sft + 10]) / 10
    last = sum(r["reward_mean"] for r in records[-10:]) / 10
    print(f"reward first 10 steps {first:.3f}, last 10 {last:.3f}; val {summary['sft_end_val_acc']:.3f} -> "
          f"{summary['final_val_acc']:.3f}")
    check(last > first + 0.15, f"reward rises: first {first:.3f}, last {last:.3f}")
    check(summary["final_val_acc"] > summary["sft_end_val_acc"], "validation accuracy rises")


def case_resume(tmp):
    resume_matches_whole(os.path.join(tmp, "fresh"), [])
    # A stale generator resumes with the scales it began GRPO with, kept in the run folder.
    resume_matches_whole(os.path.join(tmp, "stale"), ["--recipe", "fp8-gen", "--stale-scales", "1"])
    # One policy with stale scales learns with them too: its final scales are those SFT ended with.
    frozen = ["--recipe", "fp8-kv", "--stale-scales", "1"]
    resume_matches_whole(os.path.join(tmp, "frozen"), frozen)
    sft_only = os.path.join(tmp, "sft_only")
    run(["train"] + TINY + frozen + ["--sft-steps", "4", "--eval-every", "2", "--steps", "0", "--out", sft_only])
    scales = lambda d: json.load(open(os.path.join(d, "model", "attention_scales.json")))
    began, ended = scales(sft_only), scales(os.path.join(tmp, "frozen", "whole"))
    check(ended == began, f"the scales GRPO began with: {began} -> {ended}")
    moving = os.path.join(tmp, "moving")
    run(["train"] + TINY + frozen[:2] + ["--sft-steps", "4", "--eval-every", "2", "--steps", "6", "--out", moving])
    check(scales(moving) != began, f"recalibrated, they move: {began} -> {scales(moving)}")


def resume_matches_whole(tmp, extra):
    """A run stopped at GRPO step 3 and resumed ends exactly as the same run made in one go."""
    common = ["train"] + TINY + extra + ["--sft-steps", "4", "--eval-every", "2", "--save-every", "2"]
    whole, split = os.path.join(tmp, "whole"), os.path.join(tmp, "split")
    run(common + ["--steps", "6", "--out", whole])
    run(common + ["--steps", "3", "--out", split])
    proc = run(common + ["--steps", "6", "--out", split, "--resume"])
    check("resuming from GRPO step 3" in proc.stderr, "the resume is announced:\n" + proc.stderr)
    a, b = read_metrics(os.path.join(whole, "metrics.jsonl")), read_metrics(os.path.join(split, "metrics.jsonl"))
    check(len(a) == len(b) == 10, f"10 lines each: {len(a)}, {len(b)}")
    timing = {"tokens_per_second", "generation_seconds", "recompute_seconds", "train_seconds",
              "recalibration_seconds", "recalibration_fraction", "step_seconds"}
    for ra, rb in zip(a, b):
        for key in ra:
            if key not in timing:
                check(ra[key] == rb.get(key), f"step {ra['step']} {key}: {ra[key]} != {rb.get(key)}")
    state = lambda d: open(os.path.join(d, "checkpoints", "state.safetensors"), "rb").read()
    check(state(whole) == state(split), "the final states are byte for byte equal")


def case_sft_recipe(tmp):
    """--sft-recipe bf16: an FP8 run's SFT steps are the BF16 run's, bit for bit; GRPO then runs in FP8."""
    common = ["train"] + TINY + ["--sft-steps", "6", "--steps", "3", "--eval-every", "3", "--seed", "3"]
    bf16, fp8 = os.path.join(tmp, "bf16"), os.path.join(tmp, "fp8")
    run(common + ["--recipe", "bf16", "--out", bf16])
    run(common + ["--recipe", "fp8", "--sft-recipe", "bf16", "--out", fp8])
    a, b = (read_metrics(os.path.join(d, "metrics.jsonl")) for d in (bf16, fp8))
    for ra, rb in zip(a[:5], b[:5]):  # the SFT steps before the last, which validates in the run's recipe
        check(ra["phase"] == rb["phase"] == "sft" and ra["loss"] == rb["loss"] and ra["grad_norm"] == rb["grad_norm"],
              f"SFT step {ra['step']} alike: {ra} {rb}")
    check(a[5]["loss"] == b[5]["loss"], "the last SFT step alike too")
    # (GRPO's first loss depends on the rewards alone: the ratio starts at 1 in any recipe.)
    check(all(ra["entropy"] != rb["entropy"] for ra, rb in zip(a[6:], b[6:])), "GRPO runs in each run's own recipe")
    summary = json.load(open(os.path.join(fp8, "summary.json")))
    check(summary["sft_recipe"] == "bf16" and summary["recipe"] == "fp8", f"the summary says so: {summary}")
    p = run(common + ["--recipe", "fp8", "--sft-recipe", "fp4"], expect=2)
    check("--sft-recipe" in p.stderr, p.stderr)


def case_minibatches(tmp):
    out = os.path.join(tmp, "ppo")
    run(["train"] + TINY + ["--sft-steps", "4", "--steps", "4", "--minibatches", "4", "--lr", "3e-3", "--out", out])
    records = [r for r in read_metrics(os.path.join(out, "metrics.jsonl")) if r["phase"] == "grpo"]
    check(len(records) == 4, f"one line per GRPO iteration: {len(records)}")
    # From the second mini-batch on the policy moves away from the rollout's (where there was a gradient, or
    # Adam's momentum from an earlier one).
    check(any(r["old_policy_kl"] > 0 and r["ratio_max"] > 1 for r in records), f"the policy moves: {records}")
    check(all(r["old_policy_kl"] >= 0 for r in records), f"a KL is never negative: {records}")
    p = run(["train"] + TINY + ["--minibatches", "4000"], expect=2)
    check("--minibatches must be at most" in p.stderr, p.stderr)


def case_errors(tmp):
    p = run(["train", "--no-such-flag"], expect=2)
    check("unknown option '--no-such-flag'" in p.stderr and "usage: fp8rl train" in p.stderr, p.stderr)
    p = run(["train", "--steps", "many"], expect=2)
    check("'--steps' needs an integer" in p.stderr, p.stderr)
    p = run(["train", "--recipe", "fp4"], expect=2)
    check("must be one of bf16|fp8|fp8-kv|fp8-gen" in p.stderr, p.stderr)
    p = run(["train", "--lr"], expect=2)
    check("needs a value" in p.stderr, p.stderr)
    p = run(["export-fp8", "--out", tmp], expect=2)
    check("missing required option '--model'" in p.stderr, p.stderr)
    p = run(["frobnicate"], expect=2)
    check("unknown command 'frobnicate'" in p.stderr, p.stderr)
    run([], expect=2)
    missing = os.path.join(tmp, "no-such-model")
    p = run(["generate", "--model", missing, "--prompt-ids", "1,2,3"], expect=1)
    check("fp8rl_policy_load failed" in p.stderr and "no-such-model" in p.stderr, p.stderr)
    p = run(["generate", "--task", "addition", "--prompt", "1+X="], expect=2)
    check("'X' is not in the vocabulary" in p.stderr, p.stderr)


def case_commands(tmp):
    out = os.path.join(tmp, "run")
    run(["train"] + TINY + ["--sft-steps", "20", "--steps", "2", "--out", out])
    model = os.path.join(out, "model")
    check(os.path.exists(os.path.join(model, "config.json")), "train writes the final policy as an HF folder")
    p = run(["generate", "--model", model, "--task", "reverse", "--prompt", "abc|", "--prompt", "ba|",
             "--temperature", "0", "--max-new-tokens", "6"])
    check(p.stdout.count("text:") == 2 and "logprobs:" in p.stdout, p.stdout)
    p = run(["generate", "--checkpoint", os.path.join(out, "checkpoints", "state.safetensors"), "--layers", "2",
             "--hidden", "64", "--intermediate", "128", "--prompt-ids", "1,16,17,15", "--top-k", "5"])
    check("tokens:" in p.stdout, p.stdout)
    fp8 = os.path.join(tmp, "fp8")
    run(["export-fp8", "--model", model, "--out", fp8])
    config = json.load(open(os.path.join(fp8, "config.json")))
    check(config["quantization_config"]["quant_method"] == "fp8", "an FP8 config")
    p = run(["info", "--model", model, "--recipe", "fp8-kv", "--trainer"])
    for text in ("parameters", "compute weights", "optimizer state", "version", "backend"):
        check(text in p.stdout, f"info shows {text}:\n{p.stdout}")
    total, active = parameter_counts(p.stdout)
    check(total == active, f"a dense HF folder computes with all of its weights:\n{p.stdout}")
    run(["info"])
    run(["train", "--help"])


def table_rows(markdown, header_start):
    """The data rows of the markdown table whose header row starts with header_start, as lists of cells."""
    lines = markdown.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def case_compare(tmp):
    out = os.path.join(tmp, "cmp")
    args = ["compare"] + TINY + ["--sft-steps", "10", "--steps", "6", "--eval-every", "3", "--val-size", "20",
                                 "--seeds", "0-1", "--runs", "bf16,fp8-gen:off,fp8-gen:off:stale", "--jobs", "2",
                                 "--out", out]
    run(args)
    table = open(os.path.join(out, "compare.md")).read()
    mismatch = {row[0]: row for row in table_rows(table, "| run | token_mult_prob_error")}
    check(set(mismatch) == {"bf16:truncated", "fp8-gen:off", "fp8-gen:off:stale"}, "one row per run:\n" + table)
    check(float(mismatch["bf16:truncated"][1]) == 1.0,
          "one engine, one recipe: token_mult_prob_error is exactly 1 for bf16")
    check(float(mismatch["fp8-gen:off"][1]) > 1.0, "FP8 generation with BF16 training shows a mismatch")
    for name in ("compare.png", "dose.png"):
        png = open(os.path.join(out, name), "rb").read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{name} is a PNG")
    summaries = json.load(open(os.path.join(out, "summaries.json")))
    check([(s["run"], s["seed"]) for s in summaries] ==
          [(r, seed) for r in ("bf16:truncated", "fp8-gen:off", "fp8-gen:off:stale") for seed in (0, 1)],
          f"summaries.json holds every run in order: {summaries}")
    for s in summaries:
        folder = s["run"].replace(":", "-") + f"-seed{s['seed']}"
        check(os.path.exists(os.path.join(out, folder, "metrics.jsonl")), f"{folder} has its metrics")
        records = [r for r in read_metrics(os.path.join(out, folder, "metrics.jsonl")) if r["phase"] == "grpo"]
        mean_mult = sum(r["token_mult_prob_error"] for r in records) / len(records)
        check(math.isclose(s["mean_token_mult_prob_error"], mean_mult, rel_tol=1e-12),
              f"{folder}: the summary's mean mismatch is the mean of its steps")
    # The stale run generated with the scales it had when GRPO began.
    stale = json.load(open(os.path.join(out, "fp8-gen-off-stale-seed0", "checkpoints", "stale_scales.json")))
    check(len(stale["k"]) == 2 and all(k > 0 for k in stale["k"]), f"two layers of positive scales: {stale}")
    # Both generate the first GRPO step with the same scales; afterwards the fresh run takes each step's.
    fresh_steps, stale_steps = ([r["token_mult_prob_error"] for r in read_metrics(os.path.join(out, d, "metrics.jsonl"))
                                 if r["phase"] == "grpo"] for d in ("fp8-gen-off-seed0", "fp8-gen-off-stale-seed0"))
    check(fresh_steps[0] == stale_steps[0], f"step 1 alike: {fresh_steps} {stale_steps}")
    check(fresh_steps[1:] != stale_steps[1:], f"then the scales differ: {fresh_steps} {stale_steps}")
    # A second call reuses every finished run; more seeds train only the new ones.
    p = run(args)
    check("reusing 6 finished runs of 6" in p.stderr, p.stderr)
    p = run(args[:-2] + ["--lr", "1e-3", "--out", out])
    check("reusing" not in p.stderr, "a changed flag retrains:\n" + p.stderr)
    run(["compare"] + TINY + ["--runs", "bf16:sometimes", "--out", out], expect=2)
    run(["compare"] + TINY + ["--seeds", "x", "--out", out], expect=2)
    p = run(["compare"] + TINY + ["--runs", "fp8:off:stale", "--out", out], expect=2)
    check("--stale-scales needs a recipe that generates with an FP8 KV cache" in p.stderr, p.stderr)


def case_compare_shared_sft(tmp):
    """With --sft-recipe, compare trains one SFT per seed and every run replays it: the same bits as a plain run."""
    common = TINY + ["--sft-steps", "6", "--steps", "4", "--eval-every", "2", "--sft-recipe", "bf16"]
    out, plain = os.path.join(tmp, "cmp"), os.path.join(tmp, "plain")
    p = run(["compare"] + common + ["--seeds", "0", "--runs", "fp8-kv,fp8-gen:off", "--out", out])
    check(p.stderr.count("sft-bf16-seed0 (1 of 1 to train)") == 1, "one SFT for the seed:\n" + p.stderr)
    check(os.path.exists(os.path.join(out, "sft-bf16-seed0", "model", "attention_scales.json")), "its scales saved")
    timing = {"tokens_per_second", "generation_seconds", "recompute_seconds", "train_seconds",
              "recalibration_seconds", "recalibration_fraction", "step_seconds"}
    for recipe, importance, folder in (("fp8-kv", "truncated", "fp8-kv-truncated-seed0"),
                                       ("fp8-gen", "off", "fp8-gen-off-seed0")):
        alone = os.path.join(plain, recipe)
        run(["train"] + common + ["--recipe", recipe, "--importance", importance, "--seed", "0", "--out", alone])
        a = read_metrics(os.path.join(alone, "metrics.jsonl"))
        b = read_metrics(os.path.join(out, folder, "metrics.jsonl"))
        check(len(a) == len(b) == 10, f"{folder}: 10 lines each")
        for ra, rb in zip(a, b):
            for key in ra:
                if key not in timing:
                    check(ra[key] == rb.get(key),
                          f"{folder} {ra['phase']} step {ra['step']} {key}: {ra[key]} != {rb.get(key)}")
        state = lambda d: open(os.path.join(d, "checkpoints", "state.safetensors"), "rb").read()
        check(state(alone) == state(os.path.join(out, folder)), f"{folder}: the final states are byte for byte equal")
    # More runs reuse the SFT; a damaged SFT folder is an error naming the file.
    p = run(["compare"] + common + ["--seeds", "0", "--runs", "fp8-kv,fp8-gen:off,bf16", "--out", out])
    check("to train" in p.stderr and "sft-bf16" not in p.stderr, "the SFT is reused:\n" + p.stderr)
    os.remove(os.path.join(out, "sft-bf16-seed0", "model", "attention_scales.json"))
    p = run(["compare"] + common + ["--seeds", "0", "--runs", "fp8", "--out", out], expect=1)
    check("attention_scales.json" in p.stderr, p.stderr)


def case_compare_statistics(tmp):
    """The report's statistics over hand-written summaries, against values worked out by hand."""
    def summary(run_name, seed, sft_end, final, best, mult, kl):
        return {"run": run_name, "seed": seed, "sft_end_val_acc": sft_end, "final_val_acc": final,
                "best_val_acc": best, "mean_token_mult_prob_error": mult, "median_step_token_mult_prob_error": mult,
                "mean_gen_kl_error": kl, "mean_clip_fraction": 0.01 * (seed + 1), "seconds_per_step": 0.5,
                "recalibration_fraction": 0.02, "val_curve": [[0, sft_end], [25, final - 0.05], [50, final]],
                "mismatch_curve": [[25, mult, kl], [50, mult, kl]]}
    summaries = [summary("bf16:truncated", 0, 0.10, 0.30, 0.35, 1.0, 0.0),
                 summary("bf16:truncated", 1, 0.20, 0.25, 0.30, 1.0, 0.0),
                 summary("fp8-gen:off", 1, 0.30, 0.55, 0.60, 1.3, 0.03),
                 summary("fp8-gen:off", 0, 0.10, 0.40, 0.45, 1.1, 0.01)]
    path = os.path.join(tmp, "summaries.json")
    with open(path, "w") as f:
        json.dump(summaries, f)
    out = os.path.join(tmp, "report")
    p = run(["compare", "--from", path, "--out", out])
    table = open(os.path.join(out, "compare.md")).read()
    check(p.stdout.startswith(table), "the report is printed and written")
    accuracy = {row[0]: row for row in table_rows(table, "| run | seeds")}
    # bf16: finals 0.30 and 0.25. The median of two is their mean; the bootstrap median of two values is one
    # of them (probability 1/4 each) or their mean (1/2), so the 2.5% and 97.5% quantiles are the two values.
    # The sample std is |0.30 - 0.25| / sqrt(2) = 0.035. Seed 0 ends 0.20 above its SFT end (takes off, first
    # at step 25: 0.25 >= 0.10 + 0.15), seed 1 only 0.05 above.
    check(accuracy["bf16:truncated"][1:] == ["2", "0.275 [0.250, 0.300]", "0.275 ± 0.035", "0.325 [0.300, 0.350]",
                                             "1/2", "25", "0.150"], f"bf16 row: {accuracy['bf16:truncated']}")
    # fp8-gen's seed 1 evaluates 0.30 at its SFT end (in its own generator) and still takes off at step 25.
    check(accuracy["fp8-gen:off"][1:] == ["2", "0.475 [0.400, 0.550]", "0.475 ± 0.106", "0.525 [0.450, 0.600]",
                                          "2/2", "25", "0.200"], f"fp8-gen row: {accuracy['fp8-gen:off']}")
    # Paired by seed (fp8-gen's seeds come in the other order): differences 0.40 - 0.30 = 0.10 and
    # 0.55 - 0.25 = 0.30. Sign flips: |+-0.1 +- 0.3| is 0.4 for two of the four patterns, so p = 2/4. Power:
    # mean 0.2, std 0.1414: (1.96 + 0.8416)^2 * 0.02 / 0.04 = 3.92 -> 4 seeds. GRPO gains (final - SFT end):
    # bf16 0.20 and 0.05, fp8-gen 0.30 and 0.25, so differences 0.10 and 0.20: median 0.15, p = 2/4.
    paired = table_rows(table, "| run vs bf16:truncated")
    check(paired == [["fp8-gen:off", "2", "+0.200 [0.100, 0.300]", "2 / 0", "0.5", "+0.150 [0.100, 0.200]", "0.5",
                      "+0.200 [0.100, 0.300]", "0.5", "4"]], f"paired row: {paired}")
    mismatch = {row[0]: row for row in table_rows(table, "| run | token_mult_prob_error")}
    check(mismatch["fp8-gen:off"][1:] == ["1.200000", "1.200000", "2.00e-02", "0.0150", "0.500", "2.00%"],
          f"mismatch row: {mismatch['fp8-gen:off']}")
    check("smallest attainable p is 0.5" in table and "at least 6 seeds" in table, table)
    # With the baseline named, the comparison turns around.
    p = run(["compare", "--from", path, "--out", out, "--baseline", "fp8-gen:off"])
    check(table_rows(p.stdout, "| run vs fp8-gen:off")[0][2] == "-0.200 [-0.300, -0.100]", p.stdout)
    # --runs picks runs out of the summaries, in its order.
    p = run(["compare", "--from", path, "--out", out, "--runs", "fp8-gen:off"])
    check([row[0] for row in table_rows(p.stdout, "| run | seeds")] == ["fp8-gen:off"], p.stdout)
    p = run(["compare", "--from", path, "--out", out, "--runs", "fp8-gen:off,bf16:truncated"])
    check([row[0] for row in table_rows(p.stdout, "| run | seeds")] == ["fp8-gen:off", "bf16:truncated"], p.stdout)
    p = run(["compare", "--from", path, "--out", out, "--runs", "fp8"], expect=2)
    check("no run fp8:truncated" in p.stderr, p.stderr)
    # Parts of one experiment in several files merge into the same report; parts that ran different step
    # counts under one run name are refused.
    first, second = os.path.join(tmp, "part1.json"), os.path.join(tmp, "part2.json")
    for name, part in ((first, summaries[:3]), (second, summaries[3:])):
        with open(name, "w") as f:
            json.dump(part, f)
    merged = os.path.join(tmp, "merged")
    run(["compare", "--from", f"{first},{second}", "--out", merged])
    check(open(os.path.join(merged, "compare.md")).read() == table, "two parts report as the whole file does")
    with open(second, "w") as f:
        json.dump([dict(summaries[3], grpo_steps=100)], f)
    p = run(["compare", "--from", f"{first},{second}", "--out", out], expect=2)
    check("run fp8-gen:off: seed 0 ran" in p.stderr and "not one experiment" in p.stderr, p.stderr)
    p = run(["compare", "--from", ",", "--out", out], expect=2)
    check("--from: give one or more" in p.stderr, p.stderr)
    # Report-only: training flags are refused, as are a duplicated seed and a damaged file.
    p = run(["compare", "--from", path, "--steps", "3"], expect=2)
    check("--steps applies only to training" in p.stderr, p.stderr)
    with open(path, "w") as f:
        json.dump(summaries + [summaries[0]], f)
    p = run(["compare", "--from", path, "--out", out], expect=2)
    check("has seed 0 twice" in p.stderr, p.stderr)
    with open(path, "w") as f:
        f.write('[{"seed": 0}]')
    p = run(["compare", "--from", path, "--out", out], expect=1)
    check("item 1" in p.stderr and '"run"' in p.stderr, p.stderr)


# Llama-3.2-1B's shape (its HF config.json): every dimension a multiple of 128,
# so the parameter arena has no padding.
LLAMA32_1B = ["--layers", "16", "--hidden", "2048", "--heads", "32", "--kv-heads", "8", "--intermediate", "8192",
              "--vocab", "128256", "--tie-embeddings"]


def plan_rows(stdout):
    """The per-rank rows of `info --plan`: {rank: {column: GiB}}."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["rank"])
    names = lines[header].split()
    rows = {}
    for line in lines[header + 1:]:
        values = line.split()
        rows[int(values[0])] = dict(zip(names[1:], map(float, values[1:])))
    return rows


def case_plan(tmp):
    # By hand: embeddings 128256 * 2048 = 262668288 (tied); per layer q and o
    # 2048^2 each, k and v 512 * 2048 each, MLP 3 * 8192 * 2048, norms 2 * 2048:
    # 60821504; 16 layers; final norm 2048.
    params = 262668288 + 16 * 60821504 + 2048
    norms = 16 * 2 * 2048 + 2048
    gib = 1024.0 ** 3
    p = run(["info", "--plan"] + LLAMA32_1B + ["--kv-tokens", "4096"])
    check(f"parameters {params} total, {params} active" in p.stdout, f"the published 1.24B parameters:\n{p.stdout}")
    rows = plan_rows(p.stdout)
    check(list(rows) == [0], f"one rank, one row:\n{p.stdout}")
    expected = {"master": 2 * 4 * params,  # the policy's host copy and the trainer's arena
                "compute": 2 * params + 2 * norms,  # BF16, the norms FP32
                "gradients": 4 * params, "optimizer": 2 * 4 * params,
                "backward": 2 * (params - norms),  # W^T of the head (the tied embeddings) and every projection
                "kv": 4096 * 16 * 2 * 512 * 2}  # tokens * layers * (K, V) * kv_dim * BF16
    for column, key in (("master", "master"), ("compute", "compute"), ("gradients", "gradients"),
                        ("optimizer", "optimizer"), ("backward", "backward"), ("kv", "kv-cache")):
        check(abs(rows[0][key] - expected[column] / gib) < 0.001, f"{column}: {rows[0][key]} GiB, expected "
              f"{expected[column] / gib:.3f}:\n{p.stdout}")

    p = run(["info", "--plan", "--ranks", "8", "--recipe", "fp8"] + LLAMA32_1B)
    rows = plan_rows(p.stdout)
    check(sorted(rows) == list(range(8)), f"eight ranks, eight rows:\n{p.stdout}")
    optimizer = [r["optimizer"] for r in rows.values()]
    check(abs(sum(optimizer) - 8 * params / gib) < 0.01, f"the shards add up to the whole: {optimizer}")
    check(max(optimizer) - min(optimizer) < 0.01, f"near-equal shards: {optimizer}")
    check(len({(r["master"], r["compute"], r["gradients"]) for r in rows.values()}) == 1,
          "only the optimizer state differs between ranks")
    # FP8: each projection one byte a weight plus an FP32 scale per 128x128 block
    # (per layer q and o 16x16, k and v 4x16, gate and up 64x16, down 16x64);
    # the embeddings stay BF16, the norms FP32.
    fp8_compute = 262668288 * 2 + 4 * norms + 16 * (60821504 - 2 * 2048 + 4 * (2 * 256 + 2 * 64 + 3 * 1024))
    check(abs(rows[0]["compute"] - fp8_compute / gib) < 0.001, f"FP8 compute {rows[0]['compute']} GiB, expected "
          f"{fp8_compute / gib:.3f}")
    # An FP8 head on the tied embeddings: its own E4M3 copy (1002 x 16 blocks) beside the BF16 lookup table.
    p = run(["info", "--plan", "--recipe", "fp8-head"] + LLAMA32_1B)
    check("head FP8" in p.stdout, f"the recipe names its FP8 head:\n{p.stdout}")
    head_compute = fp8_compute + 262668288 + 1002 * 16 * 4
    check(abs(plan_rows(p.stdout)[0]["compute"] - head_compute / gib) < 0.001,
          f"FP8-head compute, expected {head_compute / gib:.3f}:\n{p.stdout}")

    p = run(["info", "--ranks", "4"], expect=2)
    check("--ranks needs --plan" in p.stderr, p.stderr)
    p = run(["info", "--plan", "--ranks", "0"], expect=2)
    check("--ranks" in p.stderr, p.stderr)
    p = run(["info", "--plan", "--model", tmp], expect=2)
    check("does not read an HF folder" in p.stderr, p.stderr)


def parameter_counts(stdout):
    """(total, active) from `info`'s "parameters T total, A active per token" line."""
    match = re.search(r"^parameters (\d+) total, (\d+) active per token$", stdout, re.MULTILINE)
    check(match is not None, f"a parameters line:\n{stdout}")
    return int(match[1]), int(match[2])


def built_in_counts(experts=0, top_k=0, expert_width=0, layers=2, hidden=128, heads=4, kv_heads=2,
                    intermediate=256, vocab=48):
    """(total, active) weights of a built-in model, by hand from the HF architectures: vocab is the task's
    character vocabulary padded to 48; with experts, each layer is a Qwen3-MoE sparse layer (q/k head norms,
    a router of experts x hidden, experts of 3 x hidden x expert_width) instead of a dense SwiGLU MLP."""
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim + 2 * hidden  # q, o, k, v, two norms
    common = 2 * vocab * hidden + hidden  # embeddings, head, final norm
    if experts == 0:
        dense = common + layers * (attention + 3 * hidden * intermediate)
        return dense, dense
    sparse = common + layers * (attention + 2 * head_dim + experts * hidden)
    expert = 3 * hidden * expert_width
    return sparse + layers * experts * expert, sparse + layers * top_k * expert


def case_moe(tmp):
    # moe-tiny: tiny's attention, 8 experts of width 128, top 2: a token uses as many MLP weights as tiny's
    p = run(["info", "--model", "moe-tiny", "--threads", "2"])
    check("family qwen3_moe" in p.stdout and "experts 8, 2 per token, expert intermediate 128" in p.stdout, p.stdout)
    check(parameter_counts(p.stdout) == built_in_counts(8, 2, 128) == (899840, 310016), p.stdout)
    tiny_total, tiny_active = built_in_counts()
    check(parameter_counts(run(["info", "--threads", "2"]).stdout) == (tiny_total, tiny_active), "dense: active = total")
    check(abs(310016 - tiny_active) / tiny_active < 0.01, "moe-tiny's active weights are about tiny's")
    p = run(["info", "--model", "moe-tiny", "--experts", "4", "--experts-per-token", "1", "--moe-intermediate", "64",
             "--layers", "3", "--threads", "2"])
    check(parameter_counts(p.stdout) == built_in_counts(4, 1, 64, layers=3), p.stdout)
    p = run(["info", "--plan", "--model", "moe-tiny"])
    check(parameter_counts(p.stdout) == built_in_counts(8, 2, 128), p.stdout)

    # generation: deterministic for a seed, tokens inside the vocabulary
    args = ["generate", "--model", "moe-tiny", "--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--recipe", "fp8",
            "--max-new-tokens", "6", "--seed", "7", "--threads", "2"]
    first, again = run(args).stdout, run(args).stdout
    check(first == again and first.count("finish: length") == 2, f"{first}\n{again}")
    tokens = [int(t) for line in first.splitlines() if line.strip().startswith("tokens:") for t in line.split()[1:]]
    check(len(tokens) == 12 and all(0 <= t < 48 for t in tokens), first)
    p = run(["generate", "--model", "moe-tiny", "--task", "reverse", "--prompt", "ab|", "--threads", "2"])
    check("text:" in p.stdout, p.stdout)

    # training: one recipe routes as generation did, every choice of every GRPO step
    def train_moe(name, *flags):
        out = os.path.join(tmp, name)
        run(["train", "--model", "moe-tiny", "--task", "reverse", "--length", "3", "--letters", "3", "--sft-steps",
             "2", "--steps", "3", "--eval-every", "3", "--val-size", "8", "--threads", "2", "--quiet", "--out", out,
             *flags])
        with open(os.path.join(out, "metrics.jsonl")) as f:
            grpo = [json.loads(line) for line in f if '"grpo"' in line]
        with open(os.path.join(out, "summary.json")) as f:
            return grpo, json.load(f)
    grpo, summary = train_moe("fp8", "--recipe", "fp8")
    check(len(grpo) == 3 and all(r["routing_agreement"] == 1.0 for r in grpo), grpo)
    check(summary["mean_routing_agreement"] == 1.0 and not summary["routing_replay"], summary)
    check(all("router_aux_loss" in r and r["router_aux_loss"] > 0 for r in grpo), grpo)
    # FP8 generation, BF16 training: measured, and replay trains on the recorded experts
    for flags in ([], ["--routing-replay", "1", "--router-aux-coef", "0.01"]):
        grpo, summary = train_moe("fp8-gen" + str(len(flags)), "--recipe", "fp8-gen", *flags)
        check(all(0.5 < r["routing_agreement"] <= 1.0 for r in grpo), grpo)
        check(summary["routing_replay"] == bool(flags), summary)
    p = run(["train", "--model", "moe-tiny", "--routing-replay", "2"], expect=2)
    check("--routing-replay" in p.stderr, p.stderr)

    # bad input names the flag (exit 2) or the library names the field (exit 1)
    p = run(["train", "--model", "moe-huge"], expect=2)
    check("'--model' must be one of tiny|moe-tiny" in p.stderr, p.stderr)
    p = run(["train", "--model", "moe-tiny", "--init-from", tmp], expect=2)
    check("either --model or --init-from" in p.stderr, p.stderr)
    p = run(["info", "--experts", "4"], expect=2)
    check("--experts needs --model moe-tiny" in p.stderr, p.stderr)
    p = run(["generate", "--model", "moe-tiny", "--experts-per-token", "9", "--prompt-ids", "1"], expect=1)
    check("num_experts_per_tok (9) exceeds num_experts (8)" in p.stderr, p.stderr)

    # an HF folder: its config.json says qwen3_moe, info reads it and counts as for the built-in shape
    import fp8rl  # noqa: E402 (only this case needs the binding)
    config = fp8rl.ModelConfig(family=fp8rl.ModelFamily.QWEN3_MOE, qk_norm=True, vocab_size=48, hidden_size=64,
                               num_layers=3, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
                               max_position_embeddings=32, num_experts=4, num_experts_per_tok=2,
                               moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=(1,))
    folder = os.path.join(tmp, "moe")
    with fp8rl.Policy.random(config, seed=3) as policy:
        policy.save(folder)
    p = run(["info", "--model", folder, "--threads", "2"])
    check("family qwen3_moe" in p.stdout and "dense layers 1," in p.stdout, p.stdout)
    # layers 0 and 2 sparse; layer 1 keeps its q/k norms but has the dense MLP of 3 x 64 x 96
    total, active = built_in_counts(4, 2, 32, layers=3, hidden=64, vocab=48)
    expert_layer = 4 * 64 + 4 * 3 * 64 * 32  # router, experts
    dense_layer = 3 * 64 * 96
    check(parameter_counts(p.stdout) == (total - expert_layer + dense_layer,
                                         active - (expert_layer - 2 * 3 * 64 * 32) + dense_layer), p.stdout)
    run(["generate", "--model", folder, "--prompt-ids", "1,2", "--threads", "2"])


HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_DEMO = os.path.join(HERE, "..", "..", "examples", "text_demo", "make_demo.py")
REWARD_PROGRAM = os.path.join(HERE, "reward_programs", "reward_program.py")
# The text demo's policy and run, cut down to a ctest's time on two cores.
TEXT_MODEL = ["--hidden", "64", "--layers", "2"]
TEXT_RUN = ["--threads", "2", "--quiet", "--reward", "number", "--group-size", "8", "--prompts-per-step", "16",
            "--sft-batch", "32", "--sft-lr", "3e-3", "--lr", "3e-4"]


def make_demo(tmp, *flags):
    """The demo's HF folder (tmp/model) and its train.jsonl and val.jsonl."""
    proc = subprocess.run([sys.executable, MAKE_DEMO, tmp, *TEXT_MODEL, *flags], capture_output=True, text=True,
                          timeout=600)
    check(proc.returncode == 0, f"make_demo.py failed:\n{proc.stdout}\n{proc.stderr}")
    return os.path.join(tmp, "model"), os.path.join(tmp, "train.jsonl"), os.path.join(tmp, "val.jsonl")


def eval_accuracy(stdout):
    match = re.search(r"accuracy ([0-9.]+)% \((\d+) of (\d+) rows with reward 1\), mean reward ([0-9.]+)", stdout)
    check(match is not None, "eval prints its accuracy:\n" + stdout)
    return float(match.group(1)) / 100, int(match.group(2)), int(match.group(3)), float(match.group(4))


def case_text_train(tmp):
    model, train, val = make_demo(tmp)
    start = eval_accuracy(run(["eval", "--init-from", model, "--data", val, "--reward", "number",
                               "--threads", "2"]).stdout)[0]
    out = os.path.join(tmp, "run")
    sft, grpo = 250, 150  # about 25 s on two cores
    proc = run(["train", "--init-from", model, "--data", train, "--val", val, *TEXT_RUN, "--sft-steps", str(sft),
                "--steps", str(grpo), "--eval-every", "25", "--out", out])
    check("val accuracy final" in proc.stdout and "text " in proc.stdout, "the summary is printed:\n" + proc.stdout)
    records = read_metrics(os.path.join(out, "metrics.jsonl"))
    check(len(records) == sft + grpo, f"one metrics line per step: {len(records)} != {sft + grpo}")
    check([r["phase"] for r in records] == ["sft"] * sft + ["grpo"] * grpo, "phases in order")
    for r in records:
        for key, value in r.items():
            if isinstance(value, (int, float)):
                check(math.isfinite(value), f"finite {key} in {r}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    check(summary["reward"] == "number" and summary["data"] == train, summary)
    first = sum(r["reward_mean"] for r in records[sft:sft + 25]) / 25
    last = sum(r["reward_mean"] for r in records[-25:]) / 25
    curve = " ".join(f"{step}:{acc:.2f}" for step, acc in summary["val_curve"])
    print(f"text: val accuracy {start:.3f} at the start, {summary['sft_end_val_acc']:.3f} after SFT, "
          f"{summary['final_val_acc']:.3f} at the end (curve {curve}); GRPO reward {first:.3f} -> {last:.3f}")
    check(summary["final_val_acc"] > start + 0.2, f"validation accuracy rises from {start:.3f}")
    check(last > first, f"GRPO raises the reward: first 25 steps {first:.3f}, last 25 {last:.3f}")
    check(summary["final_val_acc"] >= summary["sft_end_val_acc"], "GRPO does not lose what SFT reached")
    # The trained policy is a whole HF folder again: eval and generate take it with its tokenizer.
    trained = os.path.join(out, "model")
    check(os.path.exists(os.path.join(trained, "tokenizer.json")), "the tokenizer is copied next to the weights")
    end = eval_accuracy(run(["eval", "--init-from", trained, "--data", val, "--reward", "number",
                             "--recipe", "fp8-gen", "--threads", "2"]).stdout)[0]
    check(end > start + 0.2, f"eval of the trained folder: {end:.3f}, start {start:.3f}")


def case_text_generate(tmp):
    from tokenizers import Tokenizer  # noqa: E402 (only the text cases need it)
    model, _, _ = make_demo(tmp)
    tokenizer = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    for flags in (["--temperature", "0"], ["--temperature", "1", "--seed", "5"]):
        p = run(["generate", "--init-from", model, "--prompt", "What is two plus three?", "--prompt", "What is 7 minus 4?",
                 "--max-new-tokens", "12", "--threads", "2", *flags])
        # one block per completion, from its "[i] finish:" line (decoded text may hold "[" too)
        blocks = re.split(r"^(?=\[\d+\] finish:)", p.stdout, flags=re.M)[1:]
        check(len(blocks) == 2, p.stdout)
        for block in blocks:
            lines = block.split("\n")
            stop = "finish: stop" in lines[0]
            ids = [int(t) for t in lines[1].split()[1:]]
            text = next(line for line in lines if line.strip().startswith("text:")).split("text:", 1)[1][5:]
            check(all(0 <= i < tokenizer.get_vocab_size() for i in ids), f"ids in the vocabulary: {ids}")
            if stop:
                check(ids[-1] == tokenizer.token_to_id("<|eos|>"), f"a stop is the folder's EOS: {ids}")
                ids = ids[:-1]
            expected = tokenizer.decode(ids, skip_special_tokens=True)
            check(text == expected, f"the text decodes the ids {ids}: {text!r} != {expected!r}")
    # --prompt-ids with a tokenizer folder: also decoded
    p = run(["generate", "--init-from", model, "--prompt-ids", "0,263,262", "--max-new-tokens", "3", "--threads", "2"])
    check("text:" in p.stdout, p.stdout)


def case_text_eval(tmp):
    model, _, _ = make_demo(tmp)
    data = os.path.join(tmp, "tiny.jsonl")
    with open(data, "w") as f:
        f.write('{"q": "What is one plus one?", "a": "2"}\n\n{"q": "What is two plus two?", "a": "4"}\n'
                '{"q": "What is 3 plus 3?", "a": "6"}\n')
    fields = ["--prompt-field", "q", "--answer-field", "a", "--threads", "2"]
    # anything matches: every row is correct; the template reaches the reward program's prompt
    accuracy, correct, rows, mean = eval_accuracy(run(["eval", "--init-from", model, "--data", data, "--reward",
                                                       "regex:.*", *fields]).stdout)
    check((accuracy, correct, rows, mean) == (1.0, 3, 3, 1.0), f"{accuracy} {correct} {rows} {mean}")
    p = run(["eval", "--init-from", model, "--data", data, "--reward", "regex:^no such completion$", "--limit", "2",
             "--show", "1", *fields])
    check(eval_accuracy(p.stdout)[:3] == (0.0, 0, 2), p.stdout)
    check(p.stdout.count("completion:") == 1 and "prompt:     What is one plus one?" in p.stdout, p.stdout)
    p = run(["eval", "--init-from", model, "--data", data, "--reward", "exact", "--prompt-template", "Q: {prompt}\nA:",
             "--show", "3", *fields])
    check("prompt:     Q: What is 3 plus 3?\nA:" in p.stdout, p.stdout)


def case_text_errors(tmp):
    model, train, val = make_demo(tmp)
    p = run(["train", "--data", train, "--reward", "number"], expect=2)
    check("--data needs --init-from" in p.stderr, p.stderr)
    p = run(["train", "--init-from", model, "--data", train, "--reward", "bogus"], expect=2)
    check("unknown reward 'bogus'" in p.stderr, p.stderr)
    p = run(["train", "--init-from", model, "--data", train], expect=2)
    check("missing required option '--reward'" in p.stderr, p.stderr)
    p = run(["train", "--reward", "number"], expect=2)
    check("give --data" in p.stderr, p.stderr)
    p = run(["train", "--init-from", model, "--data", train, "--reward", "number", "--task", "reverse"], expect=2)
    check("--task chooses a built-in task" in p.stderr, p.stderr)
    p = run(["train", "--init-from", model, "--data", train, "--reward", "number", "--prompt-template", "{answer}"],
            expect=2)
    check("{answer}" in p.stderr, p.stderr)
    p = run(["eval", "--init-from", model, "--reward", "number"], expect=2)
    check("missing required option '--data'" in p.stderr, p.stderr)
    missing = os.path.join(tmp, "missing.jsonl")
    p = run(["eval", "--init-from", model, "--data", missing, "--reward", "number"], expect=1)
    check("missing.jsonl" in p.stderr, p.stderr)
    # a reward program that crashes at its third request: exit 1, naming the file and row
    crash = f"cmd:{sys.executable} {REWARD_PROGRAM} crash"
    p = run(["train", "--init-from", model, "--data", train, "--reward", crash, "--sft-steps", "0", "--steps", "1",
             "--threads", "2", "--quiet", "--prompts-per-step", "2", "--group-size", "2"], expect=1)
    check(re.search(r"train\.jsonl: reward program .*, row \d+:", p.stderr) is not None, p.stderr)
    # a folder without tokenizer.json: --prompt needs --task
    bare = os.path.join(tmp, "bare")
    os.makedirs(bare)
    for name in ("config.json", "model.safetensors"):
        with open(os.path.join(model, name), "rb") as src, open(os.path.join(bare, name), "wb") as dst:
            dst.write(src.read())
    p = run(["generate", "--init-from", bare, "--prompt", "hello"], expect=2)
    check("--prompt needs --task" in p.stderr, p.stderr)
    p = run(["train", "--init-from", bare, "--data", train, "--reward", "number", "--steps", "1"], expect=1)
    check("tokenizer.json" in p.stderr, p.stderr)


def main():
    global FP8RL
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    FP8RL = os.path.abspath(sys.argv[1])
    cases = {"train": case_train, "resume": case_resume, "errors": case_errors, "commands": case_commands,
             "compare": case_compare, "compare_statistics": case_compare_statistics, "compare_shared_sft": case_compare_shared_sft, "sft_recipe": case_sft_recipe, "minibatches": case_minibatches, "plan": case_plan, "moe": case_moe,
             "text_train": case_text_train, "text_generate": case_text_generate, "text_eval": case_text_eval,
             "text_errors": case_text_errors}
    names = list(cases) if sys.argv[2] == "all" else [sys.argv[2]]
    for name in names:
        with tempfile.TemporaryDirectory(prefix="fp8rl_cli_") as tmp:
            cases[name](tmp)
        print(f"ok: {name}")


if __name__ == "__main__":
    main()
