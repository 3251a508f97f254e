"""Qwen3-MoE through the Python binding: the ModelConfig fields, the parameter counts, errors, generation, training.

Oracles: parameter counts written out by hand from Hugging Face's
Qwen3MoeForCausalLM (and the published Qwen3-30B-A3B totals); the library's
documented refusals; generation and scoring agreeing bit for bit; training in
the generator's recipe routing every fed token as the generator did (counts
worked out from the rollout lengths); HF's load-balancing loss, whose value
for perfectly balanced routing is worked out here from its formula.
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


# ---- training

PROMPTS = [[1, 2, 3], [1, 2, 3], [4, 5], [4, 5], [6], [6]]  # three prompts, groups of two
REWARDS = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0]
RECORDING = dataclasses.replace(SAMPLING, record_experts=True)
RECIPES = [pytest.param(fp8rl.Recipe.bf16(), id="bf16"), pytest.param(fp8rl.Recipe.fp8(), id="fp8")]


def moe_trainer(recipe: fp8rl.Recipe, learning_rate: float = 1e-2, **fields) -> fp8rl.Policy:
    """A fresh random MOE policy (seed 5) in `recipe`, training (by default with a learning rate that moves it)."""
    policy = fp8rl.Policy.random(MOE, seed=5, recipe=recipe)
    policy.start_training(loss=fp8rl.LossConfig(group_size=2),
                          optimizer=fp8rl.OptimizerConfig(learning_rate=learning_rate), **fields)
    return policy


def sparse_layers(config: fp8rl.ModelConfig) -> list:
    """Hugging Face's Qwen3MoeDecoderLayer rule, written out here."""
    return [layer for layer in range(config.num_layers)
            if layer not in config.mlp_only_layers and (layer + 1) % config.decoder_sparse_step == 0]


def expected_choices(rollouts: fp8rl.Rollouts, config: fp8rl.ModelConfig) -> int:
    """(fed token, sparse layer, slot) choices: every token of prompt + completion but the last is fed."""
    fed = sum(len(prompt) + len(rollouts[i].tokens) - 1 for i, prompt in enumerate(PROMPTS))
    return fed * len(sparse_layers(config)) * config.num_experts_per_tok


def balanced_aux_loss(config: fp8rl.ModelConfig) -> float:
    """HF's load_balancing_loss_func for perfectly balanced routing.

    It is E * sum over the k slots and E experts of (share of tokens whose slot-th choice is e) times (mean router
    probability of e): balanced, both are 1/E.
    """
    experts, k = config.num_experts, config.num_experts_per_tok
    return experts * sum((1 / experts) * (1 / experts) for _slot in range(k) for _expert in range(experts))


def test_the_sparse_layers_of_the_tiny_moe():
    assert sparse_layers(MOE) == [0, 2]


