//! Sequences of prompt + completion, laid out flat as the library wants them.

use crate::batch::TrainBatch;
use crate::error::{Error, Result};
use crate::rollout::{ExpertChoices, Rollout};

/// Prompt + completion sequences in the flat layout of
/// [`Policy::score`](crate::Policy::score),
/// [`Trainer::recompute_logprobs`](crate::Trainer::recompute_logprobs) and
/// [`TrainBatch`]: sequence i is `tokens()[offsets()[i]..offsets()[i + 1]]`,
/// its first `prompt_lengths()[i]` tokens the prompt.
///
/// ```
/// let mut sequences = fp8rl::Sequences::new();
/// sequences.push(&[1, 2, 3], &[7, 7]);
/// sequences.push(&[4], &[5, 6, 7]);
/// assert_eq!(sequences.tokens(), [1, 2, 3, 7, 7, 4, 5, 6, 7]);
/// assert_eq!(sequences.offsets(), [0, 5, 9]);
/// assert_eq!(sequences.prompt_lengths(), [3, 1]);
/// assert_eq!(sequences.completion_tokens(), 5);
/// assert_eq!(sequences.experts(), None);
/// ```
///
/// Mixture-of-Experts policies: [`extend_from_rollout`](Self::extend_from_rollout)
/// also collects the generator's expert choices when the rollout recorded them
/// ([`SamplingOptions::record_experts`](crate::SamplingOptions::record_experts)),
/// and [`batch`](Self::batch) then passes them to the trainer (routing replay,
/// the routing agreement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequences {
    tokens: Vec<i32>,
    offsets: Vec<i64>,
    prompt_lengths: Vec<i64>,
    // The expert choices of the first `with_experts` sequences, laid end to end.
    experts: Vec<i32>,
    with_experts: usize,
}

impl Sequences {
    /// No sequences yet.
    pub fn new() -> Self {
        Self { tokens: Vec::new(), offsets: vec![0], prompt_lengths: Vec::new(), experts: Vec::new(), with_experts: 0 }
    }

    /// Appends the sequence `prompt` followed by `completion`, without expert
    /// choices (after it, [`experts`](Self::experts) is `None`).
    pub fn push(&mut self, prompt: &[i32], completion: &[i32]) {
        self.tokens.extend_from_slice(prompt);
        self.tokens.extend_from_slice(completion);
        self.offsets.push(self.tokens.len() as i64);
        self.prompt_lengths.push(prompt.len() as i64);
    }

    /// Appends the sequence `prompt` followed by `completion` with the expert
    /// choices the generator made for its fed tokens (from
    /// [`Rollout::experts`]). Fails, appending nothing, when `experts` does not
    /// cover the sequence's `prompt.len() + completion.len() - 1` fed tokens.
    pub fn push_with_experts(&mut self, prompt: &[i32], completion: &[i32], experts: &ExpertChoices<'_>) -> Result<()> {
        const FUNCTION: &str = "Sequences::push_with_experts";
        let fed = (prompt.len() + completion.len()).saturating_sub(1);
        if experts.positions != fed || experts.choices.len() != fed * experts.sparse_layers * experts.top_k {
            return Err(Error::invalid_argument(format!(
                "{FUNCTION}: the experts cover {} positions ({} choices), but the sequence feeds {fed} tokens",
                experts.positions,
                experts.choices.len()
            )));
        }
        // Only a run of sequences that all came with experts keeps them.
        let complete = self.with_experts == self.len();
        self.push(prompt, completion);
        if complete {
            self.experts.extend_from_slice(experts.choices);
            self.with_experts += 1;
        }
        Ok(())
    }

    /// Appends each prompt followed by its completion in `rollout` (the
    /// completions in prompt order, so `prompts` are the ones the rollout was
    /// generated from), with the completions' expert choices when the rollout
    /// recorded them. Fails, appending nothing, when the counts differ.
    pub fn extend_from_rollout<P: AsRef<[i32]>>(&mut self, prompts: &[P], rollout: &Rollout) -> Result<()> {
        const FUNCTION: &str = "Sequences::extend_from_rollout";
        if prompts.len() != rollout.len() {
            return Err(Error::invalid_argument(format!(
                "{FUNCTION}: {} prompts for a rollout of {} completions",
                prompts.len(),
                rollout.len()
            )));
        }
        let mut recorded = Vec::with_capacity(prompts.len());
        for index in 0..rollout.len() {
            let experts = rollout.experts(index)?;
            recorded.push((experts.positions > 0).then_some(experts));
        }
        // All or none: a rollout records every completion's experts or none.
        let recorded = if recorded.iter().all(Option::is_some) { recorded } else { vec![None; prompts.len()] };
        // Check every sequence before appending any.
        for ((prompt, completion), experts) in prompts.iter().zip(rollout).zip(&recorded) {
            let fed = (prompt.as_ref().len() + completion.tokens.len()).saturating_sub(1);
            if let Some(experts) = experts {
                if experts.positions != fed {
                    return Err(Error::invalid_argument(format!(
                        "{FUNCTION}: a completion's experts cover {} positions, but its prompt and completion feed \
                         {fed} tokens (are these the rollout's prompts?)",
                        experts.positions
                    )));
                }
            }
        }
        for ((prompt, completion), experts) in prompts.iter().zip(rollout).zip(&recorded) {
            match experts {
                Some(experts) => self.push_with_experts(prompt.as_ref(), completion.tokens, experts)?,
                None => self.push(prompt.as_ref(), completion.tokens),
            }
        }
        Ok(())
    }

    /// The number of sequences.
    pub fn len(&self) -> usize {
        self.prompt_lengths.len()
    }

    /// Whether there are no sequences.
    pub fn is_empty(&self) -> bool {
        self.prompt_lengths.is_empty()
    }

    /// All tokens, sequence after sequence.
    pub fn tokens(&self) -> &[i32] {
        &self.tokens
    }

    /// len() + 1 offsets into `tokens()`, 0 first.
    pub fn offsets(&self) -> &[i64] {
        &self.offsets
    }

    /// The prompt length of each sequence.
    pub fn prompt_lengths(&self) -> &[i64] {
        &self.prompt_lengths
    }

    /// The number of completion tokens over all sequences (the length of
    /// per-token arrays such as log-probs).
    pub fn completion_tokens(&self) -> usize {
        self.tokens.len() - self.prompt_lengths.iter().sum::<i64>() as usize
    }

    /// The generator's expert choices of every sequence, laid end to end as
    /// [`TrainBatch::experts`] takes them: `Some` when every sequence came with
    /// them ([`extend_from_rollout`](Self::extend_from_rollout) of rollouts that
    /// recorded them, or [`push_with_experts`](Self::push_with_experts)).
    pub fn experts(&self) -> Option<&[i32]> {
        (!self.is_empty() && self.with_experts == self.len()).then_some(&self.experts[..])
    }

    /// A training batch of these sequences, with their expert choices when
    /// [`experts`](Self::experts) has them, and without per-token or
    /// per-sequence data yet (add rewards, log-probs, ... with its builder setters).
    pub fn batch(&self) -> TrainBatch<'_> {
        let batch = TrainBatch::new(&self.tokens, &self.offsets, &self.prompt_lengths);
        match self.experts() {
            Some(experts) => batch.experts(experts),
            None => batch,
        }
    }
}

impl Default for Sequences {
    fn default() -> Self {
        Self::new()
    }
}
