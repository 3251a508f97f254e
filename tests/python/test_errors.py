"""Every error path of the public Python API.

Two kinds: errors the library finds (the exception carries its status and the
library's message, which starts with the C function's name) and bad inputs
the binding finds before anything reaches C (proved by spies on the library
functions, see conftest.forbid_c, and by the library's last error message
staying what it was).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import fp8rl
from fp8rl import _raw
from fp8rl._library import check_version, library
from fp8rl.errors import check
from conftest import SANITIZED, build_features, last_error_message, tiny_config, tiny_policy

# The contract, written out by hand from the header: status value, name, class, built-in base.
STATUSES = [
    (1, "FP8RL_ERROR_INVALID_ARGUMENT", fp8rl.InvalidArgumentError, ValueError),
    (2, "FP8RL_ERROR_OUT_OF_MEMORY", fp8rl.OutOfMemoryError, MemoryError),
    (3, "FP8RL_ERROR_BACKEND_UNAVAILABLE", fp8rl.BackendUnavailableError, RuntimeError),
    (4, "FP8RL_ERROR_NON_FINITE", fp8rl.NonFiniteError, ValueError),
    (5, "FP8RL_ERROR_IO", fp8rl.Fp8rlIOError, OSError),
    (6, "FP8RL_ERROR_CORRUPT_DATA", fp8rl.CorruptDataError, ValueError),
    (7, "FP8RL_ERROR_VERSION_MISMATCH", fp8rl.VersionMismatchError, RuntimeError),
    (8, "FP8RL_ERROR_UNSUPPORTED", fp8rl.UnsupportedError, NotImplementedError),
    (9, "FP8RL_ERROR_CUDA", fp8rl.CudaError, RuntimeError),
    (10, "FP8RL_ERROR_INTERNAL", fp8rl.InternalError, RuntimeError),
]

SAMPLING = fp8rl.SamplingParams(max_new_tokens=3, stop_at_eos=False)


def from_library(error: fp8rl.Fp8rlError, function: str) -> None:
    """Asserts the exception carries the library's own message, from `function`."""
    assert error.message.startswith(function + ":"), error.message
    assert error.message == last_error_message()
    assert str(error) == f"{error.message} [{error.status_name}]"


# ---- the exception classes


@pytest.mark.parametrize("status, name, cls, builtin", STATUSES)
def test_each_status_raises_its_own_class(status, name, cls, builtin):
    assert cls.status == status == getattr(_raw, name)
    assert issubclass(cls, fp8rl.Fp8rlError) and issubclass(cls, builtin)
    with pytest.raises(cls) as caught:
        check(status)
    assert type(caught.value) is cls
    assert caught.value.status == status and caught.value.status_name == name
    assert caught.value.message == (last_error_message() or "(no message)")


def test_ok_raises_nothing_and_an_unknown_status_raises_the_base_class():
    check(_raw.FP8RL_OK)
    with pytest.raises(fp8rl.Fp8rlError) as caught:
        check(1234)
    assert type(caught.value) is fp8rl.Fp8rlError
    assert caught.value.status == 1234 and caught.value.status_name == "FP8RL_STATUS_UNKNOWN"


