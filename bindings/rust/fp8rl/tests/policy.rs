//! Configs, policies, recipes, attention scales, generation and scoring,
//! files, and sharing between threads.

mod common;

use common::{assert_from_binding, assert_from_library, bits, cpu, expect_error, sampling, tiny_config, TempDir};
use fp8rl::{
    CalibrationOptions, Completion, Context, DType, FinishReason, ModelConfig, ModelFamily, Policy, Precision, Recipe,
    Rollout, RopeScaling, SamplingOptions, ScaleFormat, Sequences, Status, Trainer,
};

const PROMPTS: [&[i32]; 3] = [&[1, 2, 3], &[4, 5, 6, 7], &[8]];
const SEEDS: [u64; 3] = [11, 12, 13];

/// Weights of the tiny config: embeddings 32x64, per layer q 64x64, k and v
/// 32x64, o 64x64, gate, up and down 64x128 and two norms, a final norm and
/// the untied head.
const TINY_PARAMETERS: u64 = 32 * 64 + 2 * (4096 + 2 * 2048 + 4096 + 3 * 8192 + 2 * 64) + 64 + 32 * 64;

#[test]
fn config_defaults_come_from_the_library() {
    let config = ModelConfig::new();
    assert_eq!(config, ModelConfig::default());
    assert_eq!(config.family, ModelFamily::Llama);
    assert_eq!((config.vocab_size, config.head_dim), (0, 0));
    assert_eq!((config.rms_norm_eps, config.rope_theta), (1e-5, 10000.0));
    assert_eq!(config.rope_scaling, RopeScaling::None);
    assert_eq!((config.rope_factor, config.rope_low_freq_factor, config.rope_high_freq_factor), (1.0, 1.0, 4.0));
    assert!(!config.tie_word_embeddings && !config.attention_bias && !config.qk_norm);
    assert_eq!(config.bos_token_id, -1);
    assert!(config.eos_token_ids.is_empty());
    assert_eq!(tiny_config().parameter_count().unwrap(), TINY_PARAMETERS);
}

#[test]
fn bad_configs_name_the_field() {
    let context = cpu();
    for (config, field) in [
        (tiny_config().vocab_size(0), "vocab_size"),
        (tiny_config().num_key_value_heads(3), "num_key_value_heads"),
        (tiny_config().hidden_size(66), "head_dim"),
        (tiny_config().family(ModelFamily::Unknown(9)), "family"),
        (tiny_config().eos_token_ids(&[32]), "eos"),
        (tiny_config().qk_norm(true), "qk_norm"),
    ] {
        let error = expect_error(config.parameter_count(), Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_model_config_parameter_count");
        let error = expect_error(Policy::random(&context, &config, 1), Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_policy_create_random");
    }
    // More EOS tokens than the C struct holds: the binding refuses, C never sees them.
    let config = tiny_config().eos_token_ids(&[1; 9]);
    let error = expect_error(config.parameter_count(), Status::InvalidArgument, "eos_token_ids has 9 ids, at most 8");
    assert_from_binding(&error, "ModelConfig::parameter_count");
    let error = expect_error(Policy::random(&context, &config, 1), Status::InvalidArgument, "eos_token_ids");
    assert_from_binding(&error, "Policy::random");
}

#[test]
fn a_policy_reports_its_config_size_and_memory() {
    let context = cpu();
    let config = tiny_config().bos_token_id(1).eos_token_ids(&[2, 3]);
    let policy = Policy::random(&context, &config, 1).unwrap();
    assert_eq!(policy.config().unwrap(), config);
    assert!(std::ptr::eq(policy.context(), &context));
    assert_eq!(policy.parameter_count().unwrap(), TINY_PARAMETERS);
    let memory = policy.memory().unwrap();
    assert_eq!(memory.master_weights, 4 * TINY_PARAMETERS as i64);
    assert!(memory.compute_weights > 0);
    assert_eq!((memory.gradients, memory.optimizer_state, memory.backward_weights), (0, 0, 0));
    policy.close().unwrap();
    context.close().unwrap();
}

#[test]
fn recipes_round_trip_and_bad_ones_change_nothing() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    assert_eq!(policy.recipe().unwrap(), Recipe::bf16());
    let recipe = Recipe::fp8_full().scale_format(ScaleFormat::Pow2).bf16_first_layers(1).head(Precision::Fp8);
    policy.set_recipe(&recipe).unwrap();
    assert_eq!(policy.recipe().unwrap(), recipe);
    assert_eq!((recipe.linear, recipe.kv_cache, recipe.attention), (Precision::Fp8, Precision::Fp8, Precision::Fp8));
    assert_eq!(Recipe::bf16().head, Precision::Bf16); // the published recipe keeps the head in BF16

    let error = expect_error(
        policy.set_recipe(&Recipe::bf16().attention(Precision::Fp8)),
        Status::InvalidArgument,
        "attention",
    );
    assert_from_library(&error, "fp8rl_policy_set_recipe");
    expect_error(policy.set_recipe(&Recipe::bf16().linear(Precision::Unknown(5))), Status::InvalidArgument, "linear");
    expect_error(
        policy.set_recipe(&Recipe::bf16().bf16_last_layers(-1)),
        Status::InvalidArgument,
        "must not be negative",
    );
    assert_eq!(policy.recipe().unwrap(), recipe, "a refused recipe leaves the previous one");
}

/// The completions of a rollout as owned vectors.
fn owned(rollout: &Rollout) -> Vec<(Vec<i32>, Vec<u32>, FinishReason)> {
    rollout.iter().map(|c| (c.tokens.to_vec(), bits(c.logprobs), c.finish)).collect()
}

#[test]
fn completions_borrowed_in_place_equal_their_copies() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let rollout = policy.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap();
    assert_eq!(rollout.len(), 3);
    assert_eq!(rollout.iter().len(), 3);
    assert_eq!(rollout.total_tokens(), 24);
    assert!(rollout.seconds() > 0.0);
    assert!(rollout.get(3).is_none());

    let copies = rollout.copy_all().unwrap();
    assert_eq!(copies.len(), 3);
    assert_eq!(copies.offsets, [0, 8, 16, 24]);
    for (i, completion) in rollout.iter().enumerate() {
        assert_eq!(completion.tokens.len(), 8);
        assert_eq!(completion.finish, FinishReason::Length);
        assert!(completion.tokens.iter().all(|&token| (0..32).contains(&token)));
        assert!(completion.logprobs.iter().all(|&logprob| logprob <= 0.0));
        let copy: Completion<'_> = copies.get(i).unwrap();
        assert_eq!(completion.tokens, copy.tokens);
        assert_eq!(bits(completion.logprobs), bits(copy.logprobs));
        assert_eq!(completion.finish, copy.finish);
        assert_eq!(Some(completion), rollout.get(i));
    }

    // Completions outlive the policy and the context (the rollout holds copies).
    let before = owned(&rollout);
    drop(policy);
    drop(context);
    assert_eq!(owned(&rollout), before);
}

