//! Trainers: options, steps and their error paths, recomputed log-probs,
//! saved states that resume bit for bit, and mismatch metrics.

mod common;

use common::{assert_from_binding, assert_from_library, bits, cpu, expect_error, sampling, tiny_config, TempDir};
use fp8rl::{
    mismatch_metrics, AdvantageBaseline, Aggregation, CalibrationOptions, ImportanceMode, ImportanceOptions,
    KlEstimator, LossKind, LrSchedule, Policy, Recipe, Sequences, Status, TrainMetrics, Trainer, TrainerOptions,
};

const GROUP: usize = 4;

fn grpo_options() -> TrainerOptions {
    TrainerOptions::new()
        .learning_rate(1e-2)
        .group_size(GROUP as i32)
        .importance(ImportanceOptions::new().mode(ImportanceMode::Truncated))
}

/// One rollout of two prompts, GROUP completions each, laid out for a step.
struct Step {
    sequences: Sequences,
    logp_gen: Vec<f32>,
    rewards: Vec<f32>,
}

fn rollout_step(policy: &Policy<'_>, trainer: &mut Trainer<'_>) -> Step {
    let prompts: Vec<[i32; 3]> = (0..2 * GROUP).map(|i| [1 + (i / GROUP) as i32, 2, 3]).collect();
    let seeds = trainer.next_seeds(prompts.len()).unwrap();
    let rollout = policy.generate(&prompts, &seeds, &sampling(5)).unwrap();
    let mut step = Step { sequences: Sequences::new(), logp_gen: Vec::new(), rewards: Vec::new() };
    for (prompt, completion) in prompts.iter().zip(&rollout) {
        step.sequences.push(prompt, completion.tokens);
        step.logp_gen.extend_from_slice(completion.logprobs);
        step.rewards.push(completion.tokens.iter().filter(|&&token| token == 7).count() as f32 / 5.0);
    }
    step
}

fn train(trainer: &mut Trainer<'_>, step: &Step) -> TrainMetrics {
    trainer.step(&step.sequences.batch().logp_gen(&step.logp_gen).rewards(&step.rewards)).unwrap()
}

#[test]
fn options_default_to_the_headers_values() {
    let options = TrainerOptions::new();
    assert_eq!(options, TrainerOptions::default());
    assert_eq!(options.loss, LossKind::ClippedPolicyGradient);
    assert_eq!((options.clip_low, options.clip_high), (0.2, 0.2));
    // the embedded options are those of their own _init functions: one default each
    assert_eq!(options.importance, ImportanceOptions::new());
    assert_eq!(options.importance.mode, ImportanceMode::Off);
    assert_eq!((options.importance.low, options.importance.high, options.kl_coefficient), (0.0, 2.0, 0.0));
    assert_eq!(options.kl_estimator, KlEstimator::K3);
    assert_eq!(options.aggregation, Aggregation::TokenMean);
    assert_eq!((options.group_size, options.baseline), (1, AdvantageBaseline::GroupMean));
    assert!(!options.normalize_by_std && options.sample_std && options.recalibrate_after_step);
    assert_eq!((options.advantage_epsilon, options.learning_rate), (1e-6, 1e-6));
    assert_eq!((options.schedule, options.warmup_steps, options.total_steps), (LrSchedule::Constant, 0, 0));
    assert_eq!((options.beta1, options.beta2, options.adam_epsilon), (0.9, 0.999, 1e-8));
    assert_eq!((options.weight_decay, options.max_grad_norm, options.temperature), (0.01, 1.0, 1.0));
    assert_eq!((options.micro_batch_tokens, options.seed, options.min_lr_ratio), (2048, 0, 0.0));
    assert_eq!(options.calibration, CalibrationOptions::new());
    assert_eq!(
        (options.calibration.percentile, options.calibration.margin, options.calibration.max_value),
        (99.9, 1.05, 448.0)
    );
}

#[test]
fn bad_options_name_the_field() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    for (options, field) in [
        (grpo_options().importance(ImportanceOptions::new().mode(ImportanceMode::Unknown(9))), "importance.mode"),
        (grpo_options().importance(ImportanceOptions::new().low(3.0)), "low"),
        (grpo_options().calibration(CalibrationOptions::new().margin(0.5)), "margin"),
        (grpo_options().temperature(0.0), "temperature"),
        (grpo_options().group_size(0), "group_size"),
        (grpo_options().beta2(1.0), "beta2"),
        (grpo_options().kl_estimator(KlEstimator::Unknown(2)), "kl_estimator"),
        (grpo_options().micro_batch_tokens(0), "micro_batch_tokens"),
    ] {
        let error = expect_error(Trainer::new(&policy, &options), Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_trainer_create");
    }
}