@pytest.mark.parametrize("recipe", RECIPES)
def test_training_in_the_generators_recipe_routes_every_fed_token_as_the_generator_did(recipe):
    # micro-batches of 8 tokens: the sequences' expert choices are split across several of them
    with moe_trainer(recipe, micro_batch_tokens=8) as policy:
        with policy.generate(PROMPTS, RECORDING) as rollouts:
            assert rollouts.records_experts
            metrics = policy.train_step(rollouts, rewards=REWARDS)
            # prompts of 12 tokens, completions of 6 x 6, the last token of each of the 6 sequences not fed;
            # sparse layers 0 and 2, k = 2
            assert metrics["routing_choices"] == expected_choices(rollouts, MOE) == (12 + 6 * 6 - 6) * 2 * 2
        assert metrics["routing_agreement"] == 1.0
        assert np.isfinite(metrics["loss"]) and metrics["grad_norm"] > 0 and not metrics["skipped"]
        # The step changed the weights: the next generation routes and samples with them.
        with policy.generate(PROMPTS, RECORDING) as after:
            assert after.records_experts
            again = policy.train_step(after, rewards=REWARDS)
            assert again["routing_agreement"] == 1.0 and again["routing_choices"] == expected_choices(after, MOE)


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("learning_rate", [0.0, 1e-2])
def test_each_minibatch_of_an_iteration_takes_its_sequences_experts(recipe, learning_rate):
    with moe_trainer(recipe, learning_rate=learning_rate, minibatches=3) as policy:
        rollouts = policy.generate(PROMPTS, RECORDING)
        metrics = policy.train_iteration(rollouts, rewards=REWARDS)
    assert metrics["routing_choices"] == expected_choices(rollouts, MOE)
    # mini-batch m holds sequences 2m and 2m + 1
    steps = metrics["minibatch_metrics"]
    fed = [len(prompt) + len(rollouts[i].tokens) - 1 for i, prompt in enumerate(PROMPTS)]
    per_token = len(sparse_layers(MOE)) * MOE.num_experts_per_tok
    assert [step["routing_choices"] for step in steps] == [(fed[2 * m] + fed[2 * m + 1]) * per_token
                                                           for m in range(3)]
    agreements = [step["routing_agreement"] for step in steps]
    if learning_rate == 0:  # the weights stay the generator's: every mini-batch routes as it did
        assert agreements == [1.0, 1.0, 1.0] and metrics["routing_agreement"] == 1.0
    else:  # later mini-batches route with weights the earlier steps moved
        assert agreements[0] == 1.0 and all(0.0 < agreement <= 1.0 for agreement in agreements)
    # the iteration's agreement is over all of its choices
    assert metrics["routing_agreement"] == pytest.approx(
        sum(step["routing_agreement"] * step["routing_choices"] for step in steps) / metrics["routing_choices"])


def test_without_recorded_experts_nothing_is_compared():
    with moe_trainer(fp8rl.Recipe.bf16()) as policy:
        rollouts = policy.generate(PROMPTS, SAMPLING)
        assert not rollouts.records_experts
        metrics = policy.train_step(rollouts, rewards=REWARDS)
    assert metrics["routing_choices"] == 0 and metrics["routing_agreement"] is None
    assert metrics["router_aux_loss"] > 0  # measured whether or not the experts were recorded


@pytest.mark.parametrize("recorded", [False, True], ids=["not-recorded", "from-sequences"])
def test_routing_replay_without_recorded_experts_is_refused_before_c(forbid_c, recorded):
    with moe_trainer(fp8rl.Recipe.bf16(), routing_replay=True) as policy:
        rollouts = policy.generate(PROMPTS, SAMPLING)
        if recorded:  # the same completions, wrapped: such rollouts cannot carry experts
            rollouts = policy.rollouts(PROMPTS, [rollouts[i].tokens for i in range(len(PROMPTS))])
        calls = forbid_c("fp8rl_trainer_step", "fp8rl_trainer_iterate")
        for train in (policy.train_step, policy.train_iteration):
            with pytest.raises(fp8rl.InvalidArgumentError,
                               match=r"routing_replay .* recorded none: generate them with "
                                     r"SamplingParams\(record_experts=True\)"):
                train(rollouts, rewards=REWARDS)
        assert calls == []


def test_routing_replay_without_experts_is_also_refused_by_the_library():
    """The C library's own refusal, for a batch that reaches it without experts (the binding's check bypassed)."""
    with moe_trainer(fp8rl.Recipe.bf16(), routing_replay=True) as policy:
        rollouts = policy.generate(PROMPTS, SAMPLING)
        trainer = policy._trainer
        trainer._sparse_layers = 0  # as if dense: the binding passes no experts and lets C decide
        with pytest.raises(fp8rl.InvalidArgumentError, match="routing replay needs the generator's experts"):
            trainer.step(rollouts, REWARDS, None, None)