#[test]
fn a_seed_decides_a_completion_whatever_the_batch() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let batch = owned(&policy.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap());
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let alone = owned(&policy.generate(&[prompt], &[SEEDS[i]], &sampling(8).batch_slots(1)).unwrap());
        assert_eq!(alone[0], batch[i], "prompt {i}");
    }
    // The flat layout is the same call.
    let flat = policy.generate_flat(&[1, 2, 3, 4, 5, 6, 7, 8], &[0, 3, 7, 8], &SEEDS, &sampling(8)).unwrap();
    assert_eq!(owned(&flat), batch);
}

#[test]
fn scoring_gives_the_generators_logprobs_bit_for_bit() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    policy.set_recipe(&Recipe::fp8_full()).unwrap();
    let options = sampling(8).temperature(0.8).top_k(10).top_p(0.9);
    let rollout = policy.generate(&PROMPTS, &SEEDS, &options).unwrap();
    let mut sequences = Sequences::new();
    let mut logp_gen = Vec::new();
    for (prompt, completion) in PROMPTS.iter().zip(&rollout) {
        sequences.push(prompt, completion.tokens);
        logp_gen.extend_from_slice(completion.logprobs);
    }
    let scored = policy.score(sequences.tokens(), sequences.offsets(), sequences.prompt_lengths(), &options).unwrap();
    assert_eq!(bits(&scored), bits(&logp_gen));

    let error = expect_error(
        policy.score(sequences.tokens(), sequences.offsets(), &[3, 4], &options),
        Status::InvalidArgument,
        "prompt_lengths has 2 entries for 3 sequences",
    );
    assert_from_binding(&error, "Policy::score");
    let error = expect_error(
        policy.score(sequences.tokens(), sequences.offsets(), &[3, 40, 1], &options),
        Status::InvalidArgument,
        "prompt",
    );
    assert_from_library(&error, "fp8rl_policy_score");
}

#[test]
fn stop_tokens_end_completions() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let free = policy.generate(&PROMPTS[..1], &SEEDS[..1], &sampling(8)).unwrap();
    let third = free.get(0).unwrap().tokens[2];
    let stopped = policy.generate(&PROMPTS[..1], &SEEDS[..1], &sampling(8).stop_token_ids(&[third])).unwrap();
    let completion = stopped.get(0).unwrap();
    let first_stop = free.get(0).unwrap().tokens.iter().position(|&token| token == third).unwrap();
    assert_eq!(completion.tokens, &free.get(0).unwrap().tokens[..=first_stop]);
    assert_eq!(completion.finish, FinishReason::Stop);
}