#[test]
fn a_step_trains_and_recomputed_logprobs_equal_the_generators() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    policy.set_recipe(&Recipe::fp8_full()).unwrap();
    let mut trainer = Trainer::new(&policy, &grpo_options()).unwrap();
    assert!(std::ptr::eq(trainer.policy(), &policy));

    let step = rollout_step(&policy, &mut trainer);
    let s = &step.sequences;
    let recomputed = trainer.recompute_logprobs(s.tokens(), s.offsets(), s.prompt_lengths()).unwrap();
    assert_eq!(bits(&recomputed), bits(&step.logp_gen), "training and generation log-probs agree bit for bit");
    let scored = policy.score(s.tokens(), s.offsets(), s.prompt_lengths(), &sampling(5)).unwrap();
    assert_eq!(bits(&scored), bits(&recomputed));

    let scales_before = policy.attention_scales().unwrap();
    let metrics = train(&mut trainer, &step);
    assert_eq!((metrics.step, metrics.sequences, metrics.completion_tokens), (1, 8, 40));
    assert!(!metrics.skipped && metrics.has_mismatch);
    assert_eq!(metrics.token_mult_prob_error, 1.0);
    assert_eq!(metrics.learning_rate, 1e-2);
    assert!(metrics.loss.is_finite() && metrics.grad_norm > 0.0 && metrics.entropy > 0.0);
    let mean = step.rewards.iter().map(|&r| f64::from(r)).sum::<f64>() / 8.0;
    assert!((metrics.reward_mean - mean).abs() < 1e-6);
    assert_ne!(policy.attention_scales().unwrap(), scales_before, "the step recalibrated");

    let memory = trainer.memory().unwrap();
    assert!(memory.gradients > 0 && memory.optimizer_state > 0);
    // The host copy and the trainer's arena on the backend.
    assert!(memory.master_weights > policy.memory().unwrap().master_weights);
    assert!(trainer.recalibrate().unwrap() >= 0.0);
}

#[test]
fn bad_batches_fail_and_change_nothing() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let mut trainer = Trainer::new(&policy, &grpo_options()).unwrap();
    let step = rollout_step(&policy, &mut trainer);
    let s = &step.sequences;
    let batch = s.batch().logp_gen(&step.logp_gen);

    let mut nan_rewards = step.rewards.clone();
    nan_rewards[3] = f32::NAN;
    let error = expect_error(trainer.step(&batch.rewards(&nan_rewards)), Status::NonFinite, "reward");
    assert_from_library(&error, "fp8rl_trainer_step");
    let error = expect_error(trainer.step(&batch.advantages(&nan_rewards)), Status::NonFinite, "");
    assert_from_library(&error, "fp8rl_trainer_step");

    // Found by the library: values and arrays the loss does not take.
    for (bad, needle) in [
        (batch.rewards(&step.rewards).advantages(&step.rewards), "advantages"),
        (batch, "rewards"),
        (batch.rewards(&step.rewards).logp_gen(&step.logp_gen[1..]), "num_completion_tokens"),
    ] {
        let error = expect_error(trainer.step(&bad), Status::InvalidArgument, needle);
        assert_from_library(&error, "fp8rl_trainer_step");
    }
    let mut tokens = s.tokens().to_vec();
    tokens[4] = 32;
    let out_of_vocabulary = fp8rl::TrainBatch { tokens: &tokens, ..batch.rewards(&step.rewards) };
    expect_error(trainer.step(&out_of_vocabulary), Status::InvalidArgument, "");
    let mut six = Sequences::new(); // not a multiple of the group size
    for i in 0..6 {
        six.push(&[1, 2], &[i]);
    }
    let error = expect_error(
        trainer.step(&six.batch().logp_gen(&[-1.0; 6]).rewards(&[0.0; 6])),
        Status::InvalidArgument,
        "group",
    );
    assert_from_library(&error, "fp8rl_trainer_step");

    // Found by the binding, before C reads past a slice.
    for (bad, needle) in [
        (batch.rewards(&step.rewards[1..]), "rewards has 7 entries for 8 sequences"),
        (batch.rewards(&step.rewards).advantages(&[0.0; 3]), "advantages has 3 entries for 8 sequences"),
        (batch.rewards(&step.rewards).logp_ref(&step.logp_gen[1..]), "logp_gen has 40 values but logp_ref 39"),
        (fp8rl::TrainBatch { prompt_lengths: &s.prompt_lengths()[1..], ..batch }, "prompt_lengths has 7 entries"),
        (fp8rl::TrainBatch { tokens: &s.tokens()[1..], ..batch }, "offsets[8] = 64 is outside the 63 tokens"),
    ] {
        let error = expect_error(trainer.step(&bad), Status::InvalidArgument, needle);
        assert_from_binding(&error, "Trainer::step");
    }
    let error = trainer.recompute_logprobs(s.tokens(), &s.offsets()[1..], s.prompt_lengths()).unwrap_err();
    assert_from_binding(&error, "Trainer::recompute_logprobs");

    // Nothing changed: the first good step is step 1.
    assert_eq!(train(&mut trainer, &step).step, 1);
}

