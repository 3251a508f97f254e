//! Qwen3-MoE: the MoE fields of ModelConfig, the parameter counts (against
//! hand counts of Hugging Face's Qwen3MoeForCausalLM), errors naming the
//! field, generation, and training: in the generator's recipe every fed token
//! is routed as the generator routed it (counts worked out from the rollout
//! lengths), routing replay, and HF's load-balancing loss (its value for
//! perfectly balanced routing worked out here from its formula).

mod common;

use common::{assert_from_binding, assert_from_library, bits, cpu, expect_error, sampling, tiny_config};
use fp8rl::{
    ModelConfig, ModelFamily, Policy, Recipe, Rollout, SamplingOptions, Sequences, Status, TrainMetrics, Trainer,
    TrainerOptions, MAX_MLP_ONLY_LAYERS,
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

// ---- training

/// Three prompts, two completions each (groups of two).
const PROMPTS: [&[i32]; 6] = [&[1, 2, 3], &[1, 2, 3], &[4, 5], &[4, 5], &[6], &[6]];
const SEEDS: [u64; 6] = [11, 12, 13, 14, 15, 16];
const REWARDS: [f32; 6] = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0];

fn recording() -> SamplingOptions {
    sampling(6).record_experts(true)
}

fn trainer_options() -> TrainerOptions {
    TrainerOptions::new().learning_rate(1e-2).group_size(2)
}

/// Hugging Face's Qwen3MoeDecoderLayer rule, written out here.
fn sparse_layers(config: &ModelConfig) -> Vec<i64> {
    (0..config.num_layers)
        .filter(|&layer| {
            !config.mlp_only_layers.contains(&(layer as i32)) && (layer + 1) % config.decoder_sparse_step == 0
        })
        .collect()
}

/// Fed tokens (every token of prompt + completion but the last) of sequences `range`.
fn fed_tokens(rollout: &Rollout, range: std::ops::Range<usize>) -> i64 {
    range.map(|i| (PROMPTS[i].len() + rollout.get(i).unwrap().tokens.len() - 1) as i64).sum()
}

/// (fed token, sparse layer, slot) choices of sequences `range`.
fn expected_choices(rollout: &Rollout, range: std::ops::Range<usize>) -> i64 {
    let config = moe_config();
    fed_tokens(rollout, range) * sparse_layers(&config).len() as i64 * config.num_experts_per_tok
}

/// HF's load_balancing_loss_func for perfectly balanced routing: E times the sum over the k slots and E experts
/// of (share of tokens whose slot-th choice is e) times (mean router probability of e), both 1/E when balanced.
fn balanced_aux_loss(config: &ModelConfig) -> f64 {
    let experts = config.num_experts as f64;
    let mut sum = 0.0;
    for _slot in 0..config.num_experts_per_tok {
        for _expert in 0..config.num_experts {
            sum += (1.0 / experts) * (1.0 / experts);
        }
    }
    experts * sum
}

/// A fresh random MoE policy (seed 5) in `recipe`.
fn moe_policy<'c>(context: &'c fp8rl::Context, recipe: &Recipe) -> Policy<'c> {
    let policy = Policy::random(context, &moe_config(), 5).unwrap();
    policy.set_recipe(recipe).unwrap();
    policy
}

/// One step of `trainer` on `rollout` (its experts passed when it recorded them).
fn step_on(trainer: &mut Trainer<'_>, rollout: &Rollout) -> fp8rl::Result<TrainMetrics> {
    let mut sequences = Sequences::new();
    sequences.extend_from_rollout(&PROMPTS, rollout)?;
    trainer.step(&sequences.batch().rewards(&REWARDS))
}

#[test]
fn moe_sparse_layers_of_the_tiny_config() {
    assert_eq!(sparse_layers(&moe_config()), [0, 2]);
}

#[test]
fn moe_sequences_collect_the_recorded_experts_end_to_end() {
    let context = cpu();
    let policy = moe_policy(&context, &Recipe::bf16());
    let rollout = policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
    let mut sequences = Sequences::new();
    sequences.extend_from_rollout(&PROMPTS, &rollout).unwrap();
    let mut by_hand = Vec::new();
    for index in 0..PROMPTS.len() {
        by_hand.extend_from_slice(rollout.experts(index).unwrap().choices);
    }
    assert_eq!(sequences.experts(), Some(&by_hand[..]));
    assert_eq!(by_hand.len() as i64, expected_choices(&rollout, 0..6));
    assert_eq!(sequences.batch().experts, Some(&by_hand[..]));
    // Nothing recorded: no experts; a sequence pushed without them drops them all.
    let plain = policy.generate(&PROMPTS, &SEEDS, &sampling(6)).unwrap();
    let mut without = Sequences::new();
    without.extend_from_rollout(&PROMPTS, &plain).unwrap();
    assert_eq!((without.experts(), without.batch().experts), (None, None));
    sequences.push(&[1], &[2]);
    assert_eq!(sequences.experts(), None);
    // Wrong prompts: refused, nothing appended.
    let mut wrong = Sequences::new();
    expect_error(wrong.extend_from_rollout(&PROMPTS[..2], &rollout), Status::InvalidArgument, "2 prompts");
    let shifted: Vec<&[i32]> = PROMPTS.iter().rev().copied().collect();
    expect_error(wrong.extend_from_rollout(&shifted, &rollout), Status::InvalidArgument, "feed");
    assert!(wrong.is_empty());
}