#[test]
fn generation_refuses_bad_prompts_and_options() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let options = sampling(4);
    for (prompts, needle) in [
        (vec![vec![1, 2], vec![3, 32]], "prompt 1"), // a token outside the vocabulary
        (vec![vec![1], vec![-1]], "prompt 1"),
        (vec![vec![1], vec![]], "prompt 1"), // empty
        (vec![vec![1; 33]], "at most 32"),   // longer than max_position_embeddings
    ] {
        let seeds = vec![0; prompts.len()];
        let error = expect_error(policy.generate(&prompts, &seeds, &options), Status::InvalidArgument, needle);
        assert_from_library(&error, "fp8rl_policy_generate");
    }
    let none: [&[i32]; 0] = [];
    let error = policy.generate(&none, &[], &options).unwrap_err();
    assert_from_library(&error, "fp8rl_policy_generate");

    for (options, field) in [
        (sampling(0), "max_new_tokens"),
        (sampling(4).top_p(0.0), "top_p"),
        (sampling(4).temperature(-1.0), "temperature"),
        (sampling(4).top_k(-1), "top_k"),
        (sampling(4).stop_token_ids(&[32]), "stop"),
    ] {
        let error = expect_error(policy.generate(&PROMPTS, &SEEDS, &options), Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_policy_generate");
    }

    // Inconsistent lengths: the binding refuses before C reads past a slice.
    let error = expect_error(
        policy.generate(&PROMPTS, &SEEDS[..2], &options),
        Status::InvalidArgument,
        "2 seeds for 3 prompts",
    );
    assert_from_binding(&error, "Policy::generate");
    for (offsets, needle) in [
        (&[0, 3, 9][..], "offsets[2] = 9 is outside the 8 prompt tokens"),
        (&[0, 3, 7][..], "the last offset is 7, but there are 8 prompt tokens"),
        (&[0, 5, 3, 8][..], "offsets decrease"),
        (&[][..], "offsets is empty"),
    ] {
        let error = expect_error(
            policy.generate_flat(
                &[1, 2, 3, 4, 5, 6, 7, 8],
                offsets,
                &SEEDS[..offsets.len().saturating_sub(1)],
                &options,
            ),
            Status::InvalidArgument,
            needle,
        );
        assert_from_binding(&error, "Policy::generate");
    }
}

#[test]
fn attention_scales_set_get_and_recalibrate() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let scales = policy.attention_scales().unwrap();
    assert_eq!((scales.q.clone(), scales.k.clone(), scales.v.clone()), (vec![1.0; 2], vec![1.0; 2], vec![1.0; 2]));

    policy.set_attention_scales(&[0.5, 2.0], &[0.25, 4.0], &[1.5, 3.0]).unwrap();
    let scales = policy.attention_scales().unwrap();
    assert_eq!((scales.q, scales.k, scales.v), (vec![0.5, 2.0], vec![0.25, 4.0], vec![1.5, 3.0]));

    let error = expect_error(
        policy.set_attention_scales(&[1.0; 2], &[1.0; 3], &[1.0; 2]),
        Status::InvalidArgument,
        "2, 3 and 2",
    );
    assert_from_binding(&error, "Policy::set_attention_scales");
    let error = expect_error(
        policy.set_attention_scales(&[1.0; 3], &[1.0; 3], &[1.0; 3]),
        Status::InvalidArgument,
        "num_layers",
    );
    assert_from_library(&error, "fp8rl_policy_set_attention_scales");
    expect_error(policy.set_attention_scales(&[1.0, 0.0], &[1.0; 2], &[1.0; 2]), Status::InvalidArgument, "layer 1");
    expect_error(
        policy.set_attention_scales(&[1.0, f32::NAN], &[1.0; 2], &[1.0; 2]),
        Status::InvalidArgument,
        "layer 1",
    );
    assert_eq!(policy.attention_scales().unwrap().q, [0.5, 2.0], "refused scales change nothing");

    let tokens: Vec<i32> = (0..24).collect();
    policy.recalibrate_attention_scales(&tokens, &[0, 12, 24], &CalibrationOptions::new()).unwrap();
    let scales = policy.attention_scales().unwrap();
    assert!(
        scales.k.iter().chain(&scales.q).chain(&scales.v).all(|&s| s > 0.0 && s.is_finite() && s != 1.0),
        "{scales:?}"
    );

    let options = CalibrationOptions::new();
    assert_eq!((options.percentile, options.margin, options.max_value), (99.9, 1.05, 448.0));
    let error = expect_error(
        policy.recalibrate_attention_scales(&tokens, &[0, 12, 24], &options.margin(0.5)),
        Status::InvalidArgument,
        "margin",
    );
    assert_from_library(&error, "fp8rl_policy_recalibrate_attention_scales");
    let error = policy.recalibrate_attention_scales(&tokens, &[0, 12, 25], &CalibrationOptions::new()).unwrap_err();
    assert_from_binding(&error, "Policy::recalibrate_attention_scales");
}

