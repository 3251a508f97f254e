"""Qwen3-MoE through the Python binding: the ModelConfig fields, the parameter counts, errors, generation.

Oracles: parameter counts written out by hand from Hugging Face's
Qwen3MoeForCausalLM (and the published Qwen3-30B-A3B totals); the library's
documented refusals; generation and scoring agreeing bit for bit.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fp8rl
from fp8rl import _raw
from conftest import bits, tiny_config

#: Layers 0 and 2 sparse (4 experts of width 32, top 2), layer 1 dense (intermediate_size 128).
MOE = tiny_config(family=fp8rl.ModelFamily.QWEN3_MOE, qk_norm=True, num_layers=3, num_experts=4,
                  num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=(1,),
                  router_aux_loss_coef=0.0, eos_token_ids=(2,))

#: Qwen3-30B-A3B's config.json.
QWEN3_30B_A3B = fp8rl.ModelConfig(
    family=fp8rl.ModelFamily.QWEN3_MOE, vocab_size=151936, hidden_size=2048, num_layers=48, num_attention_heads=32,
    num_key_value_heads=4, head_dim=128, intermediate_size=6144, max_position_embeddings=40960, rms_norm_eps=1e-6,
    rope_theta=1000000.0, qk_norm=True, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768,
    norm_topk_prob=True, bos_token_id=151643, eos_token_ids=(151645,))

SAMPLING = fp8rl.SamplingParams(max_new_tokens=6, stop_at_eos=False)


def test_the_tiny_moe_parameter_counts_by_hand():
    # embeddings and head 2x32x64, final norm 64; per layer q and o 64x64, k and v 64x32, two norms of 64,
    # q/k head norms of 16; layer 1: MLP 3x64x128; layers 0 and 2: router 4x64 and 4 (active: 2) experts 3x64x32
    attention = 2 * 4096 + 2 * 2048 + 2 * 64 + 2 * 16
    common = 2 * 32 * 64 + 64 + 3 * attention + 3 * 64 * 128
    assert MOE.parameter_count() == common + 2 * (4 * 64 + 4 * 3 * 64 * 32) == 115744
    assert MOE.active_parameter_count() == common + 2 * (4 * 64 + 2 * 3 * 64 * 32) == 91168


def test_qwen3_30b_a3b_counts_by_hand_and_as_published():
    c = QWEN3_30B_A3B
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    attention = 2 * c.hidden_size * q + 2 * c.hidden_size * kv + 2 * c.hidden_size + 2 * c.head_dim
    expert = 3 * c.hidden_size * c.moe_intermediate_size
    router = c.num_experts * c.hidden_size
    common = 2 * c.vocab_size * c.hidden_size + c.hidden_size + c.num_layers * (attention + router)
    assert c.parameter_count() == common + c.num_layers * c.num_experts * expert == 30_532_122_624
    assert c.active_parameter_count() == common + c.num_layers * c.num_experts_per_tok * expert == 3_353_032_704


def test_decoder_sparse_step_makes_the_skipped_layers_dense():
    every_other = dataclasses.replace(MOE, mlp_only_layers=(), decoder_sparse_step=2)  # only layer 1 is sparse
    dense_mlp, sparse_mlp = 3 * 64 * 128, 4 * 64 + 4 * 3 * 64 * 32
    assert every_other.parameter_count() - MOE.parameter_count() == 2 * dense_mlp + sparse_mlp - (
        dense_mlp + 2 * sparse_mlp)


def test_a_dense_models_active_count_is_its_total():
    config = tiny_config(family=fp8rl.ModelFamily.QWEN3, qk_norm=True)
    assert config.active_parameter_count() == config.parameter_count()


def test_the_moe_config_round_trips_through_the_c_struct_and_a_policy():
    assert fp8rl.ModelConfig._from_c(MOE._to_c()) == MOE
    with fp8rl.Policy.random(MOE, seed=5) as policy:
        assert policy.config == MOE
        assert policy.config.family is fp8rl.ModelFamily.QWEN3_MOE
        assert type(policy.config.norm_topk_prob) is bool and type(policy.config.mlp_only_layers) is tuple
        assert policy.parameter_count == MOE.parameter_count()


@pytest.mark.parametrize("overrides, field", [
    (dict(num_experts_per_tok=5), "num_experts_per_tok"),  # k > experts
    (dict(num_experts=0), "num_experts"),
    (dict(moe_intermediate_size=0), "moe_intermediate_size"),
    (dict(decoder_sparse_step=0), "decoder_sparse_step"),
    (dict(mlp_only_layers=(3,)), "mlp_only_layers[0]"),  # not a layer of [0, 3)
    (dict(mlp_only_layers=(1, 1)), "mlp_only_layers"),
    (dict(router_aux_loss_coef=-1.0), "router_aux_loss_coef"),
    (dict(family=fp8rl.ModelFamily.QWEN3), "num_experts"),  # experts on a dense family
], ids=lambda value: value if isinstance(value, str) else None)
def test_bad_moe_values_raise_naming_the_field(overrides, field):
    with pytest.raises(fp8rl.InvalidArgumentError, match=fp8rl_field(field)):
        dataclasses.replace(MOE, **overrides).parameter_count()


def fp8rl_field(field: str) -> str:
    """A regular expression for the field's name as a word of the message."""
    return r"\b" + field.replace("[", r"\[").replace("]", r"\]")