def test_library_errors_of_rarely_reached_statuses_map_to_their_classes():
    # Real library failures, through the raw layer, for statuses the idiomatic layer rarely meets.
    lib = library()
    source, destination = (ctypes.c_uint16 * 2)(), (ctypes.c_uint8 * 2)()
    with pytest.raises(fp8rl.UnsupportedError) as caught:  # BF16 -> E4M3 is not a supported pair
        check(lib.fp8rl_convert(source, _raw.FP8RL_DTYPE_BF16, destination, _raw.FP8RL_DTYPE_E4M3, 2, 1))
    from_library(caught.value, "fp8rl_convert")

    config = tiny_config()._to_c()
    config.struct_size = 3  # a struct from no header this library knows
    with pytest.raises(fp8rl.VersionMismatchError) as caught:
        check(lib.fp8rl_model_config_parameter_count(ctypes.byref(config), ctypes.byref(ctypes.c_int64())))
    from_library(caught.value, "fp8rl_model_config_parameter_count")
    assert "struct_size" in caught.value.message

    logp = (ctypes.c_float * 2)(float("nan"), 0.0)
    offsets = (ctypes.c_int64 * 2)(0, 2)
    options = _raw.fp8rl_importance_options()
    check(lib.fp8rl_importance_options_init(ctypes.byref(options)))
    metrics = _raw.fp8rl_mismatch_metrics()
    check(lib.fp8rl_mismatch_metrics_init(ctypes.byref(metrics)))
    with pytest.raises(fp8rl.NonFiniteError) as caught:
        check(lib.fp8rl_mismatch_metrics_compute(logp, logp, offsets, 1, ctypes.byref(options),
                                                 ctypes.byref(metrics)))
    from_library(caught.value, "fp8rl_mismatch_metrics_compute")


@pytest.mark.skipif(SANITIZED, reason="ASan aborts on an allocation this large instead of failing it")
def test_a_model_too_large_for_the_address_space_raises_out_of_memory():
    # At the config limits (2^24 vocabulary, hidden 2^16): 4 TiB of FP32 embeddings alone.
    with pytest.raises(fp8rl.OutOfMemoryError) as caught:
        fp8rl.Policy.random(tiny_config(vocab_size=2 ** 24, hidden_size=2 ** 16, num_attention_heads=64,
                                        num_key_value_heads=64))
    from_library(caught.value, "fp8rl_policy_create_random")


@pytest.mark.skipif(bool(build_features() & _raw.FP8RL_FEATURE_CUDA), reason="this build has the CUDA backend")
def test_cuda_backend_in_a_build_without_it_is_unavailable():
    with pytest.raises(fp8rl.BackendUnavailableError) as caught:
        fp8rl.Context(backend=fp8rl.Backend.CUDA)
    from_library(caught.value, "fp8rl_context_create")


def test_bad_context_options_name_the_field():
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        fp8rl.Context(num_threads=-1)
    from_library(caught.value, "fp8rl_context_create")
    assert "num_threads" in caught.value.message


# ---- bad inputs caught before C


def bad_prompts():
    tokens = np.arange(20, dtype=np.int32)
    return [
        ("float ids", [[1.0, 2.0]], "integers"),
        ("float array", np.ones((2, 3), dtype=np.float32), "integers"),
        ("bool ids", [[True, False]], "integers"),
        ("3-D array", np.zeros((2, 2, 2), dtype=np.int32), "2-D"),
        ("1-D array", np.zeros(3, dtype=np.int32), "2-D"),
        ("a 2-D row", [np.zeros((2, 2), dtype=np.int32)], "1-D"),
        ("non-contiguous row", [tokens[::2]], "contiguous"),
        ("non-contiguous 2-D", np.zeros((4, 6), dtype=np.int32)[:, ::2], "contiguous"),
        ("Fortran-ordered 2-D", np.asfortranarray(np.ones((3, 2), dtype=np.int32)), "contiguous"),
        ("negative id", [[1, 2], [3, -1, 4]], "prompts[1][1]: token id -1 outside the vocabulary [0, 32)"),
        ("id = vocab", [[1, 32]], "prompts[0][1]: token id 32 outside the vocabulary [0, 32)"),
        ("large id in 2-D", np.array([[1, 2], [3, 10 ** 9]]), "prompts[1][1]: token id 1000000000"),
        ("huge id", [[2 ** 64]], "integers"),
        ("ragged nesting", [[[1], 2]], "prompts[0]"),
        ("no prompts", [], "no sequences"),
        ("no rows", np.zeros((0, 3), dtype=np.int32), "no sequences"),
        ("empty prompt", [[1], []], "prompts[1]: empty sequence"),
        ("a string", "abc", "list of token-id sequences"),
        ("an int", 5, "list of token-id sequences"),
    ]


