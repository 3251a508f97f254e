"""Configurations, files and the documented semantics of generation, scoring and training.

Oracles: the library's own ``fp8rl_*_init`` functions for the defaults; the
Hugging Face architecture for parameter counts and file layouts; an E4M3
decoder written here for the FP8 export; the header's formulas (calibration
scales, group-mean advantages, warm-up, cross-entropy loss); and runs that must
agree bit for bit (save/load, resume, score vs generate).
"""
from __future__ import annotations

import ctypes
import dataclasses
import inspect
import json
import os
import struct

import numpy as np
import pytest

import fp8rl
from fp8rl import _raw
from fp8rl._library import library
from fp8rl.errors import check
from conftest import bits, deterministic_metrics, tiny_config, tiny_policy

SAMPLING = fp8rl.SamplingParams(max_new_tokens=6, stop_at_eos=False)


def c_defaults(struct_type, init_name):
    struct = struct_type()
    check(getattr(library(), init_name)(ctypes.byref(struct)))
    return struct


def c_fields(struct) -> set:
    return {name for name, *_ in struct._fields_} - {"struct_size"}


def python_defaults(cls) -> dict:
    return {item.name: item.default for item in dataclasses.fields(cls) if item.default is not dataclasses.MISSING}


# ---- defaults: the dataclasses against the library's init functions


def assert_defaults_match(python: dict, struct, c_names: dict, special: set = frozenset()):
    """Every C field is covered (catches fields appended to the header) and each default equals the C one."""
    covered = {c_names.get(name, name) for name in python} | set(special)
    assert covered == c_fields(struct), "fields of the C struct and of the dataclass differ"
    for name, value in python.items():
        assert getattr(struct, c_names.get(name, name)) == value, name


def test_model_config_defaults_equal_the_librarys():
    struct = c_defaults(_raw.fp8rl_model_config, "fp8rl_model_config_init")
    defaults = python_defaults(fp8rl.ModelConfig)
    required = {item.name for item in dataclasses.fields(fp8rl.ModelConfig)} - set(defaults)
    assert all(getattr(struct, name) == 0 for name in required)  # "all sizes 0 (to be set)"
    eos = defaults.pop("eos_token_ids")
    assert eos == () and struct.num_eos_token_ids == 0
    dense = defaults.pop("mlp_only_layers")
    assert dense == () and struct.num_mlp_only_layers == 0
    assert_defaults_match(defaults, struct, {}, special=required | {"eos_token_ids", "num_eos_token_ids",
                                                                     "mlp_only_layers", "num_mlp_only_layers"})


def test_recipe_defaults_equal_the_librarys():
    struct = c_defaults(_raw.fp8rl_recipe, "fp8rl_recipe_init")
    assert_defaults_match(python_defaults(fp8rl.Recipe), struct, {})
    assert bytes(fp8rl.Recipe()._to_c()) == bytes(struct)
    assert fp8rl.Recipe.bf16() == fp8rl.Recipe()


def test_sampling_defaults_equal_the_librarys():
    struct = c_defaults(_raw.fp8rl_sampling_options, "fp8rl_sampling_options_init")
    defaults = python_defaults(fp8rl.SamplingParams)
    assert defaults.pop("stop_token_ids") == () and not struct.stop_token_ids and struct.num_stop_token_ids == 0
    assert_defaults_match(defaults, struct, {}, special={"stop_token_ids", "num_stop_token_ids"})
    written, _ = fp8rl.SamplingParams()._to_c()
    assert bytes(written) == bytes(struct)


def test_trainer_defaults_equal_the_librarys():
    struct = c_defaults(_raw.fp8rl_trainer_options, "fp8rl_trainer_options_init")
    loss, optimizer = python_defaults(fp8rl.LossConfig), python_defaults(fp8rl.OptimizerConfig)
    trainer = {name: value for name, value in python_defaults(fp8rl.TrainerConfig).items()}
    # the embedded option structs, each with its own struct_size and its own dataclass
    assert_defaults_match({**loss, **optimizer, **trainer}, struct, {"kind": "loss"},
                          special={"importance", "calibration"})
    assert struct.importance.struct_size == ctypes.sizeof(_raw.fp8rl_importance_options)
    assert_defaults_match(python_defaults(fp8rl.ImportanceConfig), struct.importance, {})
    assert struct.calibration.struct_size == ctypes.sizeof(_raw.fp8rl_calibration_options)
    assert_defaults_match(python_defaults(fp8rl.CalibrationConfig), struct.calibration, {})
    assert fp8rl.LossConfig().importance == fp8rl.ImportanceConfig()
    assert fp8rl.TrainerConfig().calibration == fp8rl.CalibrationConfig()
    assert bytes(fp8rl.TrainerConfig()._to_c()) == bytes(struct)


