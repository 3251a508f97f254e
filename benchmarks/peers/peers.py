#!/usr/bin/env python3
"""fp8rl's CPU backend against its peers, measured interleaved in one run.

  peers.py [--build DIR] [--rounds 3] [--threads 2] [--max-wait 600] [--json PATH]

Peers (prepared by setup.sh, from PyPI only):
  * llama.cpp (llama-cpp-python's vendored copy, built for this CPU), through
    llama-bench on SmolLM2-135M-shaped GGUF files (write_gguf.py): F16 against
    our BF16, Q8_0 against our FP8. Decode: 64 tokens at batch 1 after a
    128-token context (-p 0 -n 64 -d 128), as ours decodes after a 128-token
    prompt. Prefill: 128 tokens from an empty context (-p 128 -n 0).
  * PyTorch from PyPI on the CPU, training the same model with bf16 autocast
    (benchmarks/cpu/torch_train_baseline.py, the baseline bench_train runs),
    against our BF16 and FP8 training on the same batch.

Each round runs every measurement once: ours and the peer's alternate, and
which of the two goes first alternates from round to round, so that a drift
in the machine's state (heat, a neighbour's load) falls on both. A round's
figure is the tool's own median (ours, PyTorch) or the median of its
repetitions (llama-bench); the table gives the median over rounds with the
range, and ratio = median ours / median peer with the range of the per-round
ratios. The machine may be shared: before each measurement the script waits
(up to --max-wait s) until other processes use under 10% of the CPUs, and it
reports their share while each round ran (a 2-thread run on 2 cores beside
someone else's busy core is not a measurement of either program).

Bandwidth shares: bytes of weights read per decoded token x tokens/s over the
memory bandwidth that bench_rollout measures (streaming read, same threads;
the median over the rounds, as one round's figure moves with the host's load).
Ours: bench_rollout's own weight bytes per token; llama.cpp: the same count
for the GGUF file's types (2-D weights incl. the tied head at 2 bytes in F16,
34 bytes per 32 in Q8_0; norms F32).
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

import write_gguf as shapes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PROMPT = 128      # prefill tokens, and the context decode starts from
NEW_TOKENS = 64   # decode tokens


# --------------------------------------------------------------- helpers

class CpuMeter:
    """CPU time the rest of the machine used while a command of ours ran.

    The machine may be shared (its other users' builds and tests): busy time in
    /proc/stat minus what our children and we used is someone else's, and a
    measurement taken beside it is slowed. `wait_for_quiet` holds a measurement
    back until the others are nearly idle; `log` records, per command, their
    share of the machine's CPU time while it ran (0 = clean)."""

    def __init__(self, max_wait):
        self.max_wait = max_wait
        self.tick = os.sysconf("SC_CLK_TCK")
        self.cpus = os.cpu_count()
        self.log = []  # others' share per command run, in order

    def busy_seconds(self):
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return (sum(fields[:8]) - idle) / self.tick

    def own_seconds(self):
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    def wait_for_quiet(self, window=2.0, threshold=0.10):
        """Waits (up to max_wait s) for a window in which others used < threshold of the CPUs."""
        deadline = time.time() + self.max_wait
        while True:
            busy, own = self.busy_seconds(), self.own_seconds()
            time.sleep(window)
            share = (self.busy_seconds() - busy - (self.own_seconds() - own)) / (window * self.cpus)
            if share < threshold or time.time() > deadline:
                return share

    def run(self, command, env=None):
        """stdout of the command (its stderr shown on failure); logs others' CPU share while it ran."""
        self.wait_for_quiet()
        started, busy, own = time.time(), self.busy_seconds(), self.own_seconds()
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.time() - started
        foreign = max(0.0, (self.busy_seconds() - busy - (self.own_seconds() - own)) / (wall * self.cpus))
        if result.returncode != 0:
            sys.stderr.write(result.stderr[-4000:])
            raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}")
        name = os.path.basename(command[1] if command[0].endswith("python") else command[0])
        print(f"  {name}: {wall:.0f} s, others' CPU share {100 * foreign:.0f}%", file=sys.stderr)
        self.log.append(foreign)
        return result.stdout


