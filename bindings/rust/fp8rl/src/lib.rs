//! Safe Rust API of fp8rl: FP8 end-to-end reinforcement learning for LLM
//! policies, over the C library `libfp8rl` (through the raw [`sys`] crate).
//!
//! The C API's objects become owned values that free themselves on drop, and
//! its lifetime rules become borrows the compiler checks:
//!
//! - a [`Context`] (backend, threads, logging) outlives its [`Policy`]s, which
//!   borrow it (`Policy<'ctx>`);
//! - a [`Trainer`] borrows its policy (`Trainer<'p>`), so the policy outlives
//!   it, while the policy keeps generating between training steps;
//! - a [`Rollout`] (the completions of one generation) owns copies and
//!   depends on nothing; its [`Completion`]s borrow it, zero-copy;
//! - a [`Communicator`] (the ranks of data-parallel training) is shared by
//!   the contexts built with it, each of which keeps its own reference;
//! - a [`Tokenizer`] (a model folder's `tokenizer.json`) depends on nothing:
//!   [`Policy::tokenizer`] reads the policy's folder once.
//!
//! Every failure is an [`Error`] carrying the library's [`Status`] and its
//! message. Options structs are Rust structs with public fields and builder
//! setters, starting from the library's own defaults. Slices go in and
//! vectors come out; the binding checks that slices are as long as C will
//! read, and leaves every value check to the library.
//!
//! # Threads
//!
//! The library serializes all calls on a context and its policies and
//! trainers, so [`Context`], [`Policy`], [`Trainer`] and [`Rollout`] are all
//! `Send + Sync` (each `unsafe impl` says why). Methods that change a
//! policy take `&self`, as they would on a mutex.
//!
//! # Example: a tiny policy learns to answer with the token 7
//!
//! ```no_run
//! use fp8rl::{Backend, Context, ImportanceMode, ImportanceOptions, ModelConfig, Policy,
//!             Recipe, SamplingOptions, Sequences, Trainer, TrainerOptions};
//!
//! let context = Context::new(Backend::Cpu)?;
//! let config = ModelConfig::new().vocab_size(32).hidden_size(64).num_layers(2)
//!     .num_attention_heads(4).num_key_value_heads(2).intermediate_size(128)
//!     .max_position_embeddings(32);
//! let policy = Policy::random(&context, &config, 1)?;
//! policy.set_recipe(&Recipe::fp8_full())?;
//! let options = TrainerOptions::new().learning_rate(1e-2).group_size(4)
//!     .importance(ImportanceOptions::new().mode(ImportanceMode::Truncated));
//! let mut trainer = Trainer::new(&policy, &options)?;
//! let sampling = SamplingOptions::new().max_new_tokens(6).stop_at_eos(false);
//!
//! let prompts = vec![[8, 9, 10, 11]; 4]; // one prompt, a group of 4
//! for step in 0..20 {
//!     let seeds = trainer.next_seeds(prompts.len())?;
//!     let rollout = policy.generate(&prompts, &seeds, &sampling)?;
//!     let mut sequences = Sequences::new();
//!     let (mut logp_gen, mut rewards) = (Vec::new(), Vec::new());
//!     for (prompt, completion) in prompts.iter().zip(&rollout) {
//!         sequences.push(prompt, completion.tokens);
//!         logp_gen.extend_from_slice(completion.logprobs);
//!         let hits = completion.tokens.iter().filter(|&&token| token == 7).count();
//!         rewards.push(hits as f32 / completion.tokens.len() as f32);
//!     }
//!     let batch = sequences.batch().logp_gen(&logp_gen).rewards(&rewards);
//!     let metrics = trainer.step(&batch)?;
//!     println!("step {step}: reward {:.3}", metrics.reward_mean);
//! }
//! # Ok::<(), fp8rl::Error>(())
//! ```
//!
//! # Linking
//!
//! `fp8rl-sys` finds libfp8rl through `FP8RL_LIB_DIR`, pkg-config, or by
//! building this repository with CMake, and records the folder as an rpath.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]

#[macro_use]
mod macros;

mod args;
mod attention;
mod batch;
mod communicator;
mod config;
mod context;
mod enums;
mod error;
mod gemm;
mod generate;
mod mismatch;
mod numerics;
mod policy;
mod recipe;
mod report;
mod rollout;
mod sampling;
mod sequences;
mod tokenizer;
mod trainer;
mod trainer_options;
mod version;

/// The raw declarations this crate is built on, for what it does not wrap.
pub use fp8rl_sys as sys;

pub use attention::{AttentionScales, CalibrationOptions};
pub use batch::{IterationMetrics, TrainBatch, TrainMetrics};
pub use communicator::{nccl_unique_id, CollectiveResult, Communicator, HostCollectives, NcclUniqueId, SumBuffer};
pub use config::{ModelConfig, MAX_EOS_TOKEN_IDS, MAX_MLP_ONLY_LAYERS};
pub use context::{Context, ContextBuilder};
pub use enums::{
    AdvantageBaseline, Aggregation, Backend, BlockLayout, DType, FinishReason, ImportanceMode, KlEstimator, LogLevel,
    LossKind, LrSchedule, ModelFamily, Precision, RopeScaling, ScaleFormat,
};
pub use error::{Error, Result, Status};
pub use gemm::Fp8Matrix;
pub use mismatch::{mismatch_metrics, ImportanceOptions, MismatchMetrics};
pub use numerics::{convert, Elements, ElementsMut, QuantizeOptions, Quantized};
pub use policy::Policy;
pub use recipe::Recipe;
pub use report::MemoryReport;
pub use rollout::{Completion, Completions, ExpertChoices, Iter, Rollout};
pub use sampling::SamplingOptions;
pub use sequences::Sequences;
pub use tokenizer::{SpecialTokenIds, Tokenizer, MAX_EOS_IDS};
pub use trainer::Trainer;
pub use trainer_options::TrainerOptions;
pub use version::{build_features, version, version_string, Features, HEADER_VERSION};