def test_importance_defaults_equal_the_librarys_and_the_trainers():
    struct = c_defaults(_raw.fp8rl_importance_options, "fp8rl_importance_options_init")
    assert_defaults_match(python_defaults(fp8rl.ImportanceConfig), struct, {})
    assert bytes(fp8rl.ImportanceConfig()._to_c()) == bytes(struct)
    trainer = c_defaults(_raw.fp8rl_trainer_options, "fp8rl_trainer_options_init")
    assert bytes(trainer.importance) == bytes(struct)  # one default, whichever struct holds it
    assert struct.mode == fp8rl.ImportanceMode.OFF


def test_calibration_defaults_equal_the_librarys():
    struct = c_defaults(_raw.fp8rl_calibration_options, "fp8rl_calibration_options_init")
    assert_defaults_match(python_defaults(fp8rl.CalibrationConfig), struct, {})


def test_nested_configs_reach_the_embedded_c_structs():
    truncated = fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED, low=0.25, high=3.0)
    calibration = fp8rl.CalibrationConfig(percentile=99.0, margin=1.25, max_value=240.0)
    struct = fp8rl.TrainerConfig(loss=fp8rl.LossConfig(importance=truncated), calibration=calibration)._to_c()
    assert bytes(struct.importance) == bytes(truncated._to_c())
    assert bytes(struct.calibration) == bytes(calibration._to_c())


def test_output_structs_are_prepared_by_their_init_functions():
    for struct_type, init_name in [(_raw.fp8rl_train_metrics, "fp8rl_train_metrics_init"),
                                   (_raw.fp8rl_memory_report, "fp8rl_memory_report_init"),
                                   (_raw.fp8rl_mismatch_metrics, "fp8rl_mismatch_metrics_init")]:
        struct = struct_type.from_buffer_copy(b"\xab" * ctypes.sizeof(struct_type))
        check(getattr(library(), init_name)(ctypes.byref(struct)))
        expected = struct_type()
        expected.struct_size = ctypes.sizeof(struct_type)
        assert bytes(struct) == bytes(expected), init_name


def test_context_defaults_equal_the_librarys_except_the_backend():
    struct = c_defaults(_raw.fp8rl_context_options, "fp8rl_context_options_init")
    defaults = {name: parameter.default for name, parameter in inspect.signature(fp8rl.Context).parameters.items()}
    assert c_fields(struct) == set(defaults) | {"log_callback", "log_user_data"}
    for name in ("num_threads", "cuda_device", "log_level"):
        assert getattr(struct, name) == defaults[name], name
    # deliberately not the C default (AUTO): a Python policy runs on the CPU unless asked otherwise
    assert struct.backend == fp8rl.Backend.AUTO and defaults["backend"] == fp8rl.Backend.CPU


def test_enums_equal_the_headers_constants():
    for enum_type, prefix in [(fp8rl.Precision, "FP8RL_PRECISION_"), (fp8rl.FinishReason, "FP8RL_FINISH_"),
                              (fp8rl.ImportanceMode, "FP8RL_IMPORTANCE_"), (fp8rl.LossKind, "FP8RL_LOSS_"),
                              (fp8rl.ModelFamily, "FP8RL_MODEL_FAMILY_"), (fp8rl.LrSchedule, "FP8RL_LR_"),
                              (fp8rl.Backend, "FP8RL_BACKEND_"), (fp8rl.LogLevel, "FP8RL_LOG_")]:
        constants = {name[len(prefix):]: value for name, value in vars(_raw).items()
                     if name.startswith(prefix) and not name.endswith("FORCE_32BIT")}
        assert {member.name: member.value for member in enum_type} == constants, enum_type


# ---- configurations through a policy


def expected_parameter_count(config: fp8rl.ModelConfig) -> int:
    """The weights of a Hugging Face Llama/Qwen2/Qwen3 model, counted by hand."""
    hidden, layers = config.hidden_size, config.num_layers
    head_dim = config.head_dim or hidden // config.num_attention_heads
    q, kv = config.num_attention_heads * head_dim, config.num_key_value_heads * head_dim
    layer = hidden * q + 2 * hidden * kv + q * hidden + 3 * hidden * config.intermediate_size + 2 * hidden
    if config.attention_bias:
        layer += q + 2 * kv + (0 if config.family == fp8rl.ModelFamily.QWEN2 else hidden)  # Qwen2: no o bias
    if config.qk_norm:
        layer += 2 * head_dim
    embeddings = config.vocab_size * hidden * (1 if config.tie_word_embeddings else 2)
    return embeddings + layers * layer + hidden