@pytest.mark.parametrize("recipe", RECIPES)
def test_routing_replay_with_recorded_experts_trains_as_the_routers_own_choice(recipe):
    # In the generator's recipe the recorded experts are the router's own choice, so replaying them changes nothing.
    with moe_trainer(recipe) as plain, moe_trainer(recipe, routing_replay=True) as replaying:
        rollouts = plain.generate(PROMPTS, RECORDING)
        free = plain.train_step(rollouts, rewards=REWARDS)
        replayed = replaying.train_step(rollouts, rewards=REWARDS)
        assert replayed["routing_agreement"] == free["routing_agreement"] == 1.0
        assert replayed["routing_choices"] == free["routing_choices"] == expected_choices(rollouts, MOE)
        for key in ("loss", "grad_norm", "entropy", "router_aux_loss"):
            assert replayed[key] == free[key], key
        assert plain.fingerprint == replaying.fingerprint


def test_routing_replay_trains_a_bf16_policy_on_fp8_generations():
    """The use routing replay is for: generation and training in different recipes."""
    with fp8rl.Policy.random(MOE, seed=5, recipe=fp8rl.Recipe.fp8()) as generator, \
            moe_trainer(fp8rl.Recipe.bf16(), routing_replay=True) as policy:
        rollouts = generator.generate(PROMPTS, RECORDING)
        metrics = policy.train_step(rollouts, rewards=REWARDS)
    assert metrics["routing_choices"] == expected_choices(rollouts, MOE)
    assert 0.0 < metrics["routing_agreement"] <= 1.0  # the BF16 router may choose otherwise than the FP8 one
    assert np.isfinite(metrics["loss"]) and not metrics["skipped"]


@pytest.mark.parametrize("recipe", RECIPES)
def test_an_untrained_router_is_about_balanced(recipe):
    k = MOE.num_experts_per_tok
    assert balanced_aux_loss(MOE) == pytest.approx(k)  # HF's loss is k when balanced
    with moe_trainer(recipe) as policy:
        rollouts = policy.generate(PROMPTS, RECORDING)
        aux = policy.train_step(rollouts, rewards=REWARDS)["router_aux_loss"]
    assert 0.5 * balanced_aux_loss(MOE) <= aux <= 2 * balanced_aux_loss(MOE)


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_aux_loss_coefficient_adds_its_share_to_the_loss(recipe):
    coef = 0.5
    with moe_trainer(recipe) as without, moe_trainer(recipe, router_aux_loss_coef=coef) as weighted:
        rollouts = without.generate(PROMPTS, RECORDING)
        plain = without.train_step(rollouts, rewards=REWARDS)
        with_aux = weighted.train_step(rollouts, rewards=REWARDS)
    assert plain["router_aux_loss"] > 0 and with_aux["router_aux_loss"] == plain["router_aux_loss"]
    assert with_aux["loss"] - plain["loss"] == pytest.approx(coef * plain["router_aux_loss"], rel=1e-6)
    assert with_aux["grad_norm"] != plain["grad_norm"]  # the load-balancing loss has a gradient of its own


def test_the_moe_trainer_options_round_trip_and_are_checked():
    config = fp8rl.TrainerConfig(router_aux_loss_coef=0.25, routing_replay=True)
    struct = config._to_c()
    assert struct.router_aux_loss_coef == 0.25 and struct.routing_replay == 1
    with fp8rl.Policy.random(MOE, seed=5) as policy:
        policy.start_training(config)
        assert policy.training == config
        with pytest.raises(fp8rl.InvalidArgumentError, match="router_aux_loss_coef"):
            policy.start_training(router_aux_loss_coef=-1.0)


def test_a_dense_policy_ignores_the_moe_options():
    with fp8rl.Policy.random(tiny_config(), seed=1) as policy:
        policy.start_training(routing_replay=True, router_aux_loss_coef=0.5)
        rollouts = policy.generate([[1, 2], [3]], RECORDING)
        assert not rollouts.records_experts
        metrics = policy.train_step(rollouts, rewards=[1.0, 0.0])
    assert metrics["routing_choices"] == 0 and metrics["routing_agreement"] is None
    assert metrics["router_aux_loss"] == 0.0
