#!/usr/bin/env python3
"""Data-parallel GRPO from Python over MPI: the task of grpo_loop.py, each rank on its own prompts.

    mpirun -np 2 python3 examples/python/mpi_grpo.py [--steps 150] [--seed 0]

Each rank draws its own prompts (its environment is seeded with seed + rank),
generates their completions and trains on them. The trainer sums the
gradients over the ranks and gathers the updated weights, so every rank holds
the same policy after every step (checked here through the policy's
fingerprint) and the metrics it returns are global: the batch is
--prompts x --group sequences per rank. Rank 0 prints the progress; every
rank exits 1 if the reward did not rise.

Needs mpi4py and libfp8rl_mpi (built beside libfp8rl where CMake finds MPI,
or named by FP8RL_MPI_LIBRARY); set FP8RL_LIBRARY to a built libfp8rl.so when
the package is not installed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import fp8rl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grpo_loop import FirstDigitEnvironment  # noqa: E402  (the single-process loop's task)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--prompts", type=int, default=4, help="distinct prompts per step and rank")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (GRPO group)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    with fp8rl.Communicator.from_mpi4py(comm) as communicator:
        context = fp8rl.Context(num_threads=1, communicator=communicator)  # the context keeps its reference
    rank, world = context.rank, context.world_size
    config = fp8rl.ModelConfig(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=128, max_position_embeddings=32)
    environment = FirstDigitEnvironment(prompt_digits=3, seed=args.seed + rank)
    sampling = fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)
    rewards_seen = []
    with fp8rl.Policy.random(config, seed=args.seed, recipe=fp8rl.Recipe.fp8_full(), context=context) as policy:
        policy.start_training(
            loss=fp8rl.LossConfig(group_size=args.group,
                                  importance=fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)),
            optimizer=fp8rl.OptimizerConfig(learning_rate=1e-3),
            seed=args.seed)
        if rank == 0:
            print(f"{world} ranks, {args.prompts * args.group} sequences each per step; policy: "
                  f"{policy.parameter_count} parameters, recipe {policy.recipe}, on {context.description}")
        for step in range(args.steps):
            prompts = [p for p in environment.prompts(args.prompts) for _ in range(args.group)]
            with policy.generate(prompts, sampling) as rollouts:  # seeds: the trainer's stream over all ranks
                rewards = [environment.reward(prompt, completion.tokens)
                           for prompt, completion in zip(prompts, rollouts)]
                metrics = policy.train_step(rollouts, rewards=rewards)
            fingerprints = comm.allgather(policy.fingerprint)
            if len(set(fingerprints)) != 1:
                raise RuntimeError(f"step {step}: the ranks' policies differ: {fingerprints}")
            rewards_seen.append(metrics["reward_mean"])  # over all ranks' sequences
            if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
                print(f"step {step:3d}  reward {metrics['reward_mean']:.3f}  loss {metrics['loss']:+.2e}  "
                      f"grad norm {metrics['grad_norm']:.3f}  "
                      f"token_mult_prob_error {metrics['token_mult_prob_error']:.6f}  "
                      f"communication {1e3 * metrics['communication_seconds']:.1f} ms, "
                      f"{metrics['bytes_reduced'] / 1e3:.0f} kB reduced, "
                      f"{metrics['bytes_gathered'] / 1e3:.0f} kB gathered", flush=True)
    context.close()
    first, last = np.mean(rewards_seen[:5]), np.mean(rewards_seen[-5:])
    if rank == 0:
        print(f"mean reward of the first 5 steps {first:.3f}, of the last 5 {last:.3f}; "
              f"every rank held the same policy after each of the {args.steps} steps")
    return 0 if last > first + 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
