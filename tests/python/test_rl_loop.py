"""The RL loop of examples/rl_loop.c, replayed through the Python binding.

The C example is the independent oracle: run with a file argument it writes
every completion (one line of token ids each, step after step). The Python
replay must produce the same 320 completions token for token, which holds only
if every prompt, seed, reward and training step on the way was the same; and
its mean reward must rise, as the C example's does.
"""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import fp8rl
from conftest import tiny_config

PROMPTS, GROUP, PROMPT_LEN, NEW, STEPS, TARGET = 4, 4, 4, 6, 20, 7
SEQS = PROMPTS * GROUP


def prompts_of_step(step: int) -> list:
    # rl_loop.c: prompts[i * PROMPT_LEN + j] = 8 + (step * 5 + (i / GROUP) * 3 + j) % 24 (GROUP copies of each)
    return [[8 + (step * 5 + (i // GROUP) * 3 + j) % 24 for j in range(PROMPT_LEN)] for i in range(SEQS)]


def reward(tokens: np.ndarray) -> float:
    # rl_loop.c: the fraction of completion tokens equal to TARGET (0 for an empty completion)
    return float(np.mean(tokens == TARGET)) if tokens.size else 0.0


@pytest.fixture(scope="module")
def python_run():
    """Runs the loop in Python: every step's completions (lists of ids), host-side mean reward and metrics."""
    completions, mean_rewards, metrics = [], [], []
    with fp8rl.Policy.random(tiny_config(), seed=1, recipe=fp8rl.Recipe.fp8_full()) as policy:
        truncated = fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)
        policy.start_training(loss=fp8rl.LossConfig(group_size=GROUP, importance=truncated),
                              optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
        sampling = fp8rl.SamplingParams(max_new_tokens=NEW, stop_at_eos=False)
        for step in range(STEPS):
            # generate's default seeds come from the trainer's stream, as fp8rl_trainer_next_seeds() in C
            with policy.generate(prompts_of_step(step), sampling) as rollouts:
                rewards = [reward(completion.tokens) for completion in rollouts]
                completions.extend(completion.tokens.tolist() for completion in rollouts)
                metrics.append(policy.train_step(rollouts, rewards=rewards))
            # as rl_loop.c sums them: float32 rewards accumulated in a double, in order
            mean_rewards.append(sum(float(np.float32(value)) for value in rewards) / SEQS)
    return completions, mean_rewards, metrics


@pytest.fixture(scope="module")
def c_run(tmp_path_factory):
    """Runs the C example: its completions (lists of ids) and its printed per-step rewards."""
    example = os.environ.get("FP8RL_RL_LOOP_EXAMPLE")
    if not example:
        pytest.skip("FP8RL_RL_LOOP_EXAMPLE is not set (the built examples/rl_loop.c)")
    path = tmp_path_factory.mktemp("c_loop") / "completions.txt"
    result = subprocess.run([example, str(path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"the C example failed (or did not learn):\n{result.stdout}\n{result.stderr}"
    completions = [[int(token) for token in line.split()] for line in path.read_text().splitlines()]
    rewards = [float(line.split()[3]) for line in result.stdout.splitlines() if line.startswith("step ")]
    return completions, rewards


def test_every_completion_equals_the_c_examples_token_for_token(python_run, c_run):
    python_completions, _, _ = python_run
    c_completions, _ = c_run
    assert len(c_completions) == STEPS * SEQS
    for index, (ours, theirs) in enumerate(zip(python_completions, c_completions)):
        assert ours == theirs, f"step {index // SEQS}, completion {index % SEQS}"
    assert len(python_completions) == len(c_completions)


def test_per_step_rewards_equal_the_ones_the_c_example_prints(python_run, c_run):
    _, python_rewards, _ = python_run
    _, c_rewards = c_run
    assert len(c_rewards) == STEPS
    # the C example prints "%.3f"
    assert [f"{value:.3f}" for value in python_rewards] == [f"{value:.3f}" for value in c_rewards]


def test_the_loop_learns(python_run):
    _, rewards, _ = python_run
    # the C example's own criterion (it exits 1 otherwise), and a steadier one over five steps
    assert rewards[-1] > rewards[0] + 0.3
    assert np.mean(rewards[-5:]) > np.mean(rewards[:5]) + 0.3


def test_library_reward_mean_is_the_hosts_mean_reward(python_run):
    _, rewards, metrics = python_run
    for step, (host, step_metrics) in enumerate(zip(rewards, metrics)):
        assert step_metrics["reward_mean"] == pytest.approx(host, abs=1e-6), f"step {step}"
        assert step_metrics["step"] == step + 1
        assert step_metrics["sequences"] == SEQS and step_metrics["completion_tokens"] == SEQS * NEW


def test_generation_and_training_numerics_agree_every_step(python_run):
    # The same FP8 recipe generates and trains, so the trainer's recomputed log-probs equal the generator's
    # bitwise: the mean of exp(|difference|) is exactly 1 and the k3 KL exactly 0, at every step.
    _, _, metrics = python_run
    for step, step_metrics in enumerate(metrics):
        assert step_metrics["has_mismatch"] is True, f"step {step}"
        assert step_metrics["token_mult_prob_error"] == 1.0, f"step {step}"
        assert step_metrics["gen_kl_error"] == 0.0, f"step {step}"
        assert step_metrics["is_truncated_fraction"] == 0.0, f"step {step}"
        assert step_metrics["skipped"] is False, f"step {step}"
