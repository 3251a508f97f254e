//! Generation and scoring: the two ways a policy meets tokens.

use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::args::{completion_tokens, per_sequence, sequence_count, to_i64};
use crate::error::{check, Error, Result};
use crate::policy::Policy;
use crate::rollout::Rollout;
use crate::sampling::SamplingOptions;

impl Policy<'_> {
    /// Generates one completion per prompt; `seeds[i]` alone decides the
    /// random draws of prompt i, so a prompt with the same seed gets the same
    /// completion (tokens and log-probs, bitwise) whatever else is in the
    /// batch.
    ///
    /// Token ids outside the vocabulary, empty prompts, prompts longer than
    /// max_position_embeddings and bad options fail with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) (the
    /// message names the prompt and position, or the field).
    pub fn generate<P: AsRef<[i32]>>(
        &self,
        prompts: &[P],
        seeds: &[u64],
        options: &SamplingOptions,
    ) -> Result<Rollout> {
        let mut tokens = Vec::with_capacity(prompts.iter().map(|prompt| prompt.as_ref().len()).sum());
        let mut offsets = Vec::with_capacity(prompts.len() + 1);
        offsets.push(0);
        for prompt in prompts {
            tokens.extend_from_slice(prompt.as_ref());
            offsets.push(to_i64("prompt tokens", tokens.len())?);
        }
        self.generate_flat(&tokens, &offsets, seeds, options)
    }

    /// [`generate`](Self::generate) with the prompts laid out flat: prompt i is
    /// `tokens[offsets[i]..offsets[i + 1]]`.
    pub fn generate_flat(
        &self,
        tokens: &[i32],  // [offsets[n]]
        offsets: &[i64], // [n + 1]
        seeds: &[u64],   // [n]
        options: &SamplingOptions,
    ) -> Result<Rollout> {
        let prompts = sequence_count("Policy::generate", offsets, tokens.len(), "prompt tokens")?;
        if seeds.len() as i64 != prompts {
            return Err(Error::invalid_argument(format!(
                "Policy::generate: {} seeds for {prompts} prompts",
                seeds.len()
            )));
        }
        let mut raw = std::ptr::null_mut();
        options.with_c(|options| {
            // SAFETY: the offsets stay inside tokens and there is one seed per
            // prompt (checked above); the options borrow their stop tokens.
            check(unsafe {
                sys::fp8rl_policy_generate(
                    self.as_ptr(),
                    tokens.as_ptr(),
                    offsets.as_ptr(),
                    prompts,
                    seeds.as_ptr(),
                    options,
                    &mut raw,
                )
            })
        })?;
        Rollout::from_raw(NonNull::new(raw).expect("fp8rl_policy_generate succeeded without a rollout"))
    }

    /// The log-probs of given completions under the policy, exactly as
    /// generation records them with the same temperature, top_k and top_p
    /// (the other options are ignored).
    ///
    /// Sequence i is `tokens[offsets[i]..offsets[i + 1]]`, its first
    /// `prompt_lengths[i]` tokens the prompt; the result holds one log-prob
    /// per completion token, sequence after sequence.
    pub fn score(
        &self,
        tokens: &[i32],         // [offsets[n]]
        offsets: &[i64],        // [n + 1]
        prompt_lengths: &[i64], // [n]
        options: &SamplingOptions,
    ) -> Result<Vec<f32>> {
        let sequences = sequence_count("Policy::score", offsets, tokens.len(), "tokens")?;
        per_sequence("Policy::score", "prompt_lengths", prompt_lengths, sequences)?;
        let mut logprobs = vec![0f32; completion_tokens(tokens.len(), prompt_lengths)];
        options.with_c(|options| {
            // SAFETY: offsets stay inside tokens, one prompt length per
            // sequence (checked above); logprobs is passed with its capacity.
            check(unsafe {
                sys::fp8rl_policy_score(
                    self.as_ptr(),
                    tokens.as_ptr(),
                    offsets.as_ptr(),
                    sequences,
                    prompt_lengths.as_ptr(),
                    options,
                    logprobs.as_mut_ptr(),
                    to_i64("logprobs", logprobs.len())?,
                )
            })
        })?;
        Ok(logprobs)
    }
}