#[test]
fn moe_training_in_the_generators_recipe_routes_every_fed_token_alike() {
    let context = cpu();
    for recipe in [Recipe::bf16(), Recipe::fp8()] {
        let policy = moe_policy(&context, &recipe);
        // micro-batches of 8 tokens: the sequences' expert choices are split across several of them
        let mut trainer = Trainer::new(&policy, &trainer_options().micro_batch_tokens(8)).unwrap();
        let rollout = policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
        let metrics = step_on(&mut trainer, &rollout).unwrap();
        // prompts of 12 tokens, completions of 6 x 6, the last token of each of the 6 sequences not fed;
        // sparse layers 0 and 2, k = 2
        assert_eq!(metrics.routing_choices, expected_choices(&rollout, 0..6));
        assert_eq!(metrics.routing_choices, (12 + 6 * 6 - 6) * 2 * 2);
        assert_eq!(metrics.routing_agreement, 1.0, "{recipe:?}");
        assert!(metrics.loss.is_finite() && metrics.grad_norm > 0.0 && !metrics.skipped);
        // The moved weights route alike too.
        let after = policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
        let again = step_on(&mut trainer, &after).unwrap();
        assert_eq!((again.routing_agreement, again.routing_choices), (1.0, expected_choices(&after, 0..6)));
        // Without recorded experts nothing is compared; the load-balancing loss is measured all the same.
        let plain = policy.generate(&PROMPTS, &SEEDS, &sampling(6)).unwrap();
        let blind = step_on(&mut trainer, &plain).unwrap();
        assert_eq!((blind.routing_choices, blind.routing_agreement), (0, 0.0));
        assert!(blind.router_aux_loss > 0.0);
    }
}

#[test]
fn moe_each_minibatch_of_an_iteration_takes_its_sequences_experts() {
    let context = cpu();
    for (recipe, learning_rate) in
        [(Recipe::bf16(), 0.0), (Recipe::fp8(), 0.0), (Recipe::bf16(), 1e-2), (Recipe::fp8(), 1e-2)]
    {
        let policy = moe_policy(&context, &recipe);
        let mut trainer =
            Trainer::new(&policy, &trainer_options().learning_rate(learning_rate).minibatches(3)).unwrap();
        let rollout = policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
        let mut sequences = Sequences::new();
        sequences.extend_from_rollout(&PROMPTS, &rollout).unwrap();
        let metrics = trainer.iterate(&sequences.batch().rewards(&REWARDS)).unwrap();
        assert_eq!(metrics.total.routing_choices, expected_choices(&rollout, 0..6));
        // mini-batch m holds sequences 2m and 2m + 1
        let choices: Vec<i64> = metrics.minibatches.iter().map(|step| step.routing_choices).collect();
        assert_eq!(choices, (0..3).map(|m| expected_choices(&rollout, 2 * m..2 * m + 2)).collect::<Vec<_>>());
        let agreements: Vec<f64> = metrics.minibatches.iter().map(|step| step.routing_agreement).collect();
        if learning_rate == 0.0 {
            // the weights stay the generator's: every mini-batch routes as it did
            assert_eq!((agreements, metrics.total.routing_agreement), (vec![1.0; 3], 1.0), "{recipe:?}");
        } else {
            // later mini-batches route with weights the earlier steps moved
            assert_eq!(agreements[0], 1.0);
            assert!(agreements.iter().all(|&agreement| agreement > 0.0 && agreement <= 1.0), "{agreements:?}");
            // the iteration's agreement is over all of its choices
            let agreed: f64 = metrics.minibatches.iter().map(|s| s.routing_agreement * s.routing_choices as f64).sum();
            let total = agreed / metrics.total.routing_choices as f64;
            assert!((metrics.total.routing_agreement - total).abs() < 1e-12, "{total}");
        }
    }
}

#[test]
fn moe_routing_replay_needs_recorded_experts() {
    let context = cpu();
    let policy = moe_policy(&context, &Recipe::bf16());
    let mut trainer = Trainer::new(&policy, &trainer_options().routing_replay(true)).unwrap();
    let plain = policy.generate(&PROMPTS, &SEEDS, &sampling(6)).unwrap();
    let mut sequences = Sequences::new();
    sequences.extend_from_rollout(&PROMPTS, &plain).unwrap();
    let batch = sequences.batch().rewards(&REWARDS);
    let error = expect_error(trainer.step(&batch), Status::InvalidArgument, "record_experts(true)");
    assert_from_binding(&error, "Trainer::step");
    let error = expect_error(trainer.iterate(&batch), Status::InvalidArgument, "routing_replay");
    assert_from_binding(&error, "Trainer::iterate");
    // With the experts recorded, the same trainer steps.
    let rollout = policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
    let metrics = step_on(&mut trainer, &rollout).unwrap();
    assert_eq!((metrics.routing_agreement, metrics.routing_choices), (1.0, expected_choices(&rollout, 0..6)));
}

