"""Communicator.from_collectives: data parallelism over the host's own collectives, ranks as threads.

The in-process collectives below play torch.distributed's part: every rank
posts its array, waits for all, and reads the others' (sums in rank order).
A 2-rank step must equal one process's step on the two ranks' prompts
together (same seeds, same rollouts; only the order of the gradient sums
differs) and leave both ranks bitwise the same policy.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import fp8rl

TINY = dict(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=32)
SAMPLING = fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)
#: Each rank's two groups of two; one process takes all four.
PROMPTS = [[[3, 5, 7]] * 2 + [[9, 4]] * 2, [[6, 2]] * 2 + [[8, 1, 11, 5]] * 2]


class ThreadGroup:
    """The shared state of `world` ranks running as threads."""

    def __init__(self, world: int):
        self.world, self.barrier, self.posted = world, threading.Barrier(world), [None] * world


class ThreadCollectives:
    """One rank's collectives within a ThreadGroup."""

    def __init__(self, group: ThreadGroup, rank: int, fail_in: str = ""):
        self.group, self.rank, self.fail_in = group, rank, fail_in

    def _exchange(self, name: str, array: np.ndarray) -> list:
        if name == self.fail_in:
            raise ConnectionError("peer gone")
        self.group.posted[self.rank] = array.copy()
        self.group.barrier.wait()
        arrays = list(self.group.posted)
        self.group.barrier.wait()
        return arrays

    def all_reduce_sum(self, array: np.ndarray) -> None:
        arrays = self._exchange("all_reduce_sum", array)
        total = arrays[0].copy()
        for other in arrays[1:]:
            total += other
        array[:] = total

    def all_gather(self, array: np.ndarray, counts: list) -> None:
        arrays = self._exchange("all_gather", array)
        offsets = np.cumsum([0] + counts)
        for r, other in enumerate(arrays):
            array[offsets[r]:offsets[r + 1]] = other[offsets[r]:offsets[r + 1]]

    def broadcast(self, array: np.ndarray, root: int) -> None:
        array[:] = self._exchange("broadcast", array)[root]


def run_ranks(world: int, body, fail_in: str = "") -> list:
    """body(rank, context) on `world` threads; their results (or exceptions) by rank."""
    group, results = ThreadGroup(world), [None] * world

    def rank_main(rank: int) -> None:
        try:
            communicator = fp8rl.Communicator.from_collectives(ThreadCollectives(group, rank, fail_in), rank, world,
                                                               name="threads")
            with communicator:
                context = fp8rl.Context(num_threads=1, communicator=communicator)
            with context:
                results[rank] = body(rank, context)
        except Exception as error:  # noqa: BLE001 -- compared by the test
            results[rank] = error

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def train(policy: fp8rl.Policy, prompts: list) -> dict:
    # Micro-batches of one sequence: the FP8 wgrad's 1x128 gradient tiles run
    # along tokens, so only micro-batches alike on 1 and 2 ranks group the
    # same tokens (with one micro-batch holding both ranks' tokens, the grad
    # norm differs at FP8 resolution, 4e-4 relative).
    policy.start_training(loss=fp8rl.LossConfig(group_size=2), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-3),
                          micro_batch_tokens=8)
    with policy.generate(prompts, SAMPLING) as rollouts:
        return policy.train_step(rollouts, rewards=[float(c.tokens.sum() % 3) for c in rollouts])


def test_rank_and_world_size_come_from_the_arguments():
    group = ThreadGroup(3)
    with fp8rl.Communicator.from_collectives(ThreadCollectives(group, 2), 2, 3) as communicator:
        assert (communicator.rank, communicator.world_size) == (2, 3)
        with fp8rl.Context(communicator=communicator) as context:
            assert (context.rank, context.world_size) == (2, 3)
            assert "host collectives" in context.description


def test_collectives_without_a_required_method_or_a_bad_rank_are_refused():
    with pytest.raises(fp8rl.InvalidArgumentError, match="no method all_reduce_sum"):
        fp8rl.Communicator.from_collectives(object(), 0, 1)
    with pytest.raises(fp8rl.InvalidArgumentError, match="rank"):
        fp8rl.Communicator.from_collectives(ThreadCollectives(ThreadGroup(2), 0), 2, 2)


def test_two_ranks_take_one_process_step_on_their_prompts_together():
    def rank_step(rank: int, context: fp8rl.Context):
        with fp8rl.Policy.random(fp8rl.ModelConfig(**TINY), seed=1 + rank, recipe=fp8rl.Recipe.fp8_full(),
                                 context=context) as policy:
            metrics = train(policy, PROMPTS[rank])
            return metrics, policy.fingerprint

    ranks = run_ranks(2, rank_step)
    for result in ranks:
        assert not isinstance(result, Exception), result
    (first, print_0), (second, print_1) = ranks
    assert print_0 == print_1
    assert first["token_mult_prob_error"] == second["token_mult_prob_error"] == 1.0
    assert first["loss"] == second["loss"] and first["grad_norm"] == second["grad_norm"]
    assert first["sequences"] == 8 and first["bytes_gathered"] > 0

    with fp8rl.Context(num_threads=1) as context, \
            fp8rl.Policy.random(fp8rl.ModelConfig(**TINY), seed=1, recipe=fp8rl.Recipe.fp8_full(),
                                context=context) as alone:
        whole = train(alone, PROMPTS[0] + PROMPTS[1])
    assert whole["sequences"] == 8
    assert first["completion_tokens"] == whole["completion_tokens"]
    assert first["loss"] == pytest.approx(whole["loss"], rel=1e-5, abs=1e-7)
    assert first["grad_norm"] == pytest.approx(whole["grad_norm"], rel=1e-5)


def test_a_failing_collective_fails_the_training_call_naming_it():
    def rank_step(rank: int, context: fp8rl.Context):
        with fp8rl.Policy.random(fp8rl.ModelConfig(**TINY), seed=1, context=context) as policy:
            policy.start_training(loss=fp8rl.LossConfig(group_size=2))

    for failure in run_ranks(2, rank_step, fail_in="broadcast"):  # the trainer starts from rank 0's weights
        assert isinstance(failure, fp8rl.DistributedError), failure
        assert "broadcast" in str(failure) and "ConnectionError: peer gone" in str(failure)