def test_the_spy_does_catch_a_call_that_reaches_c(policy, forbid_c):
    # the proof "before C" below rests on this: a call that does reach the library trips the spy
    calls = forbid_c("fp8rl_policy_generate")
    with pytest.raises(AssertionError, match="reached the library"):
        policy.generate([[1, 2]], SAMPLING)
    assert calls == ["fp8rl_policy_generate"]


@pytest.mark.parametrize("label, prompts, expected", bad_prompts(), ids=[case[0] for case in bad_prompts()])
def test_bad_prompts_raise_before_c(policy, forbid_c, label, prompts, expected):
    calls = forbid_c("fp8rl_policy_generate")
    before = last_error_message()
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.generate(prompts, SAMPLING)
    assert expected in caught.value.message
    assert caught.value.status == _raw.FP8RL_ERROR_INVALID_ARGUMENT
    assert calls == [] and last_error_message() == before


@pytest.mark.parametrize("seeds, expected", [
    ([1, 2], "one seed per prompt (3)"),
    ([1, 2, 3, 4], "one seed per prompt (3)"),
    ([1, -2, 3], "seeds[1]: seeds are unsigned"),
    ([1.0, 2.0, 3.0], "integers"),
    (np.zeros((3, 1), dtype=np.uint64), "one seed per prompt"),
    (np.arange(6, dtype=np.uint64)[::2], "contiguous"),
])
def test_bad_seeds_raise_before_c(policy, forbid_c, seeds, expected):
    calls = forbid_c("fp8rl_policy_generate")
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.generate([[1], [2], [3]], SAMPLING, seeds=seeds)
    assert expected in caught.value.message
    assert calls == []


@pytest.fixture
def training_policy():
    """A policy training with group size 2, and 4 generated rollouts (2 prompts x 2)."""
    with tiny_policy() as made:
        made.start_training(loss=fp8rl.LossConfig(group_size=2))
        with made.generate([[1, 2], [1, 2], [3, 4], [3, 4]], SAMPLING) as rollouts:
            yield made, rollouts


@pytest.mark.parametrize("kwargs, error, expected", [
    (dict(rewards=[0.0, 1.0, float("nan"), 0.0]), fp8rl.NonFiniteError, "rewards[2]: nan is not finite"),
    (dict(rewards=[0.0, float("inf"), 1.0, 0.0]), fp8rl.NonFiniteError, "rewards[1]: inf is not finite"),
    (dict(rewards=np.array([-np.inf, 0, 0, 0])), fp8rl.NonFiniteError, "rewards[0]"),
    (dict(rewards=[0.0, 1e39, 0.0, 0.0]), fp8rl.NonFiniteError, "not finite in float32"),
    (dict(advantages=[0.0, 0.0, 0.0, float("nan")]), fp8rl.NonFiniteError, "advantages[3]"),
    (dict(rewards=[0.0, 1.0, 0.0]), fp8rl.InvalidArgumentError, "rewards: expected 4 values"),
    (dict(rewards=np.zeros((4, 1))), fp8rl.InvalidArgumentError, "rewards: expected 4 values (1-D)"),
    (dict(rewards=np.zeros(8)[::2]), fp8rl.InvalidArgumentError, "contiguous"),
    (dict(rewards=["a", "b", "c", "d"]), fp8rl.InvalidArgumentError, "real numbers"),
    (dict(rewards=[0.0] * 4, advantages=[0.0] * 4), fp8rl.InvalidArgumentError, "exactly one of rewards"),
    (dict(), fp8rl.InvalidArgumentError, "exactly one of rewards"),
    (dict(rewards=[0.0] * 4, ref_logprobs=[0.0] * 5), fp8rl.InvalidArgumentError, "ref_logprobs: expected 12"),
])
def test_bad_step_inputs_raise_before_c(training_policy, forbid_c, kwargs, error, expected):
    policy, rollouts = training_policy
    calls = forbid_c("fp8rl_trainer_step")
    with pytest.raises(error) as caught:
        policy.train_step(rollouts, **kwargs)
    assert isinstance(caught.value, ValueError)
    assert expected in caught.value.message
    assert calls == []