METER = None  # the CpuMeter, set in main()


def run(command, env=None):
    return METER.run(command, env)


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "rounds": values}


def machine():
    fields = {}
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = fields.get("Flags", "").split()
    wanted = ["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16"]
    return {"model": fields.get("Model name", "?"), "cpus": os.cpu_count(),
            "flags": {f: f in flags for f in wanted}}


def weight_bytes_per_token(type_name):
    """Bytes of weights llama.cpp reads for one decoded token (the embedding row is not counted)."""
    s = shapes
    per_layer = (s.HEADS * s.HEAD_DIM * s.HIDDEN * 2 + 2 * s.KV_HEADS * s.HEAD_DIM * s.HIDDEN +
                 3 * s.INTERMEDIATE * s.HIDDEN)
    matrix = s.LAYERS * per_layer + s.VOCAB * s.HIDDEN  # + the tied head
    norms = (2 * s.LAYERS + 1) * s.HIDDEN * 4
    per_weight = {"F16": 2.0, "Q8_0": 34.0 / 32.0}[type_name]
    return matrix * per_weight + norms


# ------------------------------------------------------------------ ours

def ours_rollout(build, threads):
    """Batch-1 prefill and decode tokens/s per recipe, weight bytes, and bandwidth."""
    out = run([os.path.join(build, "benchmarks/cpu/fp8rl_bench_rollout"), "--threads", str(threads), "--no-torch",
               "--batch1-only", "--new-tokens", str(NEW_TOKENS)])
    result = {"bandwidth_gbs": float(re.search(r"memory bandwidth: ([\d.]+) GB/s", out).group(1))}
    for phase, batch, recipe, tps in re.findall(r"^(prefill|decode)\s+(\d+)\s+(\S+)\s+([\d.]+)", out, re.M):
        if batch == "1":
            result[f"{phase} {recipe}"] = float(tps)
    for recipe, mb in re.findall(r"^\s+(\S+)\s+weights\s+([\d.]+) MB/token", out, re.M):
        result[f"weight_bytes {recipe}"] = float(mb) * 1e6
    return result


def ours_train(build, threads):
    """Training tokens/s of our BF16 and FP8 recipes (bench_train's throughput part;
    its RL-step part shrunk to the least it accepts, since it is not compared here)."""
    out = run([os.path.join(build, "benchmarks/cpu/fp8rl_bench_train"), "--threads", str(threads), "--no-torch",
               "--rl-sequences", "1", "--rl-prompt", "4", "--rl-new-tokens", "1", "--rl-steps", "1"])
    result = {}
    for recipe, tps in re.findall(r"^ours (\S+)\s+([\d.]+)", out, re.M):
        result[f"train {recipe}"] = float(tps)
    return result


# ----------------------------------------------------------------- peers

def llama_bench(llama, models, threads):
    """tokens/s of llama-bench's prefill (pp128) and decode (tg64 at depth 128) per model type."""
    common = [llama, "-m", ",".join(models.values()), "-t", str(threads), "-r", "3", "-o", "json"]
    result = {}
    for phase, args in (("prefill", ["-p", str(PROMPT), "-n", "0"]),
                        ("decode", ["-p", "0", "-n", str(NEW_TOKENS), "-d", str(PROMPT)])):
        for test in json.loads(run(common + args)):
            type_name = next(t for t, path in models.items() if path == test["model_filename"])
            result[f"{phase} {type_name}"] = statistics.median(test["samples_ts"])
            result["build"] = f"{test.get('build_commit', '?')} ({test.get('build_number', '?')})"
    return result