def test_too_many_mlp_only_layers_raise_before_the_library(forbid_c):
    calls = forbid_c("fp8rl_model_config_parameter_count")
    too_many = dataclasses.replace(MOE, mlp_only_layers=tuple(range(_raw.FP8RL_MAX_MLP_ONLY_LAYERS + 1)))
    with pytest.raises(fp8rl.InvalidArgumentError, match="mlp_only_layers: at most 64 layers, got 65"):
        too_many.parameter_count()
    assert calls == []


def test_a_random_moe_policy_generates_and_scores_its_tokens_bitwise():
    with fp8rl.Policy.random(MOE, seed=5, recipe=fp8rl.Recipe.fp8()) as policy:
        rollouts = policy.generate([[1, 2, 3], [4, 5], [6]] * 2, SAMPLING)
        assert rollouts.tokens.shape == (6 * SAMPLING.max_new_tokens,)
        assert np.all((rollouts.tokens >= 0) & (rollouts.tokens < MOE.vocab_size))
        assert np.all(np.isfinite(rollouts.logprobs)) and np.all(rollouts.logprobs <= 0)
        # Routing is per token, so a sequence's log-probs do not depend on its batch neighbours.
        assert bits(policy.score(rollouts, SAMPLING)) == bits(rollouts.logprobs)


def test_recorded_expert_choices_cover_every_fed_token_and_repeat_across_batches():
    prompts = [[1, 2, 3], [4, 5], [6]]
    recording = dataclasses.replace(SAMPLING, record_experts=True)
    with fp8rl.Policy.random(MOE, seed=5) as policy:
        rollouts = policy.generate(prompts, recording, seeds=[10, 11, 12])
        for i, prompt in enumerate(prompts):
            experts = rollouts.experts(i)
            # every fed token (the last sampled one is never fed), both sparse layers, k = 2
            assert experts.shape == (len(prompt) + SAMPLING.max_new_tokens - 1, 2, 2)
            assert np.all((experts >= 0) & (experts < 4)) and np.all(experts[..., 0] != experts[..., 1])
            # Routing is per token: the same prompt alone is routed the same way.
            with policy.generate([prompt], recording, seeds=[10 + i]) as alone:
                assert np.array_equal(alone.experts(0), experts)
        assert policy.generate(prompts, SAMPLING).experts(0).shape == (0, 2, 2)
        with pytest.raises(IndexError):
            rollouts.experts(3)


def test_training_an_moe_policy_is_refused_as_unsupported():
    with fp8rl.Policy.random(MOE, seed=5) as policy:
        with pytest.raises(fp8rl.UnsupportedError):
            policy.start_training()
