//! Rollouts: the completions of one generation, owned by the library and
//! read in place.

use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::args::{to_i64, to_usize};
use crate::enums::FinishReason;
use crate::error::{check, Result};

/// The completions of one [`Policy::generate`](crate::Policy::generate) call
/// (`fp8rl_rollout`).
///
/// A rollout holds copies: it stays valid after its policy and context are
/// gone, so it has no lifetime. [`Rollout::get`] and iteration borrow the
/// completions in place (zero-copy); [`Rollout::copy_all`] copies them out.
pub struct Rollout {
    raw: NonNull<sys::fp8rl_rollout>,
    // Each completion's arrays, read once: the pointers stay valid until the
    // rollout is destroyed, and knowing them makes `get` infallible.
    views: Vec<View>,
    total_tokens: usize,
    seconds: f64,
}

#[derive(Clone, Copy)]
struct View {
    tokens: *const i32,
    logprobs: *const f32,
    len: usize,
    finish: FinishReason,
}

// SAFETY: the header documents every rollout function except
// fp8rl_rollout_destroy as thread-safe ("a rollout is read-only"); destroy
// only runs from `Drop`, which owns the rollout while no `Completion` borrows
// it. The cached pointers point into that read-only data.
unsafe impl Send for Rollout {}
// SAFETY: see `Send`; shared access only reads.
unsafe impl Sync for Rollout {}

/// One completion, borrowed from its [`Rollout`] (zero-copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Completion<'r> {
    /// The generated tokens (the prompt not included).
    pub tokens: &'r [i32],
    /// The log-prob of each token under the sampling distribution (<= 0).
    pub logprobs: &'r [f32],
    /// Why the completion ended.
    pub finish: FinishReason,
}

/// The experts one completion's fed tokens were routed to, borrowed from its
/// [`Rollout`]: `choices[(position * sparse_layers + layer) * top_k + j]` is
/// the j-th best expert of that position in that sparse layer; positions
/// 0 .. prompt + completion length - 1 (the last sampled token is never fed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertChoices<'r> {
    /// `[positions, sparse_layers, top_k]` expert indices, best first.
    pub choices: &'r [i32],
    /// Positions recorded; 0 when nothing was recorded.
    pub positions: usize,
    /// The policy's sparse layers.
    pub sparse_layers: usize,
    /// Experts per token.
    pub top_k: usize,
}

/// All completions of a rollout in flat arrays, from [`Rollout::copy_all`]:
/// completion `i` is `offsets[i]..offsets[i + 1]` of `tokens` and `logprobs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Completions {
    /// The tokens of all completions, one after the other.
    pub tokens: Vec<i32>,
    /// Their log-probs.
    pub logprobs: Vec<f32>,
    /// count + 1 offsets into `tokens` and `logprobs`.
    pub offsets: Vec<i64>,
    /// Why each completion ended.
    pub finish_reasons: Vec<FinishReason>,
}

impl Completions {
    /// The number of completions.
    pub fn len(&self) -> usize {
        self.finish_reasons.len()
    }

    /// Whether there are no completions.
    pub fn is_empty(&self) -> bool {
        self.finish_reasons.is_empty()
    }

    /// Completion `index`, borrowed from the flat arrays.
    pub fn get(&self, index: usize) -> Option<Completion<'_>> {
        let range = to_usize(*self.offsets.get(index)?)..to_usize(*self.offsets.get(index + 1)?);
        Some(Completion {
            tokens: self.tokens.get(range.clone())?,
            logprobs: self.logprobs.get(range)?,
            finish: *self.finish_reasons.get(index)?,
        })
    }
}

impl Rollout {
    /// Takes ownership of a rollout the library made, and reads its shape.
    pub(crate) fn from_raw(raw: NonNull<sys::fp8rl_rollout>) -> Result<Self> {
        // Owned from here on, so an early return below still destroys it.
        let mut rollout = Self { raw, views: Vec::new(), total_tokens: 0, seconds: 0.0 };
        let (mut count, mut total) = (0i64, 0i64);
        // SAFETY: a valid rollout and out-pointers, here and below.
        check(unsafe { sys::fp8rl_rollout_count(raw.as_ptr(), &mut count) })?;
        check(unsafe { sys::fp8rl_rollout_total_tokens(raw.as_ptr(), &mut total) })?;
        check(unsafe { sys::fp8rl_rollout_seconds(raw.as_ptr(), &mut rollout.seconds) })?;
        rollout.total_tokens = to_usize(total);
        for index in 0..count {
            let mut view =
                View { tokens: std::ptr::null(), logprobs: std::ptr::null(), len: 0, finish: FinishReason::Stop };
            let (mut len, mut finish) = (0i64, 0);
            check(unsafe {
                sys::fp8rl_rollout_get(raw.as_ptr(), index, &mut view.tokens, &mut view.logprobs, &mut len, &mut finish)
            })?;
            view.len = to_usize(len);
            view.finish = FinishReason::from_raw(finish);
            rollout.views.push(view);
        }
        Ok(rollout)
    }