def torch_train(python, threads):
    """PyTorch bf16-autocast training tokens/s, with bench_train's batch and steps.

    PyPI's torch runs its intra-op threads on GNU OpenMP, whose idle workers
    spin: fastest on an idle machine, slow beside any other load.
    bench_train runs Debian's torch with GOMP_SPINCOUNT=1000; which of that and
    libgomp's default suits this wheel depends on the machine, so both run and
    the faster counts (the peer at its best)."""
    result = {}
    for spin in ("1000", None):
        env = dict(os.environ)
        env.pop("GOMP_SPINCOUNT", None)
        if spin is not None:
            env["GOMP_SPINCOUNT"] = spin
        out = run([python, os.path.join(ROOT, "benchmarks/cpu/torch_train_baseline.py"), "--threads", str(threads),
                   "--modes", "bf16_autocast", "--sequences", "4", "--prompt", "32", "--completion", "96",
                   "--steps", "5"], env=env)
        doc = json.loads(out.strip().splitlines()[-1])
        (mode,) = doc["results"]
        if "error" in mode:
            raise SystemExit(f"PyTorch bf16_autocast failed: {mode['error']}")
        result[f"train bf16_autocast GOMP_SPINCOUNT={spin or 'default'}"] = mode["tokens_per_s"]
        result["torch_version"] = doc["torch_version"]
    result["train bf16_autocast"] = max(v for k, v in result.items() if k.startswith("train "))
    return result


# ------------------------------------------------------------------ main