def test_cross_entropy_takes_neither_rewards_nor_advantages(policy, forbid_c):
    policy.start_training(loss=fp8rl.LossConfig(kind=fp8rl.LossKind.CROSS_ENTROPY))
    calls = forbid_c("fp8rl_trainer_step")
    rollouts = policy.rollouts([[1, 2]], [[3, 4]])
    with pytest.raises(fp8rl.InvalidArgumentError, match="neither rewards nor advantages"):
        policy.train_step(rollouts, rewards=[1.0])
    assert calls == []


def test_train_step_wants_rollouts(policy, forbid_c):
    calls = forbid_c("fp8rl_trainer_step")
    with pytest.raises(fp8rl.InvalidArgumentError, match="expected Rollouts"):
        policy.train_step([[1, 2, 3]], rewards=[1.0])
    assert calls == []


@pytest.mark.parametrize("completions, logprobs, error, expected", [
    ([[3]], None, fp8rl.InvalidArgumentError, "1 completions for 2 prompts"),
    ([[3], [4, 40]], None, fp8rl.InvalidArgumentError, "completions[1][1]: token id 40"),
    ([[3], []], None, fp8rl.InvalidArgumentError, "completions[1]: empty sequence"),
    ([[3], [4, 5]], [[-1.0]], fp8rl.InvalidArgumentError, "1 arrays for 2 completions"),
    ([[3], [4, 5]], [[-1.0], [-1.0]], fp8rl.InvalidArgumentError, "logprobs[1]: 1 values for a completion of 2"),
    ([[3], [4, 5]], [[-1.0], [-1.0, float("nan")]], fp8rl.NonFiniteError, "logprobs[2]"),
])
def test_bad_rollouts_from_sequences(policy, completions, logprobs, error, expected):
    with pytest.raises(error) as caught:
        policy.rollouts([[1], [2]], completions, logprobs)
    assert expected in caught.value.message


@pytest.mark.parametrize("scales, error, expected", [
    (([1.0, 1.0], [1.0], [1.0, 1.0]), fp8rl.InvalidArgumentError, "attention_scales[1]: expected 2 values"),
    (([1.0, 1.0], [1.0, 1.0]), fp8rl.InvalidArgumentError, "expected (q, k, v)"),
    (([1.0, 1.0], [1.0, float("nan")], [1.0, 1.0]), fp8rl.NonFiniteError, "attention_scales[1][1]"),
])
def test_bad_attention_scales_raise_before_c(policy, forbid_c, scales, error, expected):
    calls = forbid_c("fp8rl_policy_set_attention_scales")
    with pytest.raises(error) as caught:
        policy.attention_scales = scales
    assert expected in caught.value.message
    assert calls == []


def test_non_positive_attention_scale_is_refused_by_the_library_and_changes_nothing(policy):
    before = policy.attention_scales
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.attention_scales = ([0.5, 0.5], [0.5, 0.0], [0.5, 0.5])
    from_library(caught.value, "fp8rl_policy_set_attention_scales")
    assert "layer 1" in caught.value.message
    assert [a.tolist() for a in policy.attention_scales] == [a.tolist() for a in before]


def test_more_eos_tokens_than_the_struct_holds_raise_before_c(forbid_c):
    calls = forbid_c("fp8rl_model_config_parameter_count")
    with pytest.raises(fp8rl.InvalidArgumentError, match="at most 8"):
        tiny_config(eos_token_ids=tuple(range(9))).parameter_count()
    assert calls == []


def test_next_seeds_wants_a_positive_count(policy):
    with pytest.raises(fp8rl.InvalidArgumentError):
        policy.next_seeds(0)
    policy.start_training()
    with pytest.raises(fp8rl.InvalidArgumentError):
        policy.next_seeds(0)


def test_bad_calibration_prompts_raise_before_c(policy, forbid_c):
    calls = forbid_c("fp8rl_policy_recalibrate_attention_scales")
    with pytest.raises(fp8rl.InvalidArgumentError, match=r"calibration_prompts\[0\]\[2\]"):
        policy.recalibrate([[1, 2, 99]])
    assert calls == []


