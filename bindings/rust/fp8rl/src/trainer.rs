//! Trainers: RL (or SFT) steps on a policy, in the policy's own recipe.

use std::path::Path;
use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::args::{completion_tokens, path_to_c, per_sequence, sequence_count, to_i64};
use crate::batch::{IterationMetrics, TrainBatch, TrainMetrics};
use crate::error::{check, Error, Result};
use crate::policy::Policy;
use crate::report::MemoryReport;
use crate::trainer_options::TrainerOptions;

/// Trains one policy in place (`fp8rl_trainer`): recomputes the batch's
/// log-probs, forms advantages, runs the loss's forward and backward passes,
/// takes an AdamW step on the FP32 master weights and recalibrates.
///
/// A trainer borrows its policy, so the policy outlives it (the C library
/// refuses to destroy a policy a trainer uses). The borrow is shared: the
/// policy keeps generating between steps, as an RL loop needs.
///
/// ```no_run
/// use fp8rl::{Backend, Context, ModelConfig, Policy, SamplingOptions, Sequences, Trainer, TrainerOptions};
/// # let config = ModelConfig::new();
/// let context = Context::new(Backend::Cpu)?;
/// let policy = Policy::random(&context, &config, 1)?;
/// let mut trainer = Trainer::new(&policy, &TrainerOptions::new().learning_rate(1e-5))?;
/// let prompts = [[1, 2, 3]];
/// let seeds = trainer.next_seeds(prompts.len())?;
/// let rollout = policy.generate(&prompts, &seeds, &SamplingOptions::new())?;
/// let mut sequences = Sequences::new();
/// for (prompt, completion) in prompts.iter().zip(&rollout) {
///     sequences.push(prompt, completion.tokens);
/// }
/// let metrics = trainer.step(&sequences.batch().rewards(&[1.0]))?;
/// println!("loss {}", metrics.loss);
/// # Ok::<(), fp8rl::Error>(())
/// ```
///
/// The policy cannot be dropped while a trainer borrows it:
///
/// ```compile_fail
/// # use fp8rl::{Backend, Context, ModelConfig, Policy, Trainer, TrainerOptions};
/// # let config = ModelConfig::new();
/// let context = Context::new(Backend::Cpu)?;
/// let policy = Policy::random(&context, &config, 1)?;
/// let trainer = Trainer::new(&policy, &TrainerOptions::new())?;
/// drop(policy); // error: `policy` is borrowed by `trainer`
/// trainer.memory()?;
/// # Ok::<(), fp8rl::Error>(())
/// ```
pub struct Trainer<'p> {
    raw: NonNull<sys::fp8rl_trainer>,
    policy: &'p Policy<'p>,
    minibatches: usize,
    // Routing replay on a policy with sparse layers: batches must bring experts.
    needs_experts: bool,
}

// SAFETY: the header documents every trainer function except
// fp8rl_trainer_destroy as thread-safe ("calls on the policy's context are
// serialized"); destroy only runs from `Drop`, which owns the trainer. The
// policy reference is Send + Sync (Policy is Sync).
unsafe impl Send for Trainer<'_> {}
// SAFETY: see `Send`: shared references only reach the thread-safe functions.
unsafe impl Sync for Trainer<'_> {}

impl<'p> Trainer<'p> {
    /// A trainer of `policy`; bad options fail with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) and a
    /// message naming the field.
    pub fn new(policy: &'p Policy<'p>, options: &TrainerOptions) -> Result<Self> {
        let options = options.c_fields();
        let minibatches = usize::try_from(options.minibatches).unwrap_or(0);
        let needs_experts = options.routing_replay != 0 && policy.config()?.sparse_layer_count() > 0;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid policy, options and out-pointer.
        check(unsafe { sys::fp8rl_trainer_create(policy.as_ptr(), &options, &mut raw) })?;
        let raw = NonNull::new(raw).expect("fp8rl_trainer_create succeeded without a trainer");
        Ok(Self { raw, policy, minibatches, needs_experts })
    }

