"""Lifetimes: close(), with blocks and garbage collection free each C object once, in dependency order;
rollouts' per-completion arrays are zero-copy views that keep the library's memory alive.

Whether a policy was really destroyed is observed through the library itself:
fp8rl_context_destroy refuses while any policy on the context is alive ("N
policies still alive"), so a shared context that closes proves its policies
are gone.
"""
from __future__ import annotations

import ctypes
import gc
import logging
import weakref

import numpy as np
import pytest

import fp8rl
from fp8rl._library import library
from conftest import bits, tiny_config, tiny_policy

SAMPLING = fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)


def policies_alive(context: fp8rl.Context) -> int:
    """0 if the context could be closed (it then is), else the number of live policies the library reports."""
    try:
        context.close()
        return 0
    except fp8rl.InvalidArgumentError as error:
        return int(error.message.split(":")[1].split()[0])


# ---- close() and with blocks


def test_close_is_idempotent():
    policy = tiny_policy()
    rollouts = policy.generate([[1, 2]], SAMPLING)
    for _ in range(2):
        rollouts.close()
        policy.close()
    context = fp8rl.Context()
    context.close()
    context.close()


def test_a_with_block_closes_the_policy_and_its_own_context_even_on_error():
    with pytest.raises(RuntimeError, match="boom"):
        with tiny_policy() as policy:
            context = policy.context
            raise RuntimeError("boom")
    with pytest.raises(fp8rl.InvalidArgumentError, match="this policy is closed"):
        policy.generate([[1]], SAMPLING)
    with pytest.raises(fp8rl.InvalidArgumentError, match="this context is closed"):
        context.backend


def test_a_with_block_closes_a_context_and_rollouts():
    with fp8rl.Context() as context:
        assert context.backend == fp8rl.Backend.CPU
    with pytest.raises(fp8rl.InvalidArgumentError, match="closed"):
        context.num_threads
    with tiny_policy() as policy, policy.generate([[1, 2]], SAMPLING) as rollouts:
        assert len(rollouts[0].tokens) == 4
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        rollouts[0]


def test_closing_a_policy_on_a_shared_context_leaves_the_context_open():
    context = fp8rl.Context()
    with fp8rl.Policy.random(tiny_config(), context=context) as policy:
        assert policy.context is context
    assert context.backend == fp8rl.Backend.CPU
    with fp8rl.Policy.random(tiny_config(), context=context):
        pass
    assert policies_alive(context) == 0


def test_rollouts_outlive_their_policy_and_its_context():
    # the header: rollouts are copies, valid after the policy and its context are destroyed
    policy = tiny_policy()
    rollouts = policy.generate([[1, 2], [3, 4, 5]], SAMPLING, seeds=[1, 2])
    expected = [(rollouts[i].tokens.copy(), rollouts[i].logprobs.copy()) for i in range(2)]
    policy.close()
    gc.collect()
    for i, (tokens, logprobs) in enumerate(expected):
        assert rollouts[i].tokens.tolist() == tokens.tolist()
        assert bits(rollouts[i].logprobs) == bits(logprobs)
    assert rollouts.tokens.tolist() == np.concatenate([t for t, _ in expected]).tolist()


# ---- garbage collection


def test_garbage_collection_destroys_dropped_policies():
    context = fp8rl.Context()
    policies = [fp8rl.Policy.random(tiny_config(), seed=seed, context=context) for seed in range(3)]
    del policies[1:]
    gc.collect()
    assert policies_alive(context) == 1
    del policies
    gc.collect()
    assert policies_alive(context) == 0


def test_garbage_collection_destroys_a_policy_in_a_reference_cycle():
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context)
    policy.myself = policy  # only the cycle collector can free it
    del policy
    gc.collect()
    assert policies_alive(context) == 0


def test_a_dropped_training_policy_destroys_its_trainer_first():
    # fp8rl_policy_destroy refuses while a trainer uses the policy: freeing them in the wrong order would leave the
    # policy alive (and the context unclosable)
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context, recipe=fp8rl.Recipe.fp8_full())
    policy.start_training()
    with policy.generate([[1, 2]], SAMPLING) as rollouts:
        policy.train_step(rollouts, rewards=[1.0])
    del policy
    gc.collect()
    assert policies_alive(context) == 0


def test_a_trainer_keeps_its_policy_alive_until_it_is_destroyed():
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context)
    policy.start_training()
    trainer = policy._trainer  # the internal trainer object, held beyond the policy
    del policy
    gc.collect()
    assert policies_alive(context) == 1  # the trainer's handle holds the policy's
    trainer.close()
    assert policies_alive(context) == 0


def test_dropping_a_shared_context_object_does_not_free_it_under_its_policy():
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context)
    context_handle = weakref.ref(context._handle)
    del context
    gc.collect()
    assert context_handle() is not None
    assert len(policy.generate([[1]], SAMPLING).tokens) == 4
    del policy
    gc.collect()
    assert context_handle() is None  # and once the policy is gone, so is the context