def test_start_training_takes_a_config_or_fields_not_both(policy):
    with pytest.raises(fp8rl.InvalidArgumentError, match="not both"):
        policy.start_training(fp8rl.TrainerConfig(), seed=3)


# ---- errors the library finds


@pytest.mark.parametrize("overrides, field", [
    (dict(num_key_value_heads=3), "num_key_value_heads"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(hidden_size=65), "head_dim"),
    (dict(intermediate_size=-1), "intermediate_size"),
])
def test_bad_model_config_names_the_field(overrides, field):
    config = tiny_config(**overrides)
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        config.parameter_count()
    from_library(caught.value, "fp8rl_model_config_parameter_count")
    assert field in caught.value.message
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        fp8rl.Policy.random(config)
    from_library(caught.value, "fp8rl_policy_create_random")
    assert field in caught.value.message


@pytest.mark.parametrize("overrides, field", [
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(temperature=-1.0), "temperature"),
    (dict(top_k=-1), "top_k"),
    (dict(max_new_tokens=0), "max_new_tokens"),
])
def test_bad_sampling_params_name_the_field(policy, overrides, field):
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.generate([[1, 2]], fp8rl.SamplingParams(**overrides))
    from_library(caught.value, "fp8rl_policy_generate")
    assert field in caught.value.message


def test_prompt_longer_than_the_context_names_the_prompt(policy):
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.generate([[1], [1] * 33], SAMPLING)
    from_library(caught.value, "fp8rl_policy_generate")
    assert "prompt 1" in caught.value.message


@pytest.mark.parametrize("recipe, words", [
    (fp8rl.Recipe(attention=fp8rl.Precision.FP8), "KV cache"),
    (fp8rl.Recipe(linear=5), "linear"),
    (fp8rl.Recipe(bf16_first_layers=-1), "negative"),
])
def test_a_refused_recipe_keeps_the_previous_one(policy, recipe, words):
    before = policy.recipe
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.recipe = recipe
    from_library(caught.value, "fp8rl_policy_set_recipe")
    assert words in caught.value.message
    assert policy.recipe == before == fp8rl.Recipe.fp8_full()


@pytest.mark.parametrize("fields, words", [
    (dict(loss=fp8rl.LossConfig(clip_low=2.0)), "clip_low"),
    (dict(loss=fp8rl.LossConfig(group_size=0)), "group_size"),
    (dict(optimizer=fp8rl.OptimizerConfig(beta1=1.0)), "beta1"),
    (dict(micro_batch_tokens=0), "micro_batch_tokens"),
])
def test_bad_trainer_config_names_the_field_and_keeps_the_previous_trainer(policy, fields, words):
    policy.start_training(loss=fp8rl.LossConfig(group_size=2), seed=5)
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.start_training(**fields)
    from_library(caught.value, "fp8rl_trainer_create")
    assert words in caught.value.message
    assert policy.training == fp8rl.TrainerConfig(loss=fp8rl.LossConfig(group_size=2), seed=5)
    rollouts = policy.generate([[1], [1]], SAMPLING)
    assert policy.train_step(rollouts, rewards=[0.0, 1.0])["step"] == 1


def test_batch_not_a_multiple_of_the_group_size_changes_nothing(training_policy):
    policy, _ = training_policy
    with policy.generate([[1, 2]] * 3, SAMPLING) as rollouts:
        with pytest.raises(fp8rl.InvalidArgumentError) as caught:
            policy.train_step(rollouts, rewards=[0.0, 1.0, 0.0])
    from_library(caught.value, "fp8rl_trainer_step")
    assert "group_size" in caught.value.message
    with policy.generate([[1, 2]] * 2, SAMPLING) as rollouts:
        assert policy.train_step(rollouts, rewards=[0.0, 1.0])["step"] == 1  # the failed step did not count


