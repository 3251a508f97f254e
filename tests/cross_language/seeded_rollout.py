#!/usr/bin/env python3
"""The Python version of seeded_rollout.c, through the idiomatic layer; same output format.

Usage: seeded_rollout.py bf16|fp8 (with FP8RL_LIBRARY and PYTHONPATH set as the tests set them).
"""
import sys

import fp8rl


def main(recipe_name):
    config = fp8rl.ModelConfig(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=128, max_position_embeddings=32)
    recipe = {"bf16": fp8rl.Recipe.bf16(), "fp8": fp8rl.Recipe.fp8_full()}[recipe_name]
    sampling = fp8rl.SamplingParams(temperature=0.8, max_new_tokens=8, stop_at_eos=False)
    with fp8rl.Policy.random(config, seed=1, recipe=recipe) as policy:
        with policy.generate([[1, 2, 3], [4, 5, 6, 7], [8]], sampling, seeds=[11, 12, 13]) as rollouts:
            for completion in rollouts:
                print("tokens:" + "".join(f" {t}" for t in completion.tokens))
                print("logprobs:" + "".join(f" {b:08x}" for b in completion.logprobs.view("uint32")))


if __name__ == "__main__":
    main(sys.argv[1])