#[test]
fn moe_routing_replay_in_the_generators_recipe_trains_as_the_routers_own_choice() {
    let context = cpu();
    for recipe in [Recipe::bf16(), Recipe::fp8()] {
        let (plain_policy, replay_policy) = (moe_policy(&context, &recipe), moe_policy(&context, &recipe));
        let mut plain = Trainer::new(&plain_policy, &trainer_options()).unwrap();
        let mut replaying = Trainer::new(&replay_policy, &trainer_options().routing_replay(true)).unwrap();
        let rollout = plain_policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
        let free = step_on(&mut plain, &rollout).unwrap();
        let replayed = step_on(&mut replaying, &rollout).unwrap();
        assert_eq!((replayed.routing_agreement, free.routing_agreement), (1.0, 1.0));
        assert_eq!(replayed.routing_choices, expected_choices(&rollout, 0..6));
        // The recorded experts are the router's own choice: replaying them changes nothing.
        assert_eq!(
            (replayed.loss, replayed.grad_norm, replayed.router_aux_loss),
            (free.loss, free.grad_norm, free.router_aux_loss),
            "{recipe:?}"
        );
        assert_eq!(replay_policy.fingerprint().unwrap(), plain_policy.fingerprint().unwrap());
    }
}

#[test]
fn moe_routing_replay_trains_a_bf16_policy_on_fp8_generations() {
    let context = cpu();
    let generator = moe_policy(&context, &Recipe::fp8());
    let policy = moe_policy(&context, &Recipe::bf16());
    let mut trainer = Trainer::new(&policy, &trainer_options().routing_replay(true)).unwrap();
    let rollout = generator.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
    let metrics = step_on(&mut trainer, &rollout).unwrap();
    assert_eq!(metrics.routing_choices, expected_choices(&rollout, 0..6));
    // the BF16 router may choose otherwise than the FP8 one
    assert!(metrics.routing_agreement > 0.0 && metrics.routing_agreement <= 1.0);
    assert!(metrics.loss.is_finite() && !metrics.skipped);
}

#[test]
fn moe_load_balancing_loss_of_an_untrained_router_and_its_coefficient() {
    let context = cpu();
    let config = moe_config();
    let balanced = balanced_aux_loss(&config);
    assert!((balanced - config.num_experts_per_tok as f64).abs() < 1e-12); // HF's loss is k when balanced
    let coef = 0.5;
    for recipe in [Recipe::bf16(), Recipe::fp8()] {
        let (plain_policy, weighted_policy) = (moe_policy(&context, &recipe), moe_policy(&context, &recipe));
        let mut plain = Trainer::new(&plain_policy, &trainer_options()).unwrap();
        let mut weighted = Trainer::new(&weighted_policy, &trainer_options().router_aux_loss_coef(coef)).unwrap();
        let rollout = plain_policy.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
        let without = step_on(&mut plain, &rollout).unwrap();
        let with = step_on(&mut weighted, &rollout).unwrap();
        let aux = without.router_aux_loss;
        assert!(aux >= 0.5 * balanced && aux <= 2.0 * balanced, "{aux} vs balanced {balanced} ({recipe:?})");
        assert_eq!(with.router_aux_loss, aux);
        let added = with.loss - without.loss;
        assert!((added - coef * aux).abs() <= 1e-6 * coef * aux, "{added} vs {} ({recipe:?})", coef * aux);
        assert_ne!(with.grad_norm, without.grad_norm); // the load-balancing loss has a gradient of its own
    }
}

#[test]
fn moe_trainer_options_default_and_are_checked() {
    let options = TrainerOptions::new();
    assert_eq!((options.router_aux_loss_coef, options.routing_replay), (0.0, false));
    let context = cpu();
    let policy = moe_policy(&context, &Recipe::bf16());
    let error = Trainer::new(&policy, &TrainerOptions::new().router_aux_loss_coef(-1.0)).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
    assert!(error.message.contains("router_aux_loss_coef"), "{error}");
    // A dense policy ignores both: no experts, nothing compared, no load-balancing loss.
    let dense = Policy::random(&context, &tiny_config(), 1).unwrap();
    let mut trainer = Trainer::new(&dense, &trainer_options().routing_replay(true).router_aux_loss_coef(0.5)).unwrap();
    let rollout = dense.generate(&PROMPTS, &SEEDS, &recording()).unwrap();
    let metrics = step_on(&mut trainer, &rollout).unwrap();
    assert_eq!((metrics.routing_choices, metrics.routing_agreement, metrics.router_aux_loss), (0, 0.0, 0.0));
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