def test_importance_weighting_needs_the_generators_logprobs(policy):
    policy.start_training(loss=fp8rl.LossConfig(importance=fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)))
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.train_step(policy.rollouts([[1, 2]], [[3, 4]]), rewards=[1.0])
    from_library(caught.value, "fp8rl_trainer_step")
    assert "logp_gen" in caught.value.message


def test_kl_penalty_needs_reference_logprobs(policy):
    policy.start_training(loss=fp8rl.LossConfig(kl_coefficient=0.1))
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.train_step(policy.rollouts([[1, 2]], [[3, 4]]), rewards=[1.0])
    from_library(caught.value, "fp8rl_trainer_step")
    assert "logp_ref" in caught.value.message


def test_bad_calibration_config_is_refused_and_changes_nothing(policy):
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.recalibrate([[1, 2, 3]], fp8rl.CalibrationConfig(percentile=0.0))
    from_library(caught.value, "fp8rl_policy_recalibrate_attention_scales")
    assert "percentile" in caught.value.message
    assert all(scale.tolist() == [1.0, 1.0] for scale in policy.attention_scales)


def test_copy_weights_from_itself_or_another_model_is_refused(policy):
    with pytest.raises(fp8rl.InvalidArgumentError, match="same policy"):
        policy.copy_weights_from(policy)
    with fp8rl.Policy.random(tiny_config(hidden_size=32)) as other:
        with pytest.raises(fp8rl.InvalidArgumentError, match="another model"):
            policy.copy_weights_from(other)


def test_save_in_an_unsupported_dtype_is_refused(policy, tmp_path):
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        policy.save(tmp_path / "model", dtype=_raw.FP8RL_DTYPE_E4M3)
    from_library(caught.value, "fp8rl_policy_save")


# ---- files


def test_loading_a_missing_folder_is_an_io_error(tmp_path):
    with pytest.raises(fp8rl.Fp8rlIOError) as caught:
        fp8rl.Policy.load(tmp_path / "missing")
    from_library(caught.value, "fp8rl_policy_load")
    assert isinstance(caught.value, OSError) and caught.value.status == _raw.FP8RL_ERROR_IO
    assert str(tmp_path / "missing") in caught.value.message


def test_loading_a_folder_without_weights_is_an_io_error(policy, tmp_path):
    policy.save(tmp_path / "model")
    os.remove(tmp_path / "model" / "model.safetensors")
    with pytest.raises(fp8rl.Fp8rlIOError, match="model.safetensors"):
        fp8rl.Policy.load(tmp_path / "model")


