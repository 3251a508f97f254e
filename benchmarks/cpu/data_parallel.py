#!/usr/bin/env python3
"""Data-parallel scaling on the CPU: runs fp8rl_bench_data_parallel as
1 rank x 2 threads, 2 ranks x 1 thread (the same two cores, the same global
batch), 1 rank x 1 thread, and 3 ranks (memory), and prints:

  - the iteration seconds and the scaling efficiency, t(1 rank x 2 threads) /
    t(2 ranks x 1 thread) (above 1: two processes beat two threads);
  - the bytes rank 0 received in gathers per iteration with FP8 compute
    copies gathered, against an FP32 all-gather of the master weights;
  - each rank's optimizer-state bytes at 1, 2 and 3 ranks (1/N each).

    data_parallel.py BENCH_BINARY [--iterations N]

The launcher is Open MPI's mpirun with --oversubscribe (and
--allow-run-as-root as root); FP8RL_MPIEXEC replaces it (e.g. "mpiexec -n").
"""
import argparse
import json
import os
import shlex
import subprocess
import sys


def launcher(ranks):
    if os.environ.get("FP8RL_MPIEXEC"):
        return shlex.split(os.environ["FP8RL_MPIEXEC"]) + [str(ranks)]
    command = ["mpirun", "-n", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def run(binary, ranks, threads, recipe, iterations):
    command = launcher(ranks) + [binary, "--threads", str(threads), "--recipe", recipe,
                                 "--iterations", str(iterations)]
    # One OpenBLAS/OpenMP thread per rank: the library's own threads are the ones measured.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()

    print("fp8rl data parallelism on the CPU (one GRPO iteration: 16 prompts x 4 completions, FP8 recipe)")
    threads2 = run(args.binary, 1, 2, "fp8", args.iterations)
    ranks2 = run(args.binary, 2, 1, "fp8", args.iterations)
    single = run(args.binary, 1, 1, "fp8", args.iterations)
    print(f"  1 rank  x 1 thread : {single['iteration_seconds']:.3f} s/iteration")
    print(f"  1 rank  x 2 threads: {threads2['iteration_seconds']:.3f} s/iteration")
    print(f"  2 ranks x 1 thread : {ranks2['iteration_seconds']:.3f} s/iteration "
          f"({ranks2['communication_seconds']:.3f} s in collectives)")
    print(f"  scaling efficiency t(1x2)/t(2x1) = {threads2['iteration_seconds'] / ranks2['iteration_seconds']:.2f}; "
          f"speed-up over one thread t(1x1)/t(2x1) = {single['iteration_seconds'] / ranks2['iteration_seconds']:.2f}")

    print("bytes rank 0 received in gathers per iteration, 2 ranks:")
    for recipe, result in (("fp8", ranks2), ("bf16", run(args.binary, 2, 1, "bf16", 1))):
        gathered, fp32 = result["bytes_gathered"], result["fp32_master_gather_bytes"]
        print(f"  {recipe:4s}: {gathered:>10d} B, {gathered / fp32:.3f} of an FP32 master gather ({fp32:.0f} B); "
              f"reduce-scatter sent {result['bytes_reduced']} B")

    print("optimizer state per rank (bytes):")
    for ranks, result in ((1, single), (2, ranks2), (3, run(args.binary, 3, 1, "fp8", 1))):
        shards = result["optimizer_state_bytes"]
        whole = single["optimizer_state_bytes"][0]
        print(f"  {ranks} rank(s): {shards}  (largest {max(shards) / whole:.3f} of one rank's, 1/N = {1 / ranks:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