    /// The number of completions (one per prompt).
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether there are no completions (never, for a successful generation).
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// The total number of completion tokens.
    pub fn total_tokens(&self) -> usize {
        self.total_tokens
    }

    /// The wall-clock seconds the generation took (for [`TrainBatch::generation_seconds`](crate::TrainBatch::generation_seconds)).
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Completion `index` (in prompt order), borrowed in place; `None` past the end.
    pub fn get(&self, index: usize) -> Option<Completion<'_>> {
        let view = self.views.get(index)?;
        // SAFETY: the library keeps `len` tokens and log-probs at these
        // pointers until the rollout is destroyed, which the borrow of
        // `self` prevents. An empty completion may come with dangling pointers.
        let (tokens, logprobs) = if view.len == 0 {
            (&[][..], &[][..])
        } else {
            unsafe {
                (std::slice::from_raw_parts(view.tokens, view.len), std::slice::from_raw_parts(view.logprobs, view.len))
            }
        };
        Some(Completion { tokens, logprobs, finish: view.finish })
    }

    /// The expert choices of completion `index`, recorded with
    /// [`SamplingOptions::record_experts`](crate::SamplingOptions::record_experts)
    /// on a Mixture-of-Experts policy (`fp8rl_rollout_get_experts`).
    /// [`Sequences::extend_from_rollout`](crate::Sequences::extend_from_rollout)
    /// collects them for a training batch.
    pub fn experts(&self, index: usize) -> Result<ExpertChoices<'_>> {
        let mut choices: *const i32 = std::ptr::null();
        let (mut positions, mut layers, mut top_k) = (0i64, 0i64, 0i64);
        // SAFETY: `raw` is a live rollout; the out-pointers are valid locals.
        check(unsafe {
            sys::fp8rl_rollout_get_experts(
                self.raw.as_ptr(),
                to_i64("index", index)?,
                &mut choices,
                &mut positions,
                &mut layers,
                &mut top_k,
            )
        })?;
        let (positions, sparse_layers, top_k) = (to_usize(positions), to_usize(layers), to_usize(top_k));
        let len = positions * sparse_layers * top_k;
        // SAFETY: the library keeps `len` values at `choices` until the rollout
        // is destroyed, which the borrow of `self` prevents.
        let choices = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(choices, len) } };
        Ok(ExpertChoices { choices, positions, sparse_layers, top_k })
    }

    /// The completions in prompt order, borrowed in place.
    pub fn iter(&self) -> Iter<'_> {
        Iter { rollout: self, next: 0 }
    }

    /// Copies all completions into flat arrays.
    pub fn copy_all(&self) -> Result<Completions> {
        let mut tokens = vec![0i32; self.total_tokens];
        let mut logprobs = vec![0f32; self.total_tokens];
        let mut offsets = vec![0i64; self.len() + 1];
        let mut finish = vec![0 as sys::fp8rl_finish_reason; self.len()];
        // SAFETY: the token arrays hold `capacity` elements, offsets count + 1
        // and finish reasons count, as the library requires.
        check(unsafe {
            sys::fp8rl_rollout_copy(
                self.raw.as_ptr(),
                tokens.as_mut_ptr(),
                logprobs.as_mut_ptr(),
                to_i64("capacity", self.total_tokens)?,
                offsets.as_mut_ptr(),
                finish.as_mut_ptr(),
            )
        })?;
        let finish_reasons = finish.into_iter().map(FinishReason::from_raw).collect();
        Ok(Completions { tokens, logprobs, offsets, finish_reasons })
    }
}

impl Drop for Rollout {
    fn drop(&mut self) {
        // SAFETY: we own the rollout; no Completion borrows it any more. It cannot fail.
        unsafe { sys::fp8rl_rollout_destroy(self.raw.as_ptr()) };
    }
}

impl std::fmt::Debug for Rollout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over the completions of a [`Rollout`], from [`Rollout::iter`].
#[derive(Debug, Clone)]
pub struct Iter<'r> {
    rollout: &'r Rollout,
    next: usize,
}

impl<'r> Iterator for Iter<'r> {
    type Item = Completion<'r>;

    fn next(&mut self) -> Option<Completion<'r>> {
        let completion = self.rollout.get(self.next)?;
        self.next += 1;
        Some(completion)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.rollout.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'r> IntoIterator for &'r Rollout {
    type Item = Completion<'r>;
    type IntoIter = Iter<'r>;

    fn into_iter(self) -> Iter<'r> {
        self.iter()
    }
}