CONFIGS = {
    "llama": tiny_config(),
    "llama tied, llama3 rope, eos": tiny_config(tie_word_embeddings=True, rope_theta=500000.0, rms_norm_eps=1e-6,
                                                rope_scaling=fp8rl.RopeScaling.LLAMA3, rope_factor=8.0,
                                                rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                                                rope_original_max_position_embeddings=16, bos_token_id=1,
                                                eos_token_ids=(2, 3)),
    "llama with bias": tiny_config(attention_bias=True),
    "qwen2": tiny_config(family=fp8rl.ModelFamily.QWEN2, attention_bias=True),
    "qwen3": tiny_config(family=fp8rl.ModelFamily.QWEN3, qk_norm=True),
    "qwen3, explicit head_dim": tiny_config(family=fp8rl.ModelFamily.QWEN3, qk_norm=True, head_dim=32),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_model_config_round_trips_through_a_policy(name):
    config = CONFIGS[name]
    with fp8rl.Policy.random(config, seed=3) as policy:
        assert policy.config == config
        assert isinstance(policy.config.family, fp8rl.ModelFamily)
        assert isinstance(policy.config.rope_scaling, fp8rl.RopeScaling)
        assert type(policy.config.tie_word_embeddings) is bool and type(policy.config.qk_norm) is bool
        assert type(policy.config.eos_token_ids) is tuple
        assert policy.parameter_count == config.parameter_count() == expected_parameter_count(config)


def test_the_tiny_models_parameter_count_by_hand():
    # embeddings 32x64, head 32x64, final norm 64, and per layer q 64x64, k and v 64x32, o 64x64, MLP 3x64x128,
    # two norms of 64
    assert tiny_config().parameter_count() == 2 * 32 * 64 + 64 + 2 * (4096 + 2 * 2048 + 4096 + 3 * 8192 + 128)


def test_recipe_round_trips_through_a_policy(policy):
    recipe = fp8rl.Recipe(linear=fp8rl.Precision.FP8, scale_format=fp8rl.ScaleFormat.POW2,
                          kv_cache=fp8rl.Precision.FP8, attention=fp8rl.Precision.FP8, bf16_first_layers=1,
                          bf16_last_layers=1, head=fp8rl.Precision.FP8)
    policy.recipe = recipe
    assert policy.recipe == recipe
    assert fp8rl.Recipe().head == fp8rl.Precision.BF16  # the published recipe keeps the head in BF16
    assert isinstance(policy.recipe.scale_format, fp8rl.ScaleFormat)
    assert fp8rl.Recipe.fp8() == fp8rl.Recipe(linear=fp8rl.Precision.FP8)
    assert fp8rl.Recipe.fp8_full(bf16_first_layers=1).bf16_first_layers == 1


def test_memory_report_follows_the_parameter_count(policy):
    params = policy.parameter_count
    report = policy.memory()
    assert set(report) == {"master_weights", "compute_weights", "gradients", "optimizer_state", "backward_weights",
                           "kv_cache"}
    assert report["master_weights"] == 4 * params  # FP32
    assert report["gradients"] == report["optimizer_state"] == report["backward_weights"] == 0
    assert 0 < report["compute_weights"] < report["master_weights"]  # E4M3 and BF16 copies
    policy.start_training()
    report = policy.memory()
    # The arena: FP32 buffers with tensors at 128-element offsets (at most 127 elements of padding each)
    assert 4 * params <= report["gradients"] < 4 * (params + 127 * 64)
    assert report["optimizer_state"] == 2 * report["gradients"]  # two AdamW moments
    assert report["master_weights"] == 4 * params + report["gradients"]  # the host copy and the arena
    assert report["backward_weights"] > 0


# ---- generation and scoring


def fingerprint(policy: fp8rl.Policy, sampling: fp8rl.SamplingParams = SAMPLING):
    with policy.generate([[1, 2, 3], [4, 5], [6]], sampling, seeds=[11, 12, 13]) as rollouts:
        return rollouts.tokens.tolist(), bits(rollouts.logprobs)


def test_a_seed_decides_its_prompts_completion_whatever_the_batch(policy):
    alone = policy.generate([[1, 2, 3]], SAMPLING, seeds=[7])
    batched = policy.generate([[4, 5], [1, 2, 3], [6]], SAMPLING, seeds=[1, 7, 2])
    one_slot = policy.generate([[4, 5], [1, 2, 3], [6]], dataclasses.replace(SAMPLING, batch_slots=1),
                               seeds=[1, 7, 2])
    small_steps = policy.generate([[4, 5], [1, 2, 3], [6]], dataclasses.replace(SAMPLING, max_tokens_per_step=1),
                                  seeds=[1, 7, 2])
    for other in (batched, one_slot, small_steps):
        assert other[1].tokens.tolist() == alone[0].tokens.tolist()
        assert bits(other[1].logprobs) == bits(alone[0].logprobs)
    assert policy.generate([[1, 2, 3]], SAMPLING, seeds=[8])[0].tokens.tolist() != alone[0].tokens.tolist()


def test_default_seeds_count_up_per_policy_and_come_from_the_trainer_while_training(policy):
    assert policy.generate([[1], [2]], SAMPLING).seeds.tolist() == [0, 1]
    assert policy.generate([[1]], SAMPLING).seeds.tolist() == [2]
    policy.start_training(seed=42)
    stream = policy.generate([[1], [2], [3]], SAMPLING).seeds.tolist()
    with tiny_policy(seed=9) as other:  # another policy's trainer with the same seed draws the same stream
        other.start_training(seed=42)
        assert other.next_seeds(3).tolist() == stream
        other.start_training(seed=43)
        assert other.next_seeds(3).tolist() != stream


def test_prompt_forms_are_equivalent(policy):
    expected = fingerprint(policy)
    # lists of lists, 1-D arrays of any integer dtype, each gives the same generation
    for prompts in ([np.array([1, 2, 3], dtype=np.uint8), np.array([4, 5], dtype=np.int64), [6]],
                    (np.array([1, 2, 3], dtype=np.int16), (4, 5), np.array([6], dtype=np.uint64))):
        with policy.generate(prompts, SAMPLING, seeds=np.array([11, 12, 13], dtype=np.int64)) as rollouts:
            assert (rollouts.tokens.tolist(), bits(rollouts.logprobs)) == expected
    square = policy.generate(np.array([[1, 2], [4, 5]], dtype=np.int32), SAMPLING, seeds=[11, 12])
    listed = policy.generate([[1, 2], [4, 5]], SAMPLING, seeds=[11, 12])
    assert square.tokens.tolist() == listed.tokens.tolist()


def test_greedy_generation_records_zero_logprobs(policy):
    rollouts = policy.generate([[1, 2], [3]], fp8rl.SamplingParams(temperature=0.0, max_new_tokens=5,
                                                                   stop_at_eos=False))
    assert np.all(rollouts.logprobs == 0.0)
    again = policy.generate([[1, 2], [3]], fp8rl.SamplingParams(temperature=0.0, max_new_tokens=5,
                                                                stop_at_eos=False), seeds=[99, 98])
    assert again.tokens.tolist() == rollouts.tokens.tolist()  # greedy ignores the seeds


@pytest.mark.parametrize("sampling", [
    fp8rl.SamplingParams(max_new_tokens=6, stop_at_eos=False),
    fp8rl.SamplingParams(temperature=0.7, top_k=10, top_p=0.9, max_new_tokens=6, stop_at_eos=False),
], ids=["plain", "temperature top_k top_p"])
def test_score_equals_the_generation_logprobs_bitwise(policy, sampling):
    rollouts = policy.generate([[1, 2, 3], [4, 5], [6]] * 2, sampling)
    assert bits(policy.score(rollouts, sampling)) == bits(rollouts.logprobs)
    hotter = dataclasses.replace(sampling, temperature=sampling.temperature * 1.5)
    assert bits(policy.score(rollouts, hotter)) != bits(rollouts.logprobs)


def test_recompute_logprobs_equals_the_generators_for_the_same_recipe_and_temperature(policy):
    sampling = fp8rl.SamplingParams(temperature=0.7, max_new_tokens=6, stop_at_eos=False)
    rollouts = policy.generate([[1, 2, 3], [4, 5]] * 2, sampling)
    policy.start_training(loss=fp8rl.LossConfig(temperature=0.7))
    assert bits(policy.recompute_logprobs(rollouts)) == bits(rollouts.logprobs)
    policy.start_training(loss=fp8rl.LossConfig(temperature=1.0))
    assert bits(policy.recompute_logprobs(rollouts)) != bits(rollouts.logprobs)


def test_score_of_given_completions_follows_the_sequences(policy):
    rollouts = policy.rollouts([[1, 2], [3]], [[4, 5, 6], [7]])
    scores = policy.score(rollouts)
    assert scores.shape == (4,) and scores.dtype == np.float32 and np.all(scores < 0)
    # the first completion scored alone gives the same numbers (row by row, batch-invariant)
    assert bits(policy.score(policy.rollouts([[1, 2]], [[4, 5, 6]]))) == bits(scores[:3])


# ---- training


EXPECTED_METRICS = {
    "step": int, "skipped": bool, "clipped": bool, "loss": float, "grad_norm": float, "learning_rate": float,
    "clip_fraction": float, "ratio_mean": float, "entropy": float, "kl_k1": float, "kl_k3": float,
    "reward_mean": float, "has_mismatch": bool, "token_mult_prob_error": float, "gen_kl_error": float,
    "is_weight_mean": float, "is_truncated_fraction": float, "is_masked_fraction": float, "sequences": int,
    "completion_tokens": int, "trained_tokens": int, "tokens_per_second": float, "generation_seconds": float,
    "recompute_seconds": float, "train_seconds": float, "recalibration_seconds": float,
    "recalibration_fraction": float, "ratio_min": float, "ratio_max": float, "old_policy_kl": float,
    "minibatches": int, "bytes_reduced": int, "bytes_gathered": int, "communication_seconds": float,
    # Mixture-of-Experts policies (test_moe_config.py): a dense one compares no expert choices
    "routing_choices": int, "routing_agreement": type(None), "router_aux_loss": float,
}
MISMATCH = ("token_mult_prob_error", "gen_kl_error", "is_weight_mean", "is_truncated_fraction", "is_masked_fraction")


def test_metrics_have_the_documented_keys_types_and_values(policy):
    policy.start_training(loss=fp8rl.LossConfig(group_size=2), optimizer=fp8rl.OptimizerConfig(learning_rate=3e-3))
    rollouts = policy.generate([[1, 2], [1, 2], [3], [3]], SAMPLING)
    metrics = policy.train_step(rollouts, rewards=[1.0, 0.0, 0.5, 0.0])
    assert set(metrics) == set(EXPECTED_METRICS)
    for key, kind in EXPECTED_METRICS.items():
        assert type(metrics[key]) is kind, key
    assert metrics["step"] == 1 and metrics["learning_rate"] == 3e-3
    assert metrics["sequences"] == 4 and metrics["completion_tokens"] == 24
    assert metrics["reward_mean"] == pytest.approx(0.375)
    assert metrics["generation_seconds"] == rollouts.generation_seconds > 0
    assert metrics["has_mismatch"] and metrics["ratio_mean"] == 1.0  # on-policy
    assert metrics["ratio_min"] == metrics["ratio_max"] == 1.0 and metrics["old_policy_kl"] == 0.0
    assert metrics["minibatches"] == 1
    assert metrics["kl_k1"] == metrics["kl_k3"] == 0.0  # no reference
    assert metrics["routing_choices"] == 0 and metrics["router_aux_loss"] == 0.0  # a dense policy
    assert policy.train_step(rollouts, rewards=[1.0, 0.0, 0.5, 0.0])["step"] == 2


def test_mismatch_metrics_are_none_without_generator_logprobs(policy):
    policy.start_training()
    metrics = policy.train_step(policy.rollouts([[1, 2]], [[3, 4]]), rewards=[1.0])
    assert metrics["has_mismatch"] is False
    assert all(metrics[key] is None for key in MISMATCH)
    with_logprobs = policy.rollouts([[1, 2]], [[3, 4]], logprobs=[[-3.0, -3.5]])
    metrics = policy.train_step(with_logprobs, rewards=[1.0])
    assert metrics["has_mismatch"] is True and all(type(metrics[key]) is float for key in MISMATCH)
    assert metrics["token_mult_prob_error"] > 1.0  # made-up log-probs differ from the policy's


def test_rewards_become_group_mean_advantages():
    # the header: A = r - mean of the group (no std normalization by default). Rewards [1, 0, 0, 0] and
    # [0, 0, 2, 0] in groups of 4 give the advantages below exactly, so both steps must match bit for bit.
    prompts = [[1, 2]] * 4 + [[3]] * 4
    results = []
    for kwargs in (dict(rewards=[1, 0, 0, 0, 0, 0, 2, 0]),
                   dict(advantages=[0.75, -0.25, -0.25, -0.25, -0.5, -0.5, 1.5, -0.5])):
        with tiny_policy() as policy:
            policy.start_training(loss=fp8rl.LossConfig(group_size=4), optimizer=fp8rl.OptimizerConfig(
                learning_rate=1e-2))
            metrics = policy.train_step(policy.generate(prompts, SAMPLING), **kwargs)
            results.append((metrics["loss"], metrics["grad_norm"], fingerprint(policy)))
            reward_mean = metrics["reward_mean"]
    assert results[0] == results[1]
    assert results[0][1] > 0
    assert reward_mean == 0.0  # "0 when advantages were given"


def test_warmup_raises_the_learning_rate_linearly(policy):
    policy.start_training(optimizer=fp8rl.OptimizerConfig(schedule=fp8rl.LrSchedule.WARMUP_CONSTANT, warmup_steps=4,
                                                          learning_rate=1e-2))
    rates = [policy.train_step(policy.generate([[1, 2]], SAMPLING), rewards=[1.0])["learning_rate"]
             for _ in range(6)]
    assert rates == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2, 1e-2, 1e-2])


