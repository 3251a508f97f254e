//! One training step's input and what the step did.

use fp8rl_sys as sys;

use crate::args::{completion_tokens, per_sequence, sequence_count, to_i64};
use crate::error::{Error, Result};

/// One batch of sequences for [`Trainer::step`](crate::Trainer::step)
/// (`fp8rl_train_batch`), borrowing the caller's slices.
///
/// Sequence i is `tokens[offsets[i]..offsets[i + 1]]`, its first
/// `prompt_lengths[i]` tokens the prompt and the rest the completion.
/// Per-token slices cover the completion tokens only, sequence after sequence
/// (as [`Rollout::copy_all`](crate::Rollout::copy_all) lays them out), and
/// must have equal lengths. A policy-gradient loss takes exactly one of
/// `rewards` and `advantages`; cross-entropy takes neither.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainBatch<'a> {
    /// Token ids in [0, vocab_size), `offsets[n]` of them.
    pub tokens: &'a [i32],
    /// n + 1 offsets: 0 first, increasing.
    pub offsets: &'a [i64],
    /// One per sequence, in [1, length].
    pub prompt_lengths: &'a [i64],
    /// Per completion token: the generator's log-probs. Needed for importance
    /// weighting; when given, the metrics include the mismatch.
    pub logp_gen: Option<&'a [f32]>,
    /// Per completion token: a reference policy's log-probs (e.g. from
    /// [`Policy::score`](crate::Policy::score)). Needed when kl_coefficient > 0.
    pub logp_ref: Option<&'a [f32]>,
    /// Per completion token: the policy before the iteration, used as given
    /// (finite); `None`: the trainer computes it before the first update.
    pub logp_old: Option<&'a [f32]>,
    /// Per sequence; advantages are then normalized within groups.
    pub rewards: Option<&'a [f32]>,
    /// Per sequence, given by the host.
    pub advantages: Option<&'a [f32]>,
    /// The host's generation time, reported in the time breakdown; default 0.
    pub generation_seconds: f64,
    /// Mixture-of-Experts policies: the generator's expert choices, the
    /// [`Rollout::experts`](crate::Rollout::experts) arrays of the sequences
    /// laid end to end (`[length - 1 positions, sparse layers, k]` per
    /// sequence; [`Sequences::extend_from_rollout`](crate::Sequences::extend_from_rollout)
    /// collects them). Needed for routing replay; otherwise optional, and
    /// when given the metrics report the routing agreement. The library checks
    /// the length against the sequences; dense policies ignore it.
    pub experts: Option<&'a [i32]>,
}

impl<'a> TrainBatch<'a> {
    /// A batch of sequences without per-token or per-sequence data.
    pub fn new(tokens: &'a [i32], offsets: &'a [i64], prompt_lengths: &'a [i64]) -> Self {
        Self {
            tokens,
            offsets,
            prompt_lengths,
            logp_gen: None,
            logp_ref: None,
            logp_old: None,
            rewards: None,
            advantages: None,
            generation_seconds: 0.0,
            experts: None,
        }
    }

    /// The generator's log-probs, one per completion token.
    #[must_use]
    pub fn logp_gen(mut self, logp_gen: &'a [f32]) -> Self {
        self.logp_gen = Some(logp_gen);
        self
    }

    /// A reference policy's log-probs, one per completion token.
    #[must_use]
    pub fn logp_ref(mut self, logp_ref: &'a [f32]) -> Self {
        self.logp_ref = Some(logp_ref);
        self
    }

    /// The policy's log-probs before the iteration, one per completion token.
    #[must_use]
    pub fn logp_old(mut self, logp_old: &'a [f32]) -> Self {
        self.logp_old = Some(logp_old);
        self
    }

    /// One reward per sequence.
    #[must_use]
    pub fn rewards(mut self, rewards: &'a [f32]) -> Self {
        self.rewards = Some(rewards);
        self
    }

