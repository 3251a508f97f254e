"""PPO iterations through the Python binding: the mini-batch steps, the host's
old log-probs, and the refusals, checked against the C library's contract."""
from __future__ import annotations

import numpy as np
import pytest

import fp8rl
from conftest import tiny_policy

PROMPTS = [[8 + (i // 2 * 3 + j) % 24 for j in range(4)] for i in range(8)]  # 4 prompts, 2 completions each


def start(policy: fp8rl.Policy, minibatches: int, learning_rate: float = 3e-2) -> None:
    truncated = fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)
    policy.start_training(loss=fp8rl.LossConfig(group_size=2, importance=truncated),
                          optimizer=fp8rl.OptimizerConfig(learning_rate=learning_rate),
                          minibatches=minibatches, micro_batch_tokens=16)


def rewards_of(rollouts: fp8rl.Rollouts) -> list:
    return [float(np.mean(c.tokens % 2 == 0)) for c in rollouts]


def test_four_minibatch_steps_move_the_ratio_from_the_second_on():
    with tiny_policy() as policy:
        start(policy, 4)
        with policy.generate(PROMPTS, fp8rl.SamplingParams(max_new_tokens=6, stop_at_eos=False)) as rollouts:
            metrics = policy.train_iteration(rollouts, rewards=rewards_of(rollouts))
    steps = metrics["minibatch_metrics"]
    assert [m["step"] for m in steps] == [1, 2, 3, 4]
    assert [m["sequences"] for m in steps] == [2, 2, 2, 2]
    assert steps[0]["ratio_min"] == steps[0]["ratio_max"] == 1.0
    assert steps[0]["old_policy_kl"] == 0.0
    assert all(m["ratio_min"] < m["ratio_max"] for m in steps[1:])
    assert metrics["minibatches"] == 4 and metrics["step"] == 4
    assert metrics["token_mult_prob_error"] == 1.0  # the FP8 generator's own log-probs: bit for bit
    assert metrics["loss"] == pytest.approx(sum(m["loss"] for m in steps) / 4, rel=1e-12)
    assert metrics["completion_tokens"] == sum(m["completion_tokens"] for m in steps)


def test_old_logprobs_are_used_as_given():
    with tiny_policy() as a, tiny_policy() as b:
        start(a, 2)
        start(b, 2)
        sampling = fp8rl.SamplingParams(max_new_tokens=5, stop_at_eos=False)
        with a.generate(PROMPTS, sampling) as ra, b.generate(PROMPTS, sampling) as rb:
            computed = a.train_iteration(ra, rewards=rewards_of(ra))
            given = b.train_iteration(rb, rewards=rewards_of(rb), old_logprobs=rb.logprobs)  # the same values
            assert [m["loss"] for m in computed["minibatch_metrics"]] == [m["loss"] for m in given["minibatch_metrics"]]
            shifted = rb.logprobs - np.float32(0.05)
            moved = b.train_iteration(rb, rewards=rewards_of(rb), old_logprobs=shifted)
            assert moved["token_mult_prob_error"] > 1.0
            bad = shifted.copy()
            bad[2] = np.nan
            with pytest.raises(fp8rl.NonFiniteError, match=r"old_logprobs\[2\]"):
                b.train_iteration(rb, rewards=rewards_of(rb), old_logprobs=bad)


def test_more_minibatches_than_sequences_is_refused_and_changes_nothing():
    with tiny_policy() as policy:
        start(policy, 9)
        with policy.generate(PROMPTS, fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)) as rollouts:
            with pytest.raises(fp8rl.InvalidArgumentError, match="minibatches is 9"):
                policy.train_iteration(rollouts, rewards=rewards_of(rollouts))
        assert policy.training is not None