def test_sft_lowers_the_cross_entropy(policy):
    policy.start_training(loss=fp8rl.LossConfig(kind=fp8rl.LossKind.CROSS_ENTROPY),
                          optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
    rollouts = policy.rollouts([[1, 2], [3, 4], [5]], [[7, 7, 8], [9, 10], [11, 12, 13]])
    # the loss is the mean over completion tokens of -logp (token mean), under the current weights
    expected_first = -float(np.mean(policy.recompute_logprobs(rollouts).astype(np.float64)))
    losses = [policy.train_step(rollouts)["loss"] for _ in range(8)]
    assert losses[0] == pytest.approx(expected_first, rel=1e-5)
    assert losses[-1] < 0.5 * losses[0]
    assert all(later < earlier for earlier, later in zip(losses, losses[1:]))


# ---- recalibration


def test_recalibrating_on_prompts_sets_scales_by_the_documented_formula(policy):
    assert all(scale.tolist() == [1.0, 1.0] for scale in policy.attention_scales)  # 1 until set
    prompts = [[1, 2, 3, 4, 5], [6, 7, 8]]
    assert policy.recalibrate(prompts) == 0.0
    first = policy.attention_scales
    assert all(np.all(scale > 0) and np.all(scale != 1.0) for scale in first)
    # scale = percentile * margin / max_value: twice the margin, or half the max value, doubles every scale.
    # The measuring pass runs with the current scales (FP8 attention), so each run starts from the same ones.
    ones = ([1.0, 1.0],) * 3
    for calibration in (fp8rl.CalibrationConfig(margin=2.1), fp8rl.CalibrationConfig(max_value=224.0)):
        policy.attention_scales = ones
        policy.recalibrate(prompts, calibration)
        for doubled, base in zip(policy.attention_scales, first):
            assert doubled == pytest.approx(2 * base, rel=1e-6)


def test_recalibrate_without_prompts_applies_the_last_steps_measured_scales(policy):
    policy.start_training(recalibrate_after_step=False, loss=fp8rl.LossConfig(group_size=2))
    policy.train_step(policy.generate([[1, 2, 3]] * 2, SAMPLING), rewards=[1.0, 0.0])
    assert all(scale.tolist() == [1.0, 1.0] for scale in policy.attention_scales)  # the step did not recalibrate
    assert policy.recalibrate() >= 0.0
    assert all(np.all(scale != 1.0) for scale in policy.attention_scales)


def test_frozen_attention_scales_stay_as_set_while_the_weights_move(policy):
    scales = ([0.5, 2.0], [0.25, 4.0], [0.125, 8.0])  # powers of two no calibration measures here
    policy.attention_scales = scales
    policy.start_training(freeze_attention_scales=True, minibatches=2, loss=fp8rl.LossConfig(group_size=2),
                          optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
    rollouts = policy.generate([[1, 2, 3]] * 4, SAMPLING)
    policy.train_iteration(rollouts, rewards=[1.0, 0.0, 0.0, 1.0])
    assert [scale.tolist() for scale in policy.attention_scales] == [list(scale) for scale in scales]
    assert bits(policy.recompute_logprobs(rollouts)) != bits(rollouts.logprobs)  # the weights moved


def test_a_step_recalibrates_by_default(policy):
    policy.start_training(loss=fp8rl.LossConfig(group_size=2))
    policy.train_step(policy.generate([[1, 2, 3]] * 2, SAMPLING), rewards=[1.0, 0.0])
    assert all(np.all(scale != 1.0) for scale in policy.attention_scales)


def test_attention_scales_can_be_set_and_change_fp8_generation(policy):
    before = fingerprint(policy)
    policy.attention_scales = ([0.5, 0.25], np.array([0.125, 2.0]), (4.0, 8.0))
    assert [scale.tolist() for scale in policy.attention_scales] == [[0.5, 0.25], [0.125, 2.0], [4.0, 8.0]]
    assert fingerprint(policy) != before


# ---- files


def train_a_little(policy: fp8rl.Policy, steps: int = 2) -> None:
    policy.start_training(loss=fp8rl.LossConfig(group_size=2), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
    for step in range(steps):
        with policy.generate([[1 + step, 2]] * 2 + [[3]] * 2, SAMPLING) as rollouts:
            policy.train_step(rollouts, rewards=[1.0, 0.0, 0.0, 1.0])


def safetensors(path) -> dict:
    """name -> numpy array, read by hand from the safetensors format (8-byte header length, JSON header, data)."""
    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length])
    dtypes = {"F32": np.float32, "BF16": np.uint16, "F8_E4M3": np.uint8}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        raw = np.frombuffer(data[8 + length + start:8 + length + end], dtype=dtypes[entry["dtype"]])
        tensors[name] = (entry["dtype"], raw.reshape(entry["shape"]))
    return tensors


def decode_e4m3(codes: np.ndarray) -> np.ndarray:
    """OCP E4M3 (e4m3fn) codes to float64: bias 7, 3 mantissa bits, subnormals below 2^-6, no infinities."""
    codes = codes.astype(np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent, mantissa = (codes >> 3) & 0xF, codes & 0x7
    normal = (1 + mantissa / 8) * np.exp2(exponent - 7.0)
    subnormal = mantissa / 8 * 2.0 ** -6
    values = sign * np.where(exponent == 0, subnormal, normal)
    return np.where((exponent == 15) & (mantissa == 7), np.nan, values)


PROJECTIONS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
               "mlp.up_proj", "mlp.down_proj"]


def test_save_in_f32_then_load_generates_identically(tmp_path):
    with tiny_policy() as policy:
        train_a_little(policy)
        policy.save(tmp_path / "model", fp8rl.SaveDtype.F32)
        config = json.loads((tmp_path / "model" / "config.json").read_text())
        assert config["hidden_size"] == 64 and config["num_hidden_layers"] == 2 and config["vocab_size"] == 32
        with fp8rl.Policy.load(tmp_path / "model") as loaded:
            assert loaded.config == policy.config
            assert loaded.recipe == fp8rl.Recipe()  # a loaded policy starts with the default recipe
            loaded.recipe = policy.recipe
            loaded.attention_scales = policy.attention_scales  # not part of a Hugging Face folder
            assert fingerprint(loaded) == fingerprint(policy)


def test_save_in_bf16_rounds_once(tmp_path):
    with tiny_policy() as policy:
        train_a_little(policy)
        policy.save(tmp_path / "first")  # BF16 by default
        with fp8rl.Policy.load(tmp_path / "first") as loaded:
            loaded.save(tmp_path / "second")
        first, second = safetensors(tmp_path / "first" / "model.safetensors"), safetensors(
            tmp_path / "second" / "model.safetensors")
        assert all(dtype == "BF16" for dtype, _ in first.values())
        assert first.keys() == second.keys()
        assert all(np.array_equal(first[name][1], second[name][1]) for name in first)


@pytest.mark.parametrize("scale_format", [fp8rl.ScaleFormat.FP32, fp8rl.ScaleFormat.POW2])
def test_export_fp8_writes_block_quantized_weights_of_the_master_weights(tmp_path, scale_format):
    with tiny_policy(recipe=fp8rl.Recipe.fp8_full(scale_format=scale_format)) as policy:
        train_a_little(policy)
        policy.export_fp8(tmp_path / "fp8")
        policy.save(tmp_path / "f32", fp8rl.SaveDtype.F32)
        context = policy.context._handle.pointer

        config = json.loads((tmp_path / "fp8" / "config.json").read_text())
        assert config["quantization_config"] == {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                                 "weight_block_size": [128, 128]}
        exported = safetensors(tmp_path / "fp8" / "model.safetensors")
        master = safetensors(tmp_path / "f32" / "model.safetensors")
        for name in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
                     "model.layers.1.input_layernorm.weight"):
            assert exported[name][0] == "BF16"
        for layer in range(2):
            for projection in PROJECTIONS:
                prefix = f"model.layers.{layer}.{projection}."
                dtype, codes = exported[prefix + "weight"]
                scale_dtype, scales = exported[prefix + "weight_scale_inv"]
                weights = master[prefix + "weight"][1]
                assert dtype == "F8_E4M3" and scale_dtype == "F32" and codes.shape == weights.shape
                assert scales.shape == (1, 1)  # ceil(out / 128) x ceil(in / 128) for these small matrices
                scale = float(scales[0, 0])
                amax = float(np.abs(weights).max())
                if scale_format == fp8rl.ScaleFormat.FP32:
                    assert scale == pytest.approx(amax / 448, rel=1e-6)  # scale = amax / fp8_max
                else:  # the smallest power of two with amax <= 448 * scale
                    assert np.frexp(scale)[0] == 0.5 and amax <= 448 * scale and amax > 224 * scale
                decoded = decode_e4m3(codes) * scale
                tolerance = np.maximum(np.abs(weights) * 2.0 ** -4, scale * 2.0 ** -10) * (1 + 1e-6)
                assert np.all(np.abs(decoded - weights) <= tolerance), prefix
                # and they are exactly what the library's block quantizer makes of the master weights
                expected_codes, expected_scales = quantize_128x128(context, weights, scale_format)
                assert np.array_equal(expected_codes, codes.ravel()) and bits(expected_scales) == bits(scales.ravel())


