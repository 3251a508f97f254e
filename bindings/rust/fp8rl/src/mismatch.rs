//! How far the generator's log-probs are from the training policy's.

use fp8rl_sys as sys;

use crate::args::sequence_count;
use crate::enums::ImportanceMode;
use crate::error::{check, Error, Result};

c_options! {
    /// Importance-weight options (`fp8rl_importance_options`): of
    /// [`mismatch_metrics`] and of a trainer ([`TrainerOptions::importance`](crate::TrainerOptions::importance)).
    ///
    /// The default mode is [`ImportanceMode::Off`]: generation and training
    /// share one engine, so in one recipe the log-probs agree bit for bit and
    /// every weight is 1, while any other mode makes a policy-gradient step
    /// need the generator's log-probs. Turn it on ([`ImportanceMode::Truncated`]
    /// with `high` 2) when the generator runs another recipe than the trainer.
    pub struct ImportanceOptions: sys::fp8rl_importance_options = sys::fp8rl_importance_options_init {
        /// Default [`ImportanceMode::Off`].
        mode: ImportanceMode,
        /// Lower bound, >= 0; default 0.
        low: f64,
        /// Upper bound (the truncation cap), > 0 and >= low; default 2.
        high: f64,
    }
}

c_output! {
    /// Mismatch metrics over a batch of completion tokens (`fp8rl_mismatch_metrics`).
    pub struct MismatchMetrics: sys::fp8rl_mismatch_metrics = sys::fp8rl_mismatch_metrics_init {
        /// Tokens measured.
        tokens: i64,
        /// Tokens with a non-finite logp_gen, left out of the means below.
        non_finite_tokens: i64,
        /// Mean exp(|logp_old - logp_gen|); 1 when identical.
        token_mult_prob_error: f64,
        /// Mean k3 estimate of KL(gen || train): exp(x) - x - 1, x = logp_old - logp_gen.
        gen_kl_error: f64,
        /// Mean logp_gen - logp_old (the k1 estimate of the same KL).
        gen_kl_k1: f64,
        /// Mean k3 estimate of KL(train || gen).
        policy_kl_error: f64,
        /// Mean importance weight under the options.
        is_weight_mean: f64,
        /// Fraction of tokens whose weight was truncated.
        is_truncated_fraction: f64,
        /// Fraction of tokens whose weight was masked to 0.
        is_masked_fraction: f64,
        /// Sequences masked as a whole.
        is_masked_sequences: i64,
    }
}

/// The mismatch between log-probs the training policy recomputed
/// (`logp_old`, finite) and those the generator recorded (`logp_gen`),
/// with importance weights w = exp(logp_old - logp_gen) formed per `options`.
///
/// Sequence i's tokens are `offsets[i]..offsets[i + 1]` of both slices (as
/// [`Rollout::copy_all`](crate::Rollout::copy_all) and
/// [`Policy::score`](crate::Policy::score) lay them out).
pub fn mismatch_metrics(
    logp_old: &[f32], // [offsets[n]]
    logp_gen: &[f32], // [offsets[n]]
    offsets: &[i64],  // [n + 1]
    options: &ImportanceOptions,
) -> Result<MismatchMetrics> {
    const FUNCTION: &str = "mismatch_metrics";
    if logp_old.len() != logp_gen.len() {
        return Err(Error::invalid_argument(format!(
            "{FUNCTION}: logp_old has {} values, logp_gen {}",
            logp_old.len(),
            logp_gen.len()
        )));
    }
    let sequences = sequence_count(FUNCTION, offsets, logp_old.len(), "log-probs")?;
    let options = options.c_fields();
    let mut metrics = MismatchMetrics::empty_c();
    // SAFETY: the offsets stay inside both slices (checked above).
    check(unsafe {
        sys::fp8rl_mismatch_metrics_compute(
            logp_old.as_ptr(),
            logp_gen.as_ptr(),
            offsets.as_ptr(),
            sequences,
            &options,
            &mut metrics,
        )
    })?;
    Ok(MismatchMetrics::from_c(&metrics))
}
