//! Precision recipes: which parts of a policy run in FP8.

use fp8rl_sys as sys;

use crate::enums::{Precision, ScaleFormat};

c_options! {
    /// The precision recipe of a policy, for generation and training alike
    /// (`fp8rl_recipe`). Embedding lookups, norms, softmax and RoPE always
    /// run in BF16/FP32. The default is everything in BF16.
    pub struct Recipe: sys::fp8rl_recipe = sys::fp8rl_recipe_init {
        /// q/k/v/o and gate/up/down projections; FP8 uses 128x128 weight
        /// blocks and 1x128 activation tiles. Default BF16.
        linear: Precision,
        /// Block scales of the FP8 linear layers; default [`ScaleFormat::Fp32`].
        scale_format: ScaleFormat,
        /// FP8: keys and values stored as E4M3 with a per-layer scale. Default BF16.
        kv_cache: Precision,
        /// FP8: Q.K^T and P.V on E4M3 inputs; requires the FP8 KV cache. Default BF16.
        attention: Precision,
        /// Leading transformer layers kept entirely in BF16 (>= 0; default 0).
        bf16_first_layers: i32,
        /// Trailing transformer layers kept entirely in BF16 (>= 0; default 0).
        bf16_last_layers: i32,
        /// The LM head's GEMMs (logits; dgrad and wgrad in training); FP8
        /// quantizes its weight in 128x128 blocks. Default BF16, as the
        /// published recipe keeps it.
        head: Precision,
    }
}

impl Recipe {
    /// Everything in BF16 (the default).
    pub fn bf16() -> Self {
        Self::new()
    }

    /// FP8 linear layers; KV cache and attention in BF16.
    pub fn fp8() -> Self {
        Self::new().linear(Precision::Fp8)
    }

    /// FP8 linear layers, KV cache and attention.
    pub fn fp8_full() -> Self {
        Self::fp8().kv_cache(Precision::Fp8).attention(Precision::Fp8)
    }
}