    /// One advantage per sequence.
    #[must_use]
    pub fn advantages(mut self, advantages: &'a [f32]) -> Self {
        self.advantages = Some(advantages);
        self
    }

    /// The host's generation time in seconds.
    #[must_use]
    pub fn generation_seconds(mut self, seconds: f64) -> Self {
        self.generation_seconds = seconds;
        self
    }

    /// The generator's expert choices of every fed token, sequence after
    /// sequence (see the field [`experts`](Self::experts)).
    #[must_use]
    pub fn experts(mut self, experts: &'a [i32]) -> Self {
        self.experts = Some(experts);
        self
    }

    /// The C struct, pointing into the slices; fails if C would read past one.
    pub(crate) fn to_c(self) -> Result<sys::fp8rl_train_batch> {
        const FUNCTION: &str = "Trainer::step";
        let sequences = sequence_count(FUNCTION, self.offsets, self.tokens.len(), "tokens")?;
        per_sequence(FUNCTION, "prompt_lengths", self.prompt_lengths, sequences)?;
        for (name, values) in [("rewards", self.rewards), ("advantages", self.advantages)] {
            if let Some(values) = values {
                per_sequence(FUNCTION, name, values, sequences)?;
            }
        }
        // The per-token slices must agree; their common length is what C
        // reads, and C checks it against the sequences.
        let per_token = [("logp_gen", self.logp_gen), ("logp_ref", self.logp_ref), ("logp_old", self.logp_old)];
        let mut given = per_token.iter().filter_map(|&(name, values)| values.map(|values| (name, values.len())));
        let completion_count = match given.next() {
            None => completion_tokens(self.tokens.len(), self.prompt_lengths),
            Some((first, count)) => {
                if let Some((other, other_count)) = given.find(|&(_, len)| len != count) {
                    return Err(Error::invalid_argument(format!(
                        "{FUNCTION}: {first} has {count} values but {other} {other_count}; both need one per completion token"
                    )));
                }
                count
            }
        };

        // SAFETY: plain C data (see c_defaults); init sets struct_size and NULLs.
        let mut c = unsafe { crate::macros::c_defaults(sys::fp8rl_train_batch_init) };
        c.tokens = self.tokens.as_ptr();
        c.offsets = self.offsets.as_ptr();
        c.num_sequences = sequences;
        c.prompt_lengths = self.prompt_lengths.as_ptr();
        c.num_completion_tokens = to_i64("completion tokens", completion_count)?;
        c.logp_gen = self.logp_gen.map_or(std::ptr::null(), <[f32]>::as_ptr);
        c.logp_ref = self.logp_ref.map_or(std::ptr::null(), <[f32]>::as_ptr);
        c.logp_old = self.logp_old.map_or(std::ptr::null(), <[f32]>::as_ptr);
        c.rewards = self.rewards.map_or(std::ptr::null(), <[f32]>::as_ptr);
        c.advantages = self.advantages.map_or(std::ptr::null(), <[f32]>::as_ptr);
        c.generation_seconds = self.generation_seconds;
        // C reads num_expert_choices values, after checking that count
        // against the sequences and the policy.
        if let Some(experts) = self.experts {
            c.experts = experts.as_ptr();
            c.num_expert_choices = to_i64("experts", experts.len())?;
        }
        Ok(c)
    }
}

