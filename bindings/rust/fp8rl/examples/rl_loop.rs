//! examples/rl_loop.c in Rust, step for step: a tiny random policy learns, by
//! GRPO, to answer every prompt with the token 7. The host draws prompts,
//! scores completions (reward = the fraction of completion tokens equal to 7)
//! and hands rewards to the trainer, which recomputes log-probs, takes an
//! optimizer step in FP8 and recalibrates. Same config, seeds and options as
//! the C program, so it generates the same tokens.
//!
//! Usage: `cargo run --example rl_loop [COMPLETIONS_FILE]`: also writes every
//! completion, one line of space-separated token ids each, step after step.
//! Exits 1 unless the mean reward rose by more than 0.3.

use std::io::Write;

use fp8rl::{
    Backend, Context, ImportanceMode, ImportanceOptions, ModelConfig, Policy, Recipe, SamplingOptions, Sequences,
    Trainer, TrainerOptions,
};

const PROMPTS: usize = 4;
const GROUP: usize = 4;
const SEQS: usize = PROMPTS * GROUP;
const PROMPT_LEN: usize = 4;
const NEW: usize = 6;
const STEPS: usize = 20;
const TARGET: i32 = 7;

/// The mean reward of the first and the last step.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// Mean reward of step 0.
    pub first_reward: f64,
    /// Mean reward of the last step.
    pub last_reward: f64,
}

impl Outcome {
    /// Whether the policy learned: the reward rose by more than 0.3.
    pub fn learned(&self) -> bool {
        self.last_reward > self.first_reward + 0.3
    }
}

/// The tiny Llama of rl_loop.c.
pub fn tiny_config() -> ModelConfig {
    ModelConfig::new()
        .vocab_size(32)
        .hidden_size(64)
        .num_layers(2)
        .num_attention_heads(4)
        .num_key_value_heads(2)
        .intermediate_size(128)
        .max_position_embeddings(32)
}

/// Runs the loop, printing one line per step; writes the completions to
/// `completions` when given.
pub fn run(mut completions: Option<&mut dyn Write>) -> Result<Outcome, Box<dyn std::error::Error>> {
    let context = Context::new(Backend::Cpu)?;
    let policy = Policy::random(&context, &tiny_config(), 1)?;
    policy.set_recipe(&Recipe::fp8_full())?; // FP8 linear layers, KV cache and attention
    let options = TrainerOptions::new()
        .learning_rate(1e-2)
        .group_size(GROUP as i32)
        .importance(ImportanceOptions::new().mode(ImportanceMode::Truncated));
    let mut trainer = Trainer::new(&policy, &options)?;
    let sampling = SamplingOptions::new().max_new_tokens(NEW as i32).stop_at_eos(false);

    let mut outcome = Outcome { first_reward: 0.0, last_reward: 0.0 };
    for step in 0..STEPS {
        // GROUP copies of each prompt.
        let prompts: Vec<[i32; PROMPT_LEN]> =
            (0..SEQS).map(|i| std::array::from_fn(|j| 8 + ((step * 5 + (i / GROUP) * 3 + j) % 24) as i32)).collect();
        let seeds = trainer.next_seeds(SEQS)?;
        let rollout = policy.generate(&prompts, &seeds, &sampling)?;

        // Prompt + completion, and the reward.
        let mut sequences = Sequences::new();
        let (mut logp_gen, mut rewards) = (Vec::with_capacity(SEQS * NEW), Vec::with_capacity(SEQS));
        for (prompt, completion) in prompts.iter().zip(&rollout) {
            sequences.push(prompt, completion.tokens);
            logp_gen.extend_from_slice(completion.logprobs);
            let hits = completion.tokens.iter().filter(|&&token| token == TARGET).count();
            let length = completion.tokens.len();
            rewards.push(if length > 0 { hits as f32 / length as f32 } else { 0.0 });
            if let Some(file) = completions.as_mut() {
                let line: Vec<String> = completion.tokens.iter().map(i32::to_string).collect();
                writeln!(file, "{}", line.join(" "))?;
            }
        }
        let batch = sequences.batch().logp_gen(&logp_gen).rewards(&rewards).generation_seconds(rollout.seconds());
        let metrics = trainer.step(&batch)?;

        let reward = rewards.iter().map(|&reward| f64::from(reward)).sum::<f64>() / SEQS as f64;
        println!(
            "step {step:2}  reward {reward:.3}  grad norm {:.3}  token_mult_prob_error {:.6}  recalibration {:.1}%",
            metrics.grad_norm,
            metrics.token_mult_prob_error,
            100.0 * metrics.recalibration_fraction
        );
        if step == 0 {
            outcome.first_reward = reward;
        }
        outcome.last_reward = reward;
    }
    println!("mean reward {:.3} -> {:.3}", outcome.first_reward, outcome.last_reward);
    Ok(outcome)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut file = match std::env::args_os().nth(1) {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => None,
    };
    let outcome = run(file.as_mut().map(|file| file as &mut dyn Write))?;
    if let Some(mut file) = file {
        file.flush()?;
    }
    if !outcome.learned() {
        std::process::exit(1);
    }
    Ok(())
}
