//! Qwen3-MoE: the MoE fields of ModelConfig, the parameter counts (against
//! hand counts of Hugging Face's Qwen3MoeForCausalLM), errors naming the
//! field, generation, and the training refusal.

mod common;

use common::{assert_from_binding, assert_from_library, bits, cpu, expect_error, sampling, tiny_config};
use fp8rl::{
    ModelConfig, ModelFamily, Policy, Recipe, Sequences, Status, Trainer, TrainerOptions, MAX_MLP_ONLY_LAYERS,
};

/// Three layers: 0 and 2 sparse (4 experts of width 32, top 2), 1 dense (intermediate_size 128).
fn moe_config() -> ModelConfig {
    tiny_config()
        .family(ModelFamily::Qwen3Moe)
        .qk_norm(true)
        .num_layers(3)
        .num_experts(4)
        .num_experts_per_tok(2)
        .moe_intermediate_size(32)
        .norm_topk_prob(true)
        .mlp_only_layers(&[1])
        .router_aux_loss_coef(0.0)
}

#[test]
fn moe_defaults_come_from_the_library() {
    let config = ModelConfig::new();
    assert_eq!((config.num_experts, config.num_experts_per_tok, config.moe_intermediate_size), (0, 0, 0));
    assert!(!config.norm_topk_prob && config.mlp_only_layers.is_empty());
    assert_eq!((config.decoder_sparse_step, config.router_aux_loss_coef), (1, 0.001));
}

#[test]
fn moe_parameter_counts_by_hand() {
    // embeddings and head 2x32x64, final norm 64; per layer q and o 64x64, k and v 64x32, two norms of 64,
    // q/k head norms of 16; layer 1: MLP 3x64x128; layers 0 and 2: router 4x64 and 4 (active: 2) experts 3x64x32
    let attention = 2 * 4096 + 2 * 2048 + 2 * 64 + 2 * 16;
    let common = 2 * 32 * 64 + 64 + 3 * attention + 3 * 64 * 128;
    assert_eq!(moe_config().parameter_count().unwrap(), common + 2 * (4 * 64 + 4 * 3 * 64 * 32));
    assert_eq!(moe_config().active_parameter_count().unwrap(), common + 2 * (4 * 64 + 2 * 3 * 64 * 32));
    assert_eq!(moe_config().parameter_count().unwrap(), 115_744);
    // A dense model computes with all of its weights.
    let dense = tiny_config();
    assert_eq!(dense.active_parameter_count().unwrap(), dense.parameter_count().unwrap());
}

#[test]
fn bad_moe_configs_name_the_field() {
    for (config, field) in [
        (moe_config().num_experts_per_tok(5), "num_experts_per_tok"),
        (moe_config().moe_intermediate_size(0), "moe_intermediate_size"),
        (moe_config().mlp_only_layers(&[3]), "mlp_only_layers[0]"),
        (moe_config().family(ModelFamily::Qwen3), "num_experts"),
    ] {
        let error = expect_error(config.active_parameter_count(), Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_model_config_active_parameter_count");
    }
    // More dense layers than the C struct holds: the binding refuses, C never sees them.
    let layers: Vec<i32> = (0..=MAX_MLP_ONLY_LAYERS as i32).collect();
    let config = moe_config().mlp_only_layers(&layers);
    let error =
        expect_error(config.parameter_count(), Status::InvalidArgument, "mlp_only_layers has 65 layers, at most 64");
    assert_from_binding(&error, "ModelConfig::parameter_count");
}

#[test]
fn a_random_moe_policy_round_trips_its_config_generates_and_scores_bitwise() {
    let context = cpu();
    let config = moe_config().eos_token_ids(&[2]);
    let policy = Policy::random(&context, &config, 5).unwrap();
    assert_eq!(policy.config().unwrap(), config);
    assert_eq!(policy.parameter_count().unwrap(), config.parameter_count().unwrap());
    policy.set_recipe(&Recipe::fp8()).unwrap();
    let prompts: [&[i32]; 3] = [&[1, 2, 3], &[4, 5], &[6]];
    let options = sampling(6);
    let rollout = policy.generate(&prompts, &[11, 12, 13], &options).unwrap();
    assert_eq!(rollout.total_tokens(), 18);
    let mut sequences = Sequences::new();
    let mut logp_gen = Vec::new();
    for (prompt, completion) in prompts.iter().zip(&rollout) {
        assert!(completion.tokens.iter().all(|&token| (0..32).contains(&token)));
        sequences.push(prompt, completion.tokens);
        logp_gen.extend_from_slice(completion.logprobs);
    }
    // Routing is per token, so scoring the batch gives the generator's log-probs exactly.
    let scored = policy.score(sequences.tokens(), sequences.offsets(), sequences.prompt_lengths(), &options).unwrap();
    assert_eq!(bits(&scored), bits(&logp_gen));
}

#[test]
fn training_an_moe_policy_is_unsupported() {
    let context = cpu();
    let policy = Policy::random(&context, &moe_config(), 5).unwrap();
    let error = Trainer::new(&policy, &TrainerOptions::new()).unwrap_err();
    assert_eq!(error.status, Status::Unsupported, "{error}");
}

#[test]
fn recorded_expert_choices_cover_every_fed_token_of_each_sparse_layer() {
    let context = cpu();
    let policy = Policy::random(&context, &moe_config(), 5).unwrap();
    let prompts: [&[i32]; 2] = [&[1, 2, 3], &[4]];
    let rollout = policy.generate(&prompts, &[11, 12], &sampling(6).record_experts(true)).unwrap();
    for (index, prompt) in prompts.iter().enumerate() {
        let fed = prompt.len() + rollout.get(index).unwrap().tokens.len() - 1;
        let experts = rollout.experts(index).unwrap();
        assert_eq!((experts.positions, experts.sparse_layers, experts.top_k), (fed, 2, 2));
        for slot in experts.choices.chunks(2) {
            assert!(slot.iter().all(|&e| (0..4).contains(&e)) && slot[0] != slot[1], "{slot:?}");
        }
    }
    // Off by default: nothing recorded.
    let plain = policy.generate(&prompts, &[11, 12], &sampling(6)).unwrap();
    assert_eq!(plain.experts(0).unwrap().positions, 0);
    assert_eq!(rollout.experts(2).unwrap_err().status, Status::InvalidArgument);
}