def main():
    global METER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-wait", type=float, default=600,
                        help="seconds to wait, before each measurement, for other users of the CPUs to go idle")
    parser.add_argument("--json", default=None, help="default: BUILD/peers/peers.json")
    args = parser.parse_args()
    METER = CpuMeter(args.max_wait)
    peers = os.path.join(args.build, "peers")
    llama = os.path.join(peers, "llama.cpp-build/bin/llama-bench")
    venv_python = os.path.join(peers, "venv/bin/python")
    json_path = args.json or os.path.join(peers, "peers.json")

    subprocess.run([venv_python, os.path.join(HERE, "write_gguf.py"), os.path.join(peers, "gguf")], check=True)
    models = {t: os.path.join(peers, "gguf", f"smollm2-135m-random-{t}.gguf") for t in ("F16", "Q8_0")}

    info = machine()
    print(f"machine: {info['model']}, {info['cpus']} CPUs; " +
          ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in info["flags"].items()))
    print(f"{args.rounds} rounds, {args.threads} threads", flush=True)

    pairs = [(lambda: ours_rollout(args.build, args.threads), lambda: llama_bench(llama, models, args.threads)),
             (lambda: ours_train(args.build, args.threads), lambda: torch_train(venv_python, args.threads))]
    samples = []  # one dict per round: every figure measured in it
    started = time.time()
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
        figures, first_command = {}, len(METER.log)
        for ours, peer in pairs:
            for measure in ((ours, peer) if r % 2 == 0 else (peer, ours)):  # who goes first alternates
                figures.update(measure())
        figures["others_cpu_share"] = max(METER.log[first_command:])
        samples.append(figures)

    def values(key):
        return [s[key] for s in samples]

    rows = [  # figure, our key, peer key
        ("decode batch 1 tokens/s, BF16 vs llama.cpp F16", "decode BF16", "decode F16"),
        ("decode batch 1 tokens/s, FP8 vs llama.cpp Q8_0", "decode FP8", "decode Q8_0"),
        # Q8_0 files quantize the output head too: our recipe option that does.
        ("decode batch 1 tokens/s, FP8 + FP8 head vs Q8_0", "decode FP8+head", "decode Q8_0"),
        (f"prefill {PROMPT} tokens, tokens/s, BF16 vs F16", "prefill BF16", "prefill F16"),
        (f"prefill {PROMPT} tokens, tokens/s, FP8 vs Q8_0", "prefill FP8", "prefill Q8_0"),
        (f"prefill {PROMPT} tokens, tokens/s, FP8 + head vs Q8_0", "prefill FP8+head", "prefill Q8_0"),
        ("training tokens/s, BF16 vs PyTorch bf16 autocast", "train BF16", "train bf16_autocast"),
        ("training tokens/s, FP8 vs PyTorch bf16 autocast", "train FP8", "train bf16_autocast"),
    ]
    report = {"machine": info, "rounds": args.rounds, "threads": args.threads,
              "llama_cpp": samples[0]["build"], "torch": samples[0]["torch_version"], "figures": [], "shares": [],
              "ours_vs_ours": []}

    def fmt(s):
        return f"{s['median']:.1f} [{s['min']:.1f}-{s['max']:.1f}]"

    print(f"\n{'figure':<50} {'fp8rl':>24} {'peer':>24} {'ratio':>20}")
    for figure, ours_key, peer_key in rows:
        ours, peer = summary(values(ours_key)), summary(values(peer_key))
        per_round = [o / p for o, p in zip(values(ours_key), values(peer_key))]
        ratio = ours["median"] / peer["median"]
        report["figures"].append({"figure": figure, "fp8rl": ours, "peer": peer,
                                  "ratio": ratio, "ratio_min": min(per_round), "ratio_max": max(per_round)})
        print(f"{figure:<50} {fmt(ours):>24} {fmt(peer):>24} "
              f"{f'{ratio:.2f}x [{min(per_round):.2f}-{max(per_round):.2f}]':>20}")

    bandwidth = summary(values("bandwidth_gbs"))
    # One denominator for every row and round, the median of the rounds' measurements: the
    # machine's bandwidth does not change, but one streaming read in a VM varies with the host's load.
    print(f"\nshare of measured memory bandwidth in decode at batch 1: bytes/token x tokens/s over "
          f"{bandwidth['median']:.1f} GB/s (median of the rounds' {fmt(bandwidth)} GB/s)")
    share_rows = [("ours BF16", "decode BF16", lambda s: s["weight_bytes BF16"]),
                  ("ours FP8", "decode FP8", lambda s: s["weight_bytes FP8"]),
                  ("ours FP8+head", "decode FP8+head", lambda s: s["weight_bytes FP8+head"]),
                  ("llama.cpp F16", "decode F16", lambda s: weight_bytes_per_token("F16")),
                  ("llama.cpp Q8_0", "decode Q8_0", lambda s: weight_bytes_per_token("Q8_0"))]
    for name, key, bytes_of in share_rows:
        shares = summary([100 * bytes_of(s) * s[key] / (bandwidth["median"] * 1e9) for s in samples])
        report["shares"].append({"name": name, "weight_bytes_per_token": bytes_of(samples[0]), "percent": shares})
        print(f"  {name:<16} {bytes_of(samples[0]) / 1e6:6.1f} MB/token  {fmt(shares)} %")

    print()
    for name, num, den in (("FP8 decode / our BF16 decode", "decode FP8", "decode BF16"),
                           ("FP8+head decode / our BF16 decode", "decode FP8+head", "decode BF16"),
                           ("FP8 training / our BF16 training", "train FP8", "train BF16")):
        ratios = summary([s[num] / s[den] for s in samples])
        report["ours_vs_ours"].append({"name": name, "ratio": ratios})
        print(f"{name:<34} {ratios['median']:.2f}x [{ratios['min']:.2f}-{ratios['max']:.2f}]")

    print("PyTorch bf16 autocast per round, GOMP_SPINCOUNT=1000 / default: " +
          ", ".join(f"{s['train bf16_autocast GOMP_SPINCOUNT=1000']:.1f} / "
                    f"{s['train bf16_autocast GOMP_SPINCOUNT=default']:.1f}" for s in samples) +
          " tokens/s (the faster counts)")
    report["bandwidth_gbs"] = bandwidth
    report["others_cpu_share"] = summary(METER.log)
    report["seconds"] = time.time() - started
    report["samples"] = samples
    others = report["others_cpu_share"]
    print(f"\nllama.cpp {report['llama_cpp']} (llama-cpp-python's vendored copy), torch {report['torch']} (PyPI); "
          f"{time.time() - started:.0f} s. Other processes' share of the CPUs while a measurement ran: "
          f"median {100 * others['median']:.0f}%, max {100 * others['max']:.0f}% (0 = a quiet machine; "
          f"per round, max: {', '.join(f'{100 * v:.0f}%' for v in values('others_cpu_share'))})")
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"written: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