    /// Routing replay needs the generator's experts: refused here with a
    /// message that says where they come from (the library refuses too).
    fn check_experts(&self, function: &str, batch: &TrainBatch<'_>) -> Result<()> {
        if self.needs_experts && batch.experts.is_none() {
            return Err(Error::invalid_argument(format!(
                "{function}: routing_replay trains with the generator's expert choices, but the batch has none: \
                 generate with SamplingOptions::record_experts(true) and build the batch with \
                 Sequences::extend_from_rollout (or TrainBatch::experts), or turn routing_replay off"
            )));
        }
        Ok(())
    }

    /// The policy being trained.
    pub fn policy(&self) -> &'p Policy<'p> {
        self.policy
    }

    /// One training step on a batch: the one-mini-batch iteration, whatever
    /// the options' `minibatches` says.
    ///
    /// Malformed sequences, missing or extra arrays for the loss fail with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument), NaN/Inf
    /// rewards, advantages or log-probs with
    /// [`Status::NonFinite`](crate::Status::NonFinite); nothing changes then.
    /// A non-finite gradient is not an error: the metrics say `skipped`.
    ///
    /// Mixture-of-Experts policies: a batch with the generator's
    /// [`experts`](TrainBatch::experts) (which [`Sequences::batch`](crate::Sequences::batch)
    /// passes when the rollout recorded them) gets the routing metrics; with
    /// `routing_replay` a batch without them fails with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) before C.
    pub fn step(&mut self, batch: &TrainBatch<'_>) -> Result<TrainMetrics> {
        self.check_experts("Trainer::step", batch)?;
        let batch = batch.to_c()?;
        let mut metrics = TrainMetrics::empty_c();
        // SAFETY: the batch points into slices it checked; metrics has struct_size set.
        check(unsafe { sys::fp8rl_trainer_step(self.raw.as_ptr(), &batch, &mut metrics) })?;
        Ok(TrainMetrics::from_c(&metrics))
    }