c_output! {
    /// What one optimizer step did (`fp8rl_train_metrics`), or a whole
    /// iteration ([`IterationMetrics::total`]): then `skipped` and `clipped`
    /// say whether any step was, loss and grad_norm are means over the steps,
    /// the token statistics means over the batch, the ratio extremes over all
    /// steps, and the mismatch and reward fields are set (a single mini-batch's
    /// metrics leave them 0).
    pub struct TrainMetrics: sys::fp8rl_train_metrics = sys::fp8rl_train_metrics_init {
        /// Steps taken, this one included.
        step: i64,
        /// The gradient was not finite; weights, optimizer state and scales
        /// are unchanged (the message is logged at warning level).
        skipped: bool,
        /// The gradient norm exceeded max_grad_norm.
        clipped: bool,
        /// The batch loss.
        loss: f64,
        /// Global L2 norm before clipping.
        grad_norm: f64,
        /// The rate of this step.
        learning_rate: f64,
        /// Fraction of tokens whose clipped branch was active.
        clip_fraction: f64,
        /// Mean r = exp(logp - logp_old) (1 on-policy).
        ratio_mean: f64,
        /// Mean entropy of the training distribution over completion tokens.
        entropy: f64,
        /// Mean k1 KL to the reference (0 without logp_ref).
        kl_k1: f64,
        /// Mean k3 KL to the reference (0 without logp_ref).
        kl_k3: f64,
        /// Mean reward (0 when advantages were given).
        reward_mean: f64,
        /// logp_gen was given and the mismatch fields below are set.
        has_mismatch: bool,
        /// Mean exp(|logp_old - logp_gen|); 1 when identical.
        token_mult_prob_error: f64,
        /// Mean k3 of KL(gen || train).
        gen_kl_error: f64,
        /// Mean importance weight (1 when off).
        is_weight_mean: f64,
        /// Fraction of tokens whose weight was truncated.
        is_truncated_fraction: f64,
        /// Fraction of tokens whose weight was masked to 0.
        is_masked_fraction: f64,
        /// Sequences in the batch.
        sequences: i64,
        /// Completion tokens in the batch.
        completion_tokens: i64,
        /// Tokens through the training forward and backward passes.
        trained_tokens: i64,
        /// trained_tokens / train_seconds.
        tokens_per_second: f64,
        /// As the batch reported it.
        generation_seconds: f64,
        /// Computing logp_old for mini-batches after the first (0 with one).
        recompute_seconds: f64,
        /// Forward, backward and optimizer.
        train_seconds: f64,
        /// Requantizing the weights and replacing the attention scales.
        recalibration_seconds: f64,
        /// recalibration / (generation + recompute + train + recalibration).
        recalibration_fraction: f64,
        /// Smallest r = exp(logp - logp_old) over the tokens.
        ratio_min: f64,
        /// Largest r.
        ratio_max: f64,
        /// Mean k3 estimate of KL(old || current): how far the policy taking
        /// the step has moved from the one before the iteration.
        old_policy_kl: f64,
        /// Optimizer steps these metrics cover (1 for one step).
        minibatches: i64,
        /// Data parallelism (0 with one rank): bytes this rank sent into
        /// gradient reductions. With a communicator every other field is
        /// global: counts and means over all ranks' sequences and tokens.
        bytes_reduced: i64,
        /// Bytes this rank received in weight gathers (FP8 codes and block
        /// scales for FP8 linear layers, FP32 for the rest; 0 with one rank).
        bytes_gathered: i64,
        /// Time in collectives, included in train_seconds (0 with one rank).
        communication_seconds: f64,
        /// Mixture-of-Experts policies (all three 0 for dense ones): the
        /// (fed token, sparse layer, slot) choices compared with the batch's
        /// [`experts`](crate::TrainBatch::experts) (0 when it brought none).
        routing_choices: i64,
        /// The share of the training router's choices the generator also made
        /// for that token and layer: exactly 1 when both ran one recipe.
        /// Measured on the router's own choice, also under routing replay;
        /// 0 when `routing_choices` is 0 (nothing was compared).
        routing_agreement: f64,
        /// The load-balancing loss (without its coefficient), a fed-token mean:
        /// num_experts_per_tok for perfectly balanced routing.
        router_aux_loss: f64,
    }
}

/// What a [`Trainer::iterate`](crate::Trainer::iterate) did.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationMetrics {
    /// The whole iteration.
    pub total: TrainMetrics,
    /// Each optimizer step, in order.
    pub minibatches: Vec<TrainMetrics>,
}