def quantize_128x128(context, weights: np.ndarray, scale_format: int):
    options = _raw.fp8rl_quantize_options()
    check(library().fp8rl_quantize_options_init(ctypes.byref(options)))
    options.layout = _raw.FP8RL_LAYOUT_BLOCK_128X128
    options.scale_format = scale_format
    rows, cols = weights.shape
    code_count, scale_count = ctypes.c_int64(), ctypes.c_int64()
    check(library().fp8rl_quantized_sizes(ctypes.byref(options), rows, cols, ctypes.byref(code_count),
                                          ctypes.byref(scale_count)))
    codes, scales = np.empty(code_count.value, np.uint8), np.empty(scale_count.value, np.float32)
    source = np.ascontiguousarray(weights, dtype=np.float32)
    check(library().fp8rl_quantize(context, ctypes.byref(options), source.ctypes.data, _raw.FP8RL_DTYPE_F32, rows,
                                   cols, codes.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), codes.size,
                                   scales.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), scales.size))
    return codes, scales


def test_an_fp8_export_loads_with_fp8_linears_and_exports_the_same_bytes(policy, tmp_path):
    # the header: an FP8 checkpoint loads with FP8 linear layers running the stored codes and scales
    policy.export_fp8(tmp_path / "first")
    with fp8rl.Policy.load(tmp_path / "first") as loaded:
        assert loaded.recipe == fp8rl.Recipe.fp8()
        loaded.export_fp8(tmp_path / "second")
    for file in sorted(os.listdir(tmp_path / "first")):
        assert (tmp_path / "first" / file).read_bytes() == (tmp_path / "second" / file).read_bytes(), file