def test_loading_a_malformed_config_is_corrupt_data(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{not json")
    with pytest.raises(fp8rl.CorruptDataError) as caught:
        fp8rl.Policy.load(tmp_path / "model")
    from_library(caught.value, "fp8rl_policy_load")
    assert "config.json" in caught.value.message


def test_training_state_file_errors(policy, tmp_path):
    policy.start_training()
    with pytest.raises(fp8rl.Fp8rlIOError):
        policy.load_training_state(tmp_path / "missing.safetensors")
    with pytest.raises(fp8rl.Fp8rlIOError):
        policy.save_training_state(tmp_path / "no folder" / "state.safetensors")
    with fp8rl.Policy.random(tiny_config(hidden_size=32)) as other:
        other.save_training_state(tmp_path / "other.safetensors")
    with pytest.raises(fp8rl.InvalidArgumentError, match="another model"):
        policy.load_training_state(tmp_path / "other.safetensors")


def generation(policy: fp8rl.Policy):
    """Tokens and log-prob bits of a fixed-seed generation: a fingerprint of the weights, recipe and scales."""
    with policy.generate([[1, 2, 3], [4, 5]], fp8rl.SamplingParams(max_new_tokens=8, stop_at_eos=False),
                         seeds=[11, 12]) as rollouts:
        return rollouts.tokens.tolist(), rollouts.logprobs.view(np.uint32).tolist()


def test_a_corrupt_training_state_is_refused_and_changes_nothing(tmp_path):
    with tiny_policy(seed=1) as policy, tiny_policy(seed=2) as source:
        # the file holds another policy's (trained) weights, so loading any of it would show
        source.start_training(loss=fp8rl.LossConfig(group_size=2), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
        with source.generate([[1, 2]] * 2, SAMPLING) as rollouts:
            source.train_step(rollouts, rewards=[0.0, 1.0])
        source.save_training_state(tmp_path / "state.safetensors")
        data = (tmp_path / "state.safetensors").read_bytes()
        (tmp_path / "truncated.safetensors").write_bytes(data[:len(data) // 2])

        policy.start_training()
        before = generation(policy)
        with pytest.raises(fp8rl.CorruptDataError) as caught:
            policy.load_training_state(tmp_path / "truncated.safetensors")
        from_library(caught.value, "fp8rl_trainer_load_state")
        assert "truncated.safetensors" in caught.value.message
        assert generation(policy) == before
        # the intact file does change the policy (so the comparison above could fail)
        policy.load_training_state(tmp_path / "state.safetensors")
        assert generation(policy) == generation(source) != before


# ---- closed objects


def test_a_closed_policy_raises_on_every_use(tmp_path):
    policy = tiny_policy()
    rollouts = policy.generate([[1, 2]], SAMPLING)
    policy.close()
    for use in (lambda: policy.generate([[1, 2]], SAMPLING), lambda: policy.train_step(rollouts, rewards=[1.0]),
                lambda: policy.score(rollouts), lambda: policy.recipe, lambda: policy.attention_scales,
                lambda: policy.recompute_logprobs(rollouts), lambda: policy.save(tmp_path / "model"),
                lambda: policy.recalibrate([[1, 2]]), lambda: policy.start_training(),
                lambda: policy.parameter_count, lambda: policy.memory()):
        with pytest.raises(fp8rl.InvalidArgumentError, match="this policy is closed"):
            use()


def test_copying_from_a_closed_policy_raises(policy):
    other = tiny_policy(seed=2)
    other.close()
    with pytest.raises(fp8rl.InvalidArgumentError, match="closed"):
        policy.copy_weights_from(other)


def test_closed_rollouts_raise_on_every_use(policy):
    rollouts = policy.generate([[1, 2], [3]], SAMPLING)
    first = rollouts[0].tokens.tolist()
    rollouts.close()
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        rollouts[0]
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        rollouts.tokens
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        policy.train_step(rollouts, rewards=[1.0, 0.0])
    assert len(first) == 3


def test_closed_rollouts_raise_even_after_their_arrays_were_read(policy):
    # whether an earlier call happened to copy the flat arrays must not decide whether a closed batch works
    rollouts = policy.generate([[1, 2], [3]], SAMPLING)
    assert rollouts.tokens.size == 6
    rollouts.close()
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        rollouts.tokens
    with pytest.raises(fp8rl.InvalidArgumentError, match="rollouts are closed"):
        policy.score(rollouts)


def test_a_closed_context_raises():
    context = fp8rl.Context()
    context.close()
    with pytest.raises(fp8rl.InvalidArgumentError, match="this context is closed"):
        context.backend
    with pytest.raises(fp8rl.InvalidArgumentError, match="this context is closed"):
        fp8rl.Policy.random(tiny_config(), context=context)


def test_closing_a_shared_context_with_an_open_policy_raises_and_it_stays_usable():
    context = fp8rl.Context()
    policy = fp8rl.Policy.random(tiny_config(), context=context)
    with pytest.raises(fp8rl.InvalidArgumentError) as caught:
        context.close()
    from_library(caught.value, "fp8rl_context_destroy")
    assert "1 policy" in caught.value.message
    assert context.backend == fp8rl.Backend.CPU
    with fp8rl.Policy.random(tiny_config(), seed=2, context=context) as second:
        assert len(second.generate([[1]], SAMPLING).tokens) == 3
    assert len(policy.generate([[1]], SAMPLING).tokens) == 3
    policy.close()
    context.close()
    context.close()  # idempotent


def test_a_recipe_refused_at_creation_leaves_no_policy_behind():
    # Policy.random(recipe=...) creates the policy, then sets the recipe; when that fails the new policy must be
    # destroyed at once, not whenever the exception's traceback (which pytest keeps) is collected.
    context = fp8rl.Context()
    with pytest.raises(fp8rl.InvalidArgumentError, match="KV cache"):
        fp8rl.Policy.random(tiny_config(), context=context, recipe=fp8rl.Recipe(attention=fp8rl.Precision.FP8))
    context.close()  # would raise "1 policy is still alive"


def test_a_negative_policy_seed_raises_before_c(forbid_c):
    calls = forbid_c("fp8rl_policy_create_random")
    for seed in (-1, 2 ** 64):
        with pytest.raises(fp8rl.InvalidArgumentError, match="seed"):
            fp8rl.Policy.random(tiny_config(), seed=seed)
    assert calls == []


def test_index_out_of_range_is_an_index_error(policy):
    rollouts = policy.generate([[1], [2]], SAMPLING)
    with pytest.raises(IndexError):
        rollouts[2]
    with pytest.raises(IndexError):
        rollouts[-3]


# ---- loading the library


def run_python(code: str, **environment) -> subprocess.CompletedProcess:
    env = {**os.environ, **environment}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_fp8rl_library_naming_a_missing_file_fails_the_import(tmp_path):
    missing = tmp_path / "libfp8rl_missing.so"
    result = run_python(
        "import fp8rl", FP8RL_LIBRARY=str(missing))
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "does not name a file" in result.stderr and str(missing) in result.stderr


def test_fp8rl_library_naming_a_file_that_is_no_library_fails_the_import(tmp_path):
    fake = tmp_path / "libfp8rl.so"
    fake.write_text("not a shared library")
    result = run_python("import fp8rl", FP8RL_LIBRARY=str(fake))
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "cannot load" in result.stderr


def test_the_import_catches_the_error_as_import_error(tmp_path):
    result = run_python("try:\n import fp8rl\nexcept ImportError:\n print('caught')",
                        FP8RL_LIBRARY=str(tmp_path / "missing.so"))
    assert result.returncode == 0 and result.stdout.strip() == "caught"


def test_version_check():
    major, minor, patch = _raw.FP8RL_VERSION_MAJOR, _raw.FP8RL_VERSION_MINOR, _raw.FP8RL_VERSION_PATCH
    code = lambda a, b, c: a * 10000 + b * 100 + c  # noqa: E731 (the header's encoding)
    check_version(code(major, minor, patch), "lib")
    check_version(code(major, minor, patch + 5), "lib")  # a later patch
    check_version(code(major, minor + 1, 0), "lib")  # a later minor has every function
    if minor > 0:
        with pytest.raises(ImportError, match="need"):
            check_version(code(major, minor - 1, 99), "lib")  # an older minor may lack functions
    with pytest.raises(ImportError, match="lib is version"):
        check_version(code(major + 1, minor, patch), "lib")  # another major breaks the ABI
    if major > 0:
        with pytest.raises(ImportError):
            check_version(code(major - 1, minor, patch), "lib")


def test_the_loaded_library_is_the_one_named_and_reports_the_bindings_version():
    assert library().fp8rl_version() == _raw.FP8RL_VERSION
    assert fp8rl.__version__ == f"{_raw.FP8RL_VERSION_MAJOR}.{_raw.FP8RL_VERSION_MINOR}.{_raw.FP8RL_VERSION_PATCH}"
    if os.environ.get("FP8RL_LIBRARY"):
        assert str(fp8rl.library_path()) == os.environ["FP8RL_LIBRARY"]


def test_recalibrate_without_prompts_or_trainer_is_refused(policy, forbid_c):
    calls = forbid_c("fp8rl_trainer_create", "fp8rl_trainer_recalibrate")
    with pytest.raises(fp8rl.InvalidArgumentError, match="start_training"):
        policy.recalibrate()
    assert calls == [] and policy.training is None
