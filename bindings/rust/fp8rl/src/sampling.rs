//! Sampling options: how completions are drawn and when they end.

use fp8rl_sys as sys;

use crate::args::to_i64;
use crate::error::Result;

c_options! {
    /// How completions are drawn and when they end (`fp8rl_sampling_options`).
    ///
    /// The sampling distribution is softmax(logits / temperature), restricted
    /// to the top_k most likely tokens and then to the smallest set whose
    /// probability reaches top_p, renormalized; log-probs are taken under it.
    ///
    /// ```
    /// let sampling = fp8rl::SamplingOptions::new().temperature(0.7).max_new_tokens(32).stop_token_ids(&[2]);
    /// assert_eq!(sampling.top_p, 1.0);
    /// ```
    pub struct SamplingOptions: sys::fp8rl_sampling_options = sys::fp8rl_sampling_options_init {
        /// Default 1; 0 = greedy (the log-prob of the chosen token is then 0).
        temperature: f32,
        /// Keep the k most likely tokens; 0 (default) = all.
        top_k: i32,
        /// Nucleus mass in (0, 1]; default 1.
        top_p: f32,
        /// Completion length limit (> 0); default 64.
        max_new_tokens: i32,
        /// The model's EOS tokens also end a completion; default true.
        stop_at_eos: bool,
        /// Sequences in flight at once; 0 (default) = all prompts. Finished
        /// sequences hand their slot to waiting prompts. Results do not depend on it.
        batch_slots: i32,
        /// Bound on the tokens of one forward pass (prefill is chunked); default 2048.
        max_tokens_per_step: i32,
        /// Keep the experts each fed token was routed to (Mixture-of-Experts
        /// policies; [`Rollout::experts`](crate::Rollout::experts)); default false.
        record_experts: bool,
    }
    by_hand {
        /// Tokens that end a completion (after being emitted); default none.
        stop_token_ids: Vec<i32>,
    }
}

impl SamplingOptions {
    /// Tokens that end a completion (after being emitted); default none.
    ///
    /// Builder setter of the field of the same name.
    #[must_use]
    pub fn stop_token_ids(mut self, ids: &[i32]) -> Self {
        self.stop_token_ids = ids.to_vec();
        self
    }

    /// Calls `f` with the C struct, whose stop-token pointer borrows `self`
    /// (so it is valid exactly as long as the call).
    pub(crate) fn with_c<R>(&self, f: impl FnOnce(&sys::fp8rl_sampling_options) -> Result<R>) -> Result<R> {
        let mut c = self.c_fields();
        c.num_stop_token_ids = to_i64("stop_token_ids", self.stop_token_ids.len())?;
        c.stop_token_ids = if self.stop_token_ids.is_empty() { std::ptr::null() } else { self.stop_token_ids.as_ptr() };
        f(&c)
    }
}