def test_replacing_the_trainer_closes_the_old_one():
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context)
    policy.start_training()
    first = policy._trainer
    policy.start_training(seed=3)
    assert first._handle.closed and policy.training.seed == 3
    policy.close()
    assert policies_alive(context) == 0


# ---- zero-copy views


def completion_pointer(rollouts: fp8rl.Rollouts, index: int) -> int:
    """The address of completion `index`'s tokens inside the library, from the raw C API."""
    tokens = ctypes.POINTER(ctypes.c_int32)()
    fp8rl.errors.check(library().fp8rl_rollout_get(rollouts._handle.pointer, index, ctypes.byref(tokens), None, None,
                                                   None))
    return ctypes.cast(tokens, ctypes.c_void_p).value


def test_per_completion_arrays_are_read_only_views_of_the_librarys_memory(policy):
    rollouts = policy.generate([[1, 2], [3]], SAMPLING)
    view = rollouts[1].tokens
    assert view.__array_interface__["data"][0] == completion_pointer(rollouts, 1)
    assert rollouts[1].tokens.__array_interface__["data"][0] == completion_pointer(rollouts, 1)
    assert not view.flags.writeable and not rollouts[1].logprobs.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1
    # the flat arrays are copies (and read-only too)
    assert rollouts.tokens.__array_interface__["data"][0] != completion_pointer(rollouts, 0)
    assert not rollouts.tokens.flags.writeable and not rollouts.logprobs.flags.writeable


def counting_destroys(rollouts: fp8rl.Rollouts) -> list:
    """Wraps the rollouts' destroy function so the test sees each fp8rl_rollout_destroy call."""
    calls = []
    handle = rollouts._handle
    destroy = handle._destroy

    def counted(pointer):
        calls.append(pointer)
        return destroy(pointer)

    handle._destroy = counted
    return calls


def test_a_view_keeps_the_memory_alive_after_close_and_the_last_view_frees_it(policy):
    rollouts = policy.generate([[1, 2], [3]], SAMPLING, seeds=[4, 5])
    destroyed = counting_destroys(rollouts)
    handle = weakref.ref(rollouts._handle)
    view, logprobs = rollouts[0].tokens, rollouts[0].logprobs
    expected_tokens, expected_logprobs = view.tolist(), bits(logprobs)
    rollouts.close()
    gc.collect()
    assert destroyed == [] and handle() is not None
    # churn the allocator, then read the views (ASan builds would catch a use after free here)
    for seed in range(5):
        policy.generate([[1, 2, 3]] * 8, SAMPLING, seeds=np.arange(8) + seed).close()
    assert view.tolist() == expected_tokens and bits(logprobs) == expected_logprobs
    del view
    gc.collect()
    assert destroyed == []  # the log-prob view still holds the memory
    del logprobs
    gc.collect()
    assert len(destroyed) == 1 and handle() is None


def test_closing_rollouts_without_views_frees_them_at_once_and_only_once(policy):
    rollouts = policy.generate([[1, 2]], SAMPLING)
    destroyed = counting_destroys(rollouts)
    assert rollouts.tokens.size == 4  # the flat copy holds no library memory
    rollouts.close()
    assert len(destroyed) == 1
    rollouts.close()
    del rollouts
    gc.collect()
    assert len(destroyed) == 1


def test_dropped_rollouts_are_freed_by_garbage_collection(policy):
    rollouts = policy.generate([[1, 2]], SAMPLING)
    destroyed = counting_destroys(rollouts)
    del rollouts
    gc.collect()
    assert len(destroyed) == 1


# ---- flat arrays and per-completion views agree


def test_flat_arrays_equal_the_per_completion_views_and_finish_reasons_follow_the_stops(policy):
    stops = (5, 9)
    sampling = fp8rl.SamplingParams(max_new_tokens=8, stop_token_ids=stops, stop_at_eos=False)
    rollouts = policy.generate([[1 + i % 20, 2] for i in range(24)], sampling, seeds=range(100, 124))
    assert rollouts.offsets[0] == 0 and rollouts.offsets[-1] == rollouts.tokens.size == rollouts.logprobs.size
    assert rollouts.lengths.tolist() == [len(completion.tokens) for completion in rollouts]
    reasons = set()
    for i, completion in enumerate(rollouts):
        span = slice(rollouts.offsets[i], rollouts.offsets[i + 1])
        assert rollouts.tokens[span].tolist() == completion.tokens.tolist()
        assert bits(rollouts.logprobs[span]) == bits(completion.logprobs)
        assert rollouts.finish_reasons[i] == completion.finish_reason
        assert np.all(completion.logprobs <= 0)
        tokens = completion.tokens.tolist()
        # the documented semantics: a stop token ends the completion and is its last token
        if completion.finish_reason == fp8rl.FinishReason.STOP:
            assert tokens[-1] in stops and not set(tokens[:-1]) & set(stops)
        else:
            assert completion.finish_reason == fp8rl.FinishReason.LENGTH
            assert len(tokens) == 8 and not set(tokens) & set(stops)
        reasons.add(completion.finish_reason)
    assert reasons == {fp8rl.FinishReason.STOP, fp8rl.FinishReason.LENGTH}  # both paths were exercised