#[test]
fn saved_policies_load_back_and_generate_the_same() {
    let dir = TempDir::new("policy");
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let expected = owned(&policy.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap());

    policy.save(dir.join("f32"), DType::F32).unwrap();
    let loaded = Policy::load(&context, dir.join("f32")).unwrap();
    assert_eq!(loaded.config().unwrap(), tiny_config());
    assert_eq!(owned(&loaded.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap()), expected);

    policy.save(dir.join("bf16"), DType::Bf16).unwrap();
    let bf16 = Policy::load(&context, dir.join("bf16")).unwrap();
    assert_eq!(bf16.parameter_count().unwrap(), TINY_PARAMETERS);
    let error = expect_error(policy.save(dir.join("e4m3"), DType::E4m3), Status::InvalidArgument, "dtype");
    assert_from_library(&error, "fp8rl_policy_save");

    policy.export_fp8(dir.join("fp8")).unwrap();
    let exported = std::fs::read_to_string(dir.join("fp8").join("config.json")).unwrap();
    assert!(exported.contains("quantization_config"), "{exported}");
}

#[test]
fn missing_and_corrupt_folders_fail_with_their_status() {
    let dir = TempDir::new("corrupt");
    let context = cpu();
    let error = expect_error(Policy::load(&context, dir.join("nothing here")), Status::Io, "nothing here");
    assert_from_library(&error, "fp8rl_policy_load");

    Policy::random(&context, &tiny_config(), 1).unwrap().save(dir.path(), DType::F32).unwrap();
    std::fs::write(dir.join("config.json"), "{\"vocab_size\": ").unwrap();
    let error = expect_error(Policy::load(&context, dir.path()), Status::CorruptData, "config.json");
    assert_from_library(&error, "fp8rl_policy_load");

    let error = expect_error(Policy::load(&context, "a\0b"), Status::InvalidArgument, "NUL");
    assert_from_binding(&error, "Policy::load");
}

#[test]
fn weights_copy_between_policies_of_one_config() {
    let context = cpu();
    let source = Policy::random(&context, &tiny_config(), 1).unwrap();
    let destination = Policy::random(&context, &tiny_config(), 2).unwrap();
    destination.set_recipe(&Recipe::fp8()).unwrap();
    let before = owned(&destination.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap());
    destination.copy_weights_from(&source).unwrap();
    assert_eq!(destination.recipe().unwrap(), Recipe::fp8(), "the destination keeps its recipe");
    source.set_recipe(&Recipe::fp8()).unwrap();
    let after = owned(&destination.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap());
    assert_ne!(after, before);
    assert_eq!(after, owned(&source.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap()));

    let error = expect_error(destination.copy_weights_from(&destination), Status::InvalidArgument, "");
    assert_from_library(&error, "fp8rl_policy_copy_weights");
    let other = Policy::random(&context, &tiny_config().intermediate_size(64), 1).unwrap();
    expect_error(other.copy_weights_from(&source), Status::InvalidArgument, "");
}

#[test]
fn threads_share_contexts_policies_and_rollouts() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Context>();
    send_and_sync::<Policy<'_>>();
    send_and_sync::<Trainer<'_>>();
    send_and_sync::<Rollout>();
    send_and_sync::<Completion<'_>>();

    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let expected = owned(&policy.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap());
    let rollouts: Vec<Rollout> = std::thread::scope(|scope| {
        let workers: Vec<_> =
            (0..3).map(|_| scope.spawn(|| policy.generate(&PROMPTS, &SEEDS, &sampling(8)).unwrap())).collect();
        workers.into_iter().map(|worker| worker.join().unwrap()).collect()
    });
    for rollout in &rollouts {
        assert_eq!(owned(rollout), expected);
    }
    // A rollout moves to another thread and is read there.
    let rollout = rollouts.into_iter().next().unwrap();
    let tokens = std::thread::spawn(move || rollout.get(0).unwrap().tokens.to_vec()).join().unwrap();
    assert_eq!(tokens, expected[0].0);
}

#[test]
fn sampling_defaults_come_from_the_library() {
    let options = SamplingOptions::new();
    assert_eq!(options, SamplingOptions::default());
    assert_eq!((options.temperature, options.top_k, options.top_p), (1.0, 0, 1.0));
    assert_eq!((options.max_new_tokens, options.batch_slots, options.max_tokens_per_step), (64, 0, 2048));
    assert!(options.stop_at_eos);
    assert!(options.stop_token_ids.is_empty());
}
