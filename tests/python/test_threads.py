"""Policies used from several Python threads at once.

The library releases the GIL during its calls and serializes calls per
context, so work on two policies from two threads must give exactly what the
same work gives done one after the other (bitwise: tokens, log-probs and the
deterministic metrics). Whether the threads really overlapped is recorded but
not asserted (timing is not a correctness property on a shared machine).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import fp8rl
from conftest import bits, deterministic_metrics, tiny_config

STEPS, GROUP = 4, 4
SAMPLING = fp8rl.SamplingParams(max_new_tokens=6, stop_at_eos=False)


def train(seed: int, context: fp8rl.Context | None = None, barrier: threading.Barrier | None = None):
    """A short GRPO run on a fresh policy; returns everything it produced, and its wall-clock span."""
    if barrier is not None:
        barrier.wait()
    start = time.perf_counter()
    produced = []
    with fp8rl.Policy.random(tiny_config(), seed=seed, recipe=fp8rl.Recipe.fp8_full(), context=context) as policy:
        policy.start_training(loss=fp8rl.LossConfig(group_size=GROUP), optimizer=fp8rl.OptimizerConfig(
            learning_rate=1e-2), seed=seed)
        for step in range(STEPS):
            prompts = [[8 + (seed + step + i // GROUP) % 20, 3] for i in range(4 * GROUP)]
            with policy.generate(prompts, SAMPLING) as rollouts:
                rewards = [float(np.mean(completion.tokens == 7)) for completion in rollouts]
                metrics = policy.train_step(rollouts, rewards=rewards)
                # the scores under the updated weights
                produced.append((rollouts.tokens.tolist(), bits(rollouts.logprobs), deterministic_metrics(metrics),
                                 bits(policy.score(rollouts))))
    return produced, (start, time.perf_counter())


def concurrently(*jobs):
    barrier = threading.Barrier(len(jobs))
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(job, barrier) for job in jobs]
        return [future.result() for future in futures]  # re-raises a thread's exception here


def test_two_policies_on_their_own_contexts_from_two_threads_equal_the_sequential_run():
    sequential = [train(1)[0], train(2)[0]]
    assert sequential[0] != sequential[1]  # different seeds: a mix-up between the threads would show
    results = concurrently(lambda barrier: train(1, barrier=barrier), lambda barrier: train(2, barrier=barrier))
    assert [produced for produced, _ in results] == sequential
    (start_a, end_a), (start_b, end_b) = (span for _, span in results)
    overlapped = max(start_a, start_b) < min(end_a, end_b)
    print(f"the two threads overlapped in time: {overlapped}")


def test_two_policies_sharing_one_context_from_two_threads_equal_the_sequential_run():
    # calls on one context are serialized by the library: still the same results
    with fp8rl.Context() as context:
        sequential = [train(3, context)[0], train(4, context)[0]]
        results = concurrently(lambda barrier: train(3, context, barrier), lambda barrier: train(4, context, barrier))
    assert [produced for produced, _ in results] == sequential


def test_each_thread_gets_its_own_error_message():
    # the library keeps the last error message per thread; the binding must read it on the thread that failed
    rounds = 200
    barrier = threading.Barrier(2)

    def fail(overrides, field):
        seen = []
        for _ in range(rounds):
            barrier.wait()
            try:
                tiny_config(**overrides).parameter_count()
            except fp8rl.InvalidArgumentError as error:
                seen.append(field in error.message)
        return seen

    with ThreadPoolExecutor(2) as pool:
        heads = pool.submit(fail, dict(num_key_value_heads=3), "num_key_value_heads")
        vocab = pool.submit(fail, dict(vocab_size=0), "vocab_size")
        assert heads.result() == [True] * rounds
        assert vocab.result() == [True] * rounds


def test_one_policy_generating_from_two_threads_gives_each_prompt_its_seeded_completion():
    # seeds alone decide a prompt's draws, so concurrent generate calls on one policy (serialized by its context)
    # give what a single call gives
    with fp8rl.Policy.random(tiny_config(), seed=5, recipe=fp8rl.Recipe.fp8_full()) as policy:
        prompts = [[1 + i, 2] for i in range(8)]
        with policy.generate(prompts, SAMPLING, seeds=range(8)) as together:
            expected = [(c.tokens.tolist(), bits(c.logprobs)) for c in together]

        def half(barrier, part):
            barrier.wait()
            chosen = range(part, 8, 2)
            results = []
            for _ in range(10):
                with policy.generate([prompts[i] for i in chosen], SAMPLING, seeds=list(chosen)) as rollouts:
                    results.append([(c.tokens.tolist(), bits(c.logprobs)) for c in rollouts])
            return results

        even, odd = concurrently(lambda barrier: half(barrier, 0), lambda barrier: half(barrier, 1))
    assert all(result == expected[0::2] for result in even)
    assert all(result == expected[1::2] for result in odd)