    /// One PPO iteration: the options' `minibatches` optimizer steps on
    /// consecutive mini-batches of the batch, with logp_old (the batch's, or the
    /// policy's before the first update), the advantages and the importance
    /// weights fixed once; from the second mini-batch on the ratio departs
    /// from 1 and the clip acts. Errors as [`Trainer::step`], and
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) for fewer
    /// sequences than mini-batches; every input is checked before the first update.
    pub fn iterate(&mut self, batch: &TrainBatch<'_>) -> Result<IterationMetrics> {
        self.check_experts("Trainer::iterate", batch)?;
        let batch = batch.to_c()?;
        let mut total = TrainMetrics::empty_c();
        let mut steps = vec![TrainMetrics::empty_c(); self.minibatches];
        let capacity = to_i64("mini-batches", steps.len())?;
        // SAFETY: the batch points into slices it checked; every metrics
        // struct has struct_size set and the array holds `capacity` of them.
        check(unsafe {
            sys::fp8rl_trainer_iterate(self.raw.as_ptr(), &batch, &mut total, steps.as_mut_ptr(), capacity)
        })?;
        Ok(IterationMetrics {
            total: TrainMetrics::from_c(&total),
            minibatches: steps.iter().map(TrainMetrics::from_c).collect(),
        })
    }

    /// The completion tokens' log-probs under the training distribution, as
    /// a step recomputes logp_old (one per completion token, sequence after
    /// sequence; see [`Sequences`](crate::Sequences) for the layout).
    pub fn recompute_logprobs(
        &self,
        tokens: &[i32],         // [offsets[n]]
        offsets: &[i64],        // [n + 1]
        prompt_lengths: &[i64], // [n]
    ) -> Result<Vec<f32>> {
        const FUNCTION: &str = "Trainer::recompute_logprobs";
        let sequences = sequence_count(FUNCTION, offsets, tokens.len(), "tokens")?;
        per_sequence(FUNCTION, "prompt_lengths", prompt_lengths, sequences)?;
        let mut logprobs = vec![0f32; completion_tokens(tokens.len(), prompt_lengths)];
        // SAFETY: offsets stay inside tokens, one prompt length per sequence
        // (checked above); logprobs is passed with its capacity.
        check(unsafe {
            sys::fp8rl_trainer_recompute_logprobs(
                self.raw.as_ptr(),
                tokens.as_ptr(),
                offsets.as_ptr(),
                sequences,
                prompt_lengths.as_ptr(),
                logprobs.as_mut_ptr(),
                to_i64("logprobs", logprobs.len())?,
            )
        })?;
        Ok(logprobs)
    }

    /// Requantizes every compute copy of the policy's weights from the FP32
    /// master weights and applies the attention scales measured in the last
    /// step; steps do it themselves unless `recalibrate_after_step` is off.
    /// Returns the seconds it took.
    pub fn recalibrate(&mut self) -> Result<f64> {
        let mut seconds = 0.0;
        // SAFETY: a valid trainer and out-pointer.
        check(unsafe { sys::fp8rl_trainer_recalibrate(self.raw.as_ptr(), &mut seconds) })?;
        Ok(seconds)
    }

    /// Data parallelism: all-gathers the FP32 master weights, so that this
    /// rank's policy holds all of them again (each rank updates only its
    /// optimizer slice's). Collective: every rank calls it. Call it before
    /// reading the policy's master weights after a data-parallel step
    /// (saving or exporting it, changing its recipe, copying its weights, or
    /// dropping the trainer when the policy is used afterwards); until then
    /// those fail with [`Status::Distributed`](crate::Status::Distributed).
    /// [`save_state`](Self::save_state) gathers them itself. Returns at once
    /// with one rank or when the masters are whole.
    pub fn gather_weights(&mut self) -> Result<()> {
        // SAFETY: a valid trainer.
        check(unsafe { sys::fp8rl_trainer_gather_weights(self.raw.as_ptr()) })
    }

    /// Seeds for the next `count` rollouts, from the trainer's seed stream
    /// (part of the saved state, so a resumed run draws the same seeds).
    pub fn next_seeds(&mut self, count: usize) -> Result<Vec<u64>> {
        let mut seeds = vec![0u64; count];
        // SAFETY: seeds holds count entries.
        check(unsafe {
            sys::fp8rl_trainer_next_seeds(self.raw.as_ptr(), to_i64("count", count)?, seeds.as_mut_ptr())
        })?;
        Ok(seeds)
    }

    /// Saves the whole training state (master weights, optimizer moments,
    /// step counters, seed stream, recipe, attention scales) to one
    /// .safetensors file, atomically; its folder must exist.
    pub fn save_state(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_to_c("Trainer::save_state", path.as_ref())?;
        // SAFETY: a valid trainer and NUL-terminated path.
        check(unsafe { sys::fp8rl_trainer_save_state(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// Restores a state [`save_state`](Self::save_state) wrote: later steps
    /// continue bit for bit as the saved run did (given the same options).
    /// The file is validated in full before anything changes: a damaged file
    /// fails with [`Status::CorruptData`](crate::Status::CorruptData), a
    /// missing one with [`Status::Io`](crate::Status::Io).
    pub fn load_state(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_to_c("Trainer::load_state", path.as_ref())?;
        // SAFETY: a valid trainer and NUL-terminated path.
        check(unsafe { sys::fp8rl_trainer_load_state(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// The memory the trainer and its policy hold, by component.
    pub fn memory(&self) -> Result<MemoryReport> {
        let mut report = MemoryReport::empty_c();
        // SAFETY: a valid trainer and report with struct_size set.
        check(unsafe { sys::fp8rl_trainer_memory(self.raw.as_ptr(), &mut report) })?;
        Ok(MemoryReport::from_c(&report))
    }
}

impl Drop for Trainer<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the trainer. It cannot fail.
        unsafe { sys::fp8rl_trainer_destroy(self.raw.as_ptr()) };
    }
}

impl std::fmt::Debug for Trainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer").field("raw", &self.raw).field("policy", self.policy).finish()
    }
}
