//! Sequences of prompt + completion, laid out flat as the library wants them.

use crate::batch::TrainBatch;

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
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequences {
    tokens: Vec<i32>,
    offsets: Vec<i64>,
    prompt_lengths: Vec<i64>,
}

impl Sequences {
    /// No sequences yet.
    pub fn new() -> Self {
        Self { tokens: Vec::new(), offsets: vec![0], prompt_lengths: Vec::new() }
    }

    /// Appends the sequence `prompt` followed by `completion`.
    pub fn push(&mut self, prompt: &[i32], completion: &[i32]) {
        self.tokens.extend_from_slice(prompt);
        self.tokens.extend_from_slice(completion);
        self.offsets.push(self.tokens.len() as i64);
        self.prompt_lengths.push(prompt.len() as i64);
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

    /// A training batch of these sequences, without per-token or per-sequence
    /// data yet (add rewards, log-probs, ... with its builder setters).
    pub fn batch(&self) -> TrainBatch<'_> {
        TrainBatch::new(&self.tokens, &self.offsets, &self.prompt_lengths)
    }
}

impl Default for Sequences {
    fn default() -> Self {
        Self::new()
    }
}
