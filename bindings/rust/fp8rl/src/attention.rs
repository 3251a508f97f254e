//! The per-layer scales of the FP8 KV cache and FP8 attention.

use fp8rl_sys as sys;

use crate::args::{sequence_count, to_i64, to_usize};
use crate::error::{check, Error, Result};
use crate::policy::Policy;

/// The per-layer query, key and value scales of a policy: keys and values
/// are stored as E4M3 codes of value / scale, and queries are quantized with
/// the q scale before Q.K^T. They are 1 until set or recalibrated.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionScales {
    /// Query scales, one per layer.
    pub q: Vec<f32>,
    /// Key scales, one per layer.
    pub k: Vec<f32>,
    /// Value scales, one per layer.
    pub v: Vec<f32>,
}

c_options! {
    /// Options of the attention-scale calibration (`fp8rl_calibration_options`): of
    /// [`Policy::recalibrate_attention_scales`] and of a trainer's recalibration
    /// ([`TrainerOptions::calibration`](crate::TrainerOptions::calibration)).
    pub struct CalibrationOptions: sys::fp8rl_calibration_options = sys::fp8rl_calibration_options_init {
        /// Of the per-token maxima, in (0, 100]; default 99.9 (outliers above it saturate).
        percentile: f64,
        /// Headroom factor >= 1 on that percentile; default 1.05.
        margin: f64,
        /// The FP8 magnitude it maps to; default 448 (the E4M3 maximum).
        max_value: f64,
    }
}

impl Policy<'_> {
    /// The per-layer attention scales.
    pub fn attention_scales(&self) -> Result<AttentionScales> {
        let layers = self.config()?.num_layers;
        let count = to_usize(layers);
        let mut scales = AttentionScales { q: vec![0.0; count], k: vec![0.0; count], v: vec![0.0; count] };
        // SAFETY: each array holds num_layers floats.
        check(unsafe {
            sys::fp8rl_policy_get_attention_scales(
                self.as_ptr(),
                scales.q.as_mut_ptr(),
                scales.k.as_mut_ptr(),
                scales.v.as_mut_ptr(),
                layers,
            )
        })?;
        Ok(scales)
    }

    /// Sets the per-layer attention scales: one per layer in each slice, each
    /// finite and > 0 (the library names the layer otherwise); on error the
    /// scales are unchanged.
    pub fn set_attention_scales(&self, q: &[f32], k: &[f32], v: &[f32]) -> Result<()> {
        if q.len() != k.len() || q.len() != v.len() {
            return Err(Error::invalid_argument(format!(
                "Policy::set_attention_scales: q, k and v have {}, {} and {} scales; they must agree",
                q.len(),
                k.len(),
                v.len()
            )));
        }
        // SAFETY: each array holds the count passed; C checks it is num_layers.
        check(unsafe {
            sys::fp8rl_policy_set_attention_scales(
                self.as_ptr(),
                q.as_ptr(),
                k.as_ptr(),
                v.as_ptr(),
                to_i64("scales", q.len())?,
            )
        })
    }

    /// Sets the attention scales from a full-sequence pass over the given
    /// sequences (sequence i is `tokens[offsets[i]..offsets[i + 1]]`): per
    /// layer, the options' percentile of every token's largest Q, K and V
    /// magnitude, times the margin, over max_value.
    pub fn recalibrate_attention_scales(
        &self,
        tokens: &[i32],  // [offsets[n]]
        offsets: &[i64], // [n + 1]
        options: &CalibrationOptions,
    ) -> Result<()> {
        let sequences = sequence_count("Policy::recalibrate_attention_scales", offsets, tokens.len(), "tokens")?;
        let options = options.c_fields();
        // SAFETY: the offsets stay inside tokens (checked above).
        check(unsafe {
            sys::fp8rl_policy_recalibrate_attention_scales(
                self.as_ptr(),
                tokens.as_ptr(),
                offsets.as_ptr(),
                sequences,
                &options,
            )
        })
    }
}