#[test]
fn cross_entropy_needs_no_rewards() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let mut trainer = Trainer::new(&policy, &TrainerOptions::new().loss(LossKind::CrossEntropy)).unwrap();
    let mut sequences = Sequences::new();
    sequences.push(&[1, 2, 3], &[7, 7, 7]);
    let before =
        trainer.recompute_logprobs(sequences.tokens(), sequences.offsets(), sequences.prompt_lengths()).unwrap();
    let metrics = trainer.step(&sequences.batch()).unwrap();
    assert!((metrics.loss + before.iter().map(|&l| f64::from(l)).sum::<f64>() / 3.0).abs() < 1e-4);
    assert_eq!((metrics.step, metrics.reward_mean), (1, 0.0));
}

#[test]
fn seeds_come_from_the_trainers_seed() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let draw = |seed: u64| {
        let mut trainer = Trainer::new(&policy, &TrainerOptions::new().seed(seed)).unwrap();
        let first = trainer.next_seeds(3).unwrap();
        (first, trainer.next_seeds(2).unwrap())
    };
    let (first, second) = draw(5);
    assert_eq!(draw(5), (first.clone(), second.clone()));
    assert_ne!(draw(6).0, first);
    assert_ne!(first[..2], second[..], "the stream moves on");
    assert!(first.iter().chain(&second).collect::<std::collections::HashSet<_>>().len() == 5);
}

#[test]
fn a_saved_state_resumes_bit_for_bit() {
    let dir = TempDir::new("state");
    let path = dir.join("state.safetensors");
    let context = cpu();

    let first = Policy::random(&context, &tiny_config(), 1).unwrap();
    first.set_recipe(&Recipe::fp8_full()).unwrap();
    let mut a = Trainer::new(&first, &grpo_options()).unwrap();
    let step = rollout_step(&first, &mut a);
    train(&mut a, &step);
    a.save_state(&path).unwrap();
    let step = rollout_step(&first, &mut a);
    let expected = train(&mut a, &step);

    // Another policy (other weights, default recipe) takes the saved state over.
    let second = Policy::random(&context, &tiny_config(), 99).unwrap();
    let mut b = Trainer::new(&second, &grpo_options()).unwrap();
    b.load_state(&path).unwrap();
    assert_eq!(second.recipe().unwrap(), Recipe::fp8_full());
    let resumed = rollout_step(&second, &mut b);
    assert_eq!(resumed.sequences, step.sequences, "same seeds and weights: same completions");
    assert_eq!(bits(&resumed.logp_gen), bits(&step.logp_gen));
    let got = train(&mut b, &resumed);
    assert_eq!(got.step, expected.step);
    assert_eq!(got.loss.to_bits(), expected.loss.to_bits());
    assert_eq!(got.grad_norm.to_bits(), expected.grad_norm.to_bits());
    assert_eq!(got.reward_mean.to_bits(), expected.reward_mean.to_bits());
    assert_eq!(second.attention_scales().unwrap(), first.attention_scales().unwrap());
    assert_eq!(b.next_seeds(4).unwrap(), a.next_seeds(4).unwrap());
}

#[test]
fn missing_corrupt_and_foreign_states_are_refused() {
    let dir = TempDir::new("bad-state");
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let mut trainer = Trainer::new(&policy, &grpo_options()).unwrap();

    let error = expect_error(trainer.load_state(dir.join("missing.safetensors")), Status::Io, "missing.safetensors");
    assert_from_library(&error, "fp8rl_trainer_load_state");
    let error = expect_error(trainer.save_state(dir.join("no/such/folder/state.safetensors")), Status::Io, "");
    assert_from_library(&error, "fp8rl_trainer_save_state");

    let path = dir.join("state.safetensors");
    trainer.save_state(&path).unwrap();
    let saved = std::fs::read(&path).unwrap();
    std::fs::write(&path, &saved[..saved.len() / 2]).unwrap();
    let error = expect_error(trainer.load_state(&path), Status::CorruptData, "");
    assert_from_library(&error, "fp8rl_trainer_load_state");
    std::fs::write(&path, b"not a safetensors file at all").unwrap();
    expect_error(trainer.load_state(&path), Status::CorruptData, "");

    let other = Policy::random(&context, &tiny_config().intermediate_size(64), 1).unwrap();
    let other_trainer = Trainer::new(&other, &grpo_options()).unwrap();
    other_trainer.save_state(&path).unwrap();
    let error = expect_error(trainer.load_state(&path), Status::InvalidArgument, "");
    assert_from_library(&error, "fp8rl_trainer_load_state");
}