def test_copy_weights_keeps_the_destinations_recipe():
    with tiny_policy(seed=1) as trained, fp8rl.Policy.random(tiny_config(), seed=5, recipe=fp8rl.Recipe.fp8()) as gen:
        train_a_little(trained)
        gen.copy_weights_from(trained)
        assert gen.recipe == fp8rl.Recipe.fp8()
        assert [s.tolist() for s in gen.attention_scales] == [s.tolist() for s in trained.attention_scales]
        trained.recipe = fp8rl.Recipe.fp8()
        assert fingerprint(gen) == fingerprint(trained)


def run_steps(policy: fp8rl.Policy, steps: range) -> list:
    produced = []
    for step in steps:
        prompts = [[8 + (3 * step + i // 4) % 20, 2] for i in range(8)]
        with policy.generate(prompts, SAMPLING) as rollouts:  # seeds from the trainer's stream
            rewards = [float(np.mean(completion.tokens == 7)) for completion in rollouts]
            metrics = policy.train_step(rollouts, rewards=rewards)
            produced.append((rollouts.tokens.tolist(), bits(rollouts.logprobs), deterministic_metrics(metrics)))
    return produced


TRUNCATED = fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)
TRAINER = fp8rl.TrainerConfig(loss=fp8rl.LossConfig(group_size=4, importance=TRUNCATED),
                              optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2), seed=17)


def test_resuming_a_training_state_continues_bit_for_bit(tmp_path):
    state = tmp_path / "state.safetensors"
    with tiny_policy(seed=1) as policy:
        policy.start_training(TRAINER)
        run_steps(policy, range(3))
        policy.save_training_state(state)
        saved_scales = [scale.tolist() for scale in policy.attention_scales]
        uninterrupted = run_steps(policy, range(3, 6))
    # a fresh policy with other weights and the default recipe: everything must come from the file
    with fp8rl.Policy.random(tiny_config(), seed=99) as resumed:
        resumed.start_training(TRAINER)
        resumed.load_training_state(state)
        assert resumed.recipe == fp8rl.Recipe.fp8_full()
        assert [scale.tolist() for scale in resumed.attention_scales] == saved_scales
        assert run_steps(resumed, range(3, 6)) == uninterrupted
    assert [produced[2]["step"] for produced in uninterrupted] == [4, 5, 6]
