//! tests/cross_language/seeded_rollout.c in Rust: one seeded rollout, printed
//! bitwise, for the cross-language check (C, Python and Rust must agree).
//!
//! Usage: `cargo run --example seeded_rollout -- bf16|fp8`. Per completion:
//! `tokens: t1 t2 ...`, then `logprobs:` followed by each f32's bit pattern in hex.

use fp8rl::{Backend, Context, ModelConfig, Policy, Recipe, SamplingOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recipe = match std::env::args().nth(1).as_deref() {
        Some("bf16") => Recipe::bf16(),
        Some("fp8") => Recipe::fp8_full(),
        _ => {
            eprintln!("usage: seeded_rollout bf16|fp8");
            std::process::exit(2);
        }
    };
    let context = Context::new(Backend::Cpu)?;
    let config = ModelConfig::new() // the tiny Llama of examples/rl_loop.c
        .vocab_size(32)
        .hidden_size(64)
        .num_layers(2)
        .num_attention_heads(4)
        .num_key_value_heads(2)
        .intermediate_size(128)
        .max_position_embeddings(32);
    let policy = Policy::random(&context, &config, 1)?;
    policy.set_recipe(&recipe)?;

    let sampling = SamplingOptions::new().temperature(0.8).top_k(0).top_p(1.0).max_new_tokens(8).stop_at_eos(false);
    let prompts: [&[i32]; 3] = [&[1, 2, 3], &[4, 5, 6, 7], &[8]];
    let rollout = policy.generate(&prompts, &[11, 12, 13], &sampling)?;
    for completion in &rollout {
        let tokens: String = completion.tokens.iter().map(|token| format!(" {token}")).collect();
        let logprobs: String =
            completion.logprobs.iter().map(|logprob| format!(" {:08x}", logprob.to_bits())).collect();
        println!("tokens:{tokens}");
        println!("logprobs:{logprobs}");
    }
    Ok(())
}
