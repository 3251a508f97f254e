#!/usr/bin/env python3
"""A complete GRPO loop driven from Python, with the environment written in Python.

The task: each prompt is a few random "digits" (tokens 10..19) followed by a
separator; the right answer is the prompt's first digit, repeated. The
environment, plain Python, draws prompts and scores completions (the fraction
of answer tokens that are right); the policy, a tiny random transformer with
FP8 linear layers, FP8 KV cache and FP8 attention, generates and trains on the
same numerics, recalibrating its scales after every step.

    python3 examples/python/grpo_loop.py [--steps 150] [--seed 0]

Prints the metrics every 10 steps, the greedy accuracy on held-out prompts
before and after training, and exits 1 if the reward did not rise.
Set FP8RL_LIBRARY to a built libfp8rl.so when the package is not installed.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import fp8rl

SEPARATOR, FIRST_DIGIT, DIGITS = 3, 10, 10


class FirstDigitEnvironment:
    """Prompts of digits; reward = fraction of the answer tokens equal to the prompt's first digit."""

    def __init__(self, prompt_digits: int, seed: int):
        self.prompt_digits = prompt_digits
        self.random = np.random.default_rng(seed)

    def prompts(self, count: int) -> list[list[int]]:
        digits = self.random.integers(FIRST_DIGIT, FIRST_DIGIT + DIGITS, size=(count, self.prompt_digits))
        return [row.tolist() + [SEPARATOR] for row in digits]

    def reward(self, prompt: list[int], answer: np.ndarray) -> float:
        return float(np.mean(answer == prompt[0])) if answer.size else 0.0


def greedy_accuracy(policy: fp8rl.Policy, prompts: list[list[int]], max_new_tokens: int) -> float:
    """Fraction of held-out prompts whose greedy answer is entirely right."""
    greedy = fp8rl.SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens, stop_at_eos=False)
    with policy.generate(prompts, greedy) as rollouts:
        return float(np.mean([np.all(c.tokens == p[0]) for p, c in zip(prompts, rollouts)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--prompts", type=int, default=8, help="distinct prompts per step")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (GRPO group)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    config = fp8rl.ModelConfig(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=128, max_position_embeddings=32)
    environment = FirstDigitEnvironment(prompt_digits=3, seed=args.seed)
    sampling = fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)
    with fp8rl.Policy.random(config, seed=args.seed, recipe=fp8rl.Recipe.fp8_full()) as policy:
        policy.start_training(
            loss=fp8rl.LossConfig(group_size=args.group,
                                  importance=fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)),
            optimizer=fp8rl.OptimizerConfig(learning_rate=1e-3),
            seed=args.seed)
        print(f"policy: {policy.parameter_count} parameters, recipe {policy.recipe}, on {policy.context.description}")
        held_out = FirstDigitEnvironment(prompt_digits=3, seed=args.seed + 1).prompts(100)
        accuracy_before = greedy_accuracy(policy, held_out, sampling.max_new_tokens)
        rewards_seen = []
        for step in range(args.steps):
            prompts = [p for p in environment.prompts(args.prompts) for _ in range(args.group)]
            with policy.generate(prompts, sampling) as rollouts:
                rewards = [environment.reward(prompt, completion.tokens)
                           for prompt, completion in zip(prompts, rollouts)]
                metrics = policy.train_step(rollouts, rewards=rewards)
            rewards_seen.append(metrics["reward_mean"])
            if step % 10 and step != args.steps - 1:
                continue
            print(f"step {step:3d}  reward {metrics['reward_mean']:.3f}  loss {metrics['loss']:+.2e}  "
                  f"grad norm {metrics['grad_norm']:.3f}  entropy {metrics['entropy']:.3f}  "
                  f"token_mult_prob_error {metrics['token_mult_prob_error']:.6f}  "
                  f"gen_kl_error {metrics['gen_kl_error']:.2e}  "
                  f"recalibration {100 * metrics['recalibration_fraction']:.1f}%", flush=True)
        accuracy_after = greedy_accuracy(policy, held_out, sampling.max_new_tokens)
    print(f"greedy accuracy on 100 held-out prompts: {accuracy_before:.2f} before, {accuracy_after:.2f} after")
    first, last = np.mean(rewards_seen[:5]), np.mean(rewards_seen[-5:])
    print(f"mean reward of the first 5 steps {first:.3f}, of the last 5 {last:.3f}")
    return 0 if last > first + 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