#[test]
fn mismatch_metrics_measure_generation_against_training() {
    let logp = [-1.0f32, -2.0, -0.5, -3.0];
    let offsets = [0, 1, 4];
    let same = mismatch_metrics(&logp, &logp, &offsets, &ImportanceOptions::new()).unwrap();
    assert_eq!((same.tokens, same.non_finite_tokens), (4, 0));
    assert_eq!((same.token_mult_prob_error, same.gen_kl_error, same.is_weight_mean), (1.0, 0.0, 1.0));

    let shifted: Vec<f32> = logp.iter().map(|l| l - 1.0).collect(); // generator 1 nat less likely: w = e
    let off = mismatch_metrics(&logp, &shifted, &offsets, &ImportanceOptions::new()).unwrap();
    assert!((off.token_mult_prob_error - std::f64::consts::E).abs() < 1e-5);
    assert_eq!((off.is_weight_mean, off.is_truncated_fraction), (1.0, 0.0), "off by default: w = 1");
    let truncated = ImportanceOptions::new().mode(ImportanceMode::Truncated);
    let metrics = mismatch_metrics(&logp, &shifted, &offsets, &truncated).unwrap();
    assert_eq!(metrics.is_truncated_fraction, 1.0, "e > the default cap 2");
    assert!((metrics.is_weight_mean - 2.0).abs() < 1e-9);
    let masked = ImportanceOptions::new().mode(ImportanceMode::TokenMasked);
    assert_eq!(mismatch_metrics(&logp, &shifted, &offsets, &masked).unwrap().is_masked_fraction, 1.0);

    let mut gen = logp;
    gen[2] = f32::NAN;
    assert_eq!(mismatch_metrics(&logp, &gen, &offsets, &ImportanceOptions::new()).unwrap().non_finite_tokens, 1);
    let error = expect_error(mismatch_metrics(&gen, &logp, &offsets, &ImportanceOptions::new()), Status::NonFinite, "");
    assert_from_library(&error, "fp8rl_mismatch_metrics_compute");
    let error = expect_error(
        mismatch_metrics(&logp, &logp, &offsets, &ImportanceOptions::new().high(-1.0)),
        Status::InvalidArgument,
        "high",
    );
    assert_from_library(&error, "fp8rl_mismatch_metrics_compute");
    let error = expect_error(
        mismatch_metrics(&logp, &logp[..3], &offsets, &ImportanceOptions::new()),
        Status::InvalidArgument,
        "logp_old has 4 values, logp_gen 3",
    );
    assert_from_binding(&error, "mismatch_metrics");
    let error = mismatch_metrics(&logp, &logp, &[0, 5], &ImportanceOptions::new()).unwrap_err();
    assert_from_binding(&error, "mismatch_metrics");
}

#[test]
fn an_iteration_takes_one_step_per_minibatch_and_moves_the_ratio_from_the_second_on() {
    let context = cpu();
    let policy = Policy::random(&context, &tiny_config(), 1).unwrap();
    let mut trainer = Trainer::new(&policy, &grpo_options().learning_rate(3e-2).minibatches(4)).unwrap();
    let step = rollout_step(&policy, &mut trainer);
    let batch = step.sequences.batch().logp_gen(&step.logp_gen).rewards(&step.rewards);
    let metrics = trainer.iterate(&batch).unwrap();
    assert_eq!(metrics.minibatches.len(), 4);
    assert_eq!(metrics.total.minibatches, 4);
    assert_eq!(metrics.total.step, 4);
    assert!(metrics.total.has_mismatch);
    assert_eq!(metrics.minibatches[0].ratio_min, 1.0);
    assert_eq!(metrics.minibatches[0].ratio_max, 1.0);
    for (k, m) in metrics.minibatches.iter().enumerate() {
        assert_eq!(m.step, k as i64 + 1);
        assert_eq!(m.sequences, 2);
    }
    assert!(metrics.minibatches[3].old_policy_kl > 0.0);

    // The host's logp_old must be finite; a refused iteration takes no step.
    let mut old = step.logp_gen.clone();
    old[0] = f32::NAN;
    let refused = trainer.iterate(&batch.logp_old(&old));
    expect_error(refused, Status::NonFinite, "logp_old[0]");
    let more = Trainer::new(&policy, &grpo_options().minibatches(9));
    let mut more = more.unwrap();
    expect_error(more.iterate(&batch), Status::InvalidArgument, "minibatches is 9");
}