def test_a_completion_that_fills_the_context_ends_with_context_full(policy):
    rollouts = policy.generate([[1] * 30], fp8rl.SamplingParams(max_new_tokens=8, stop_at_eos=False))
    assert rollouts[0].finish_reason == fp8rl.FinishReason.CONTEXT_FULL
    # the last token is never fed back, so prompt + completion reach max_position_embeddings + 1 (as the C API's
    # tests pin down): 32 - 30 + 1
    assert len(rollouts[0].tokens) == 3
    # and such a completion is scored like any other
    assert bits(policy.score(rollouts, fp8rl.SamplingParams())) == bits(rollouts.logprobs)


def test_indexing_and_iteration(policy):
    rollouts = policy.generate([[1], [2], [3]], SAMPLING, seeds=[7, 8, 9])
    assert len(rollouts) == 3 and len(list(rollouts)) == 3
    assert rollouts[-1].tokens.tolist() == rollouts[2].tokens.tolist()
    assert rollouts.seeds.tolist() == [7, 8, 9] and rollouts.seeds.dtype == np.uint64
    assert rollouts.prompt_tokens.tolist() == [1, 2, 3] and rollouts.prompt_offsets.tolist() == [0, 1, 2, 3]


def test_rollouts_from_sequences_lay_prompts_and_completions_out_as_the_c_api_does():
    rollouts = fp8rl.Rollouts.from_sequences([[1, 2], [3]], [[4], [5, 6]], vocab_size=32)
    tokens, offsets, prompt_lengths = rollouts.sequences()
    assert tokens.tolist() == [1, 2, 4, 3, 5, 6]
    assert offsets.tolist() == [0, 3, 6] and prompt_lengths.tolist() == [2, 1]
    assert (tokens.dtype, offsets.dtype, prompt_lengths.dtype) == (np.int32, np.int64, np.int64)
    assert rollouts.tokens.tolist() == [4, 5, 6] and rollouts.offsets.tolist() == [0, 1, 3]
    assert rollouts[1].tokens.tolist() == [5, 6] and rollouts[1].logprobs is None
    assert rollouts[1].finish_reason is None and rollouts.logprobs is None and rollouts.finish_reasons is None
    assert rollouts.seeds is None and rollouts.generation_seconds == 0.0

    with_logprobs = fp8rl.Rollouts.from_sequences([[1, 2], [3]], [[4], [5, 6]], 32, logprobs=[[-0.5], [-1, -2]])
    assert with_logprobs.logprobs.tolist() == [-0.5, -1.0, -2.0] and with_logprobs.logprobs.dtype == np.float32
    assert with_logprobs[1].logprobs.tolist() == [-1.0, -2.0]


def test_generated_sequences_put_each_prompt_before_its_completion(policy):
    prompts = [[1, 2, 3], [4]]
    rollouts = policy.generate(prompts, SAMPLING)
    tokens, offsets, prompt_lengths = rollouts.sequences()
    for i, prompt in enumerate(prompts):
        assert tokens[offsets[i]:offsets[i + 1]].tolist() == prompt + rollouts[i].tokens.tolist()
    assert prompt_lengths.tolist() == [3, 1]


# ---- contexts


def test_context_properties():
    with fp8rl.Context(num_threads=1) as context:
        assert context.backend == fp8rl.Backend.CPU and context.num_threads == 1
        assert "CPU" in context.description
    with fp8rl.Context() as context:
        assert context.num_threads >= 1  # 0 asks for all hardware threads


def test_library_log_messages_reach_the_fp8rl_logger(caplog):
    with caplog.at_level(logging.DEBUG, logger="fp8rl"):
        fp8rl.Context(log_level=fp8rl.LogLevel.INFO).close()
        informed = [record for record in caplog.records if record.name == "fp8rl"]
        caplog.clear()
        fp8rl.Context(log_level=fp8rl.LogLevel.OFF).close()
        silent = [record for record in caplog.records if record.name == "fp8rl"]
    assert informed and all(record.levelno >= logging.INFO for record in informed)
    assert any("context created" in record.getMessage() for record in informed)
    assert silent == []


def test_a_policys_own_context_takes_the_num_threads_keyword(policy):
    assert policy.context.backend == fp8rl.Backend.CPU
    with fp8rl.Policy.random(tiny_config(), num_threads=1) as single:
        assert single.context.num_threads == 1
