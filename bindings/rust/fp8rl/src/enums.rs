//! The C API's enums. Each converts from any C value (unknown ones become
//! `Unknown(value)`), so a newer library can never produce an invalid Rust enum.

use fp8rl_sys as sys;

c_enum! {
    /// Where computations run (`fp8rl_backend`).
    pub enum Backend {
        /// CUDA if built and a device is present, else CPU (never reported by a context).
        Auto = sys::FP8RL_BACKEND_AUTO,
        /// The multi-threaded SIMD CPU backend (always available).
        Cpu = sys::FP8RL_BACKEND_CPU,
        /// The NVIDIA GPU backend (sm_90).
        Cuda = sys::FP8RL_BACKEND_CUDA,
    }
}

c_enum! {
    /// Severity of a log message, and the threshold below which messages are dropped (`fp8rl_log_level`).
    pub enum LogLevel {
        /// Detail for developers.
        Debug = sys::FP8RL_LOG_DEBUG,
        /// Normal progress.
        Info = sys::FP8RL_LOG_INFO,
        /// Something unexpected that was handled.
        Warning = sys::FP8RL_LOG_WARNING,
        /// A failure, also reported through a status.
        Error = sys::FP8RL_LOG_ERROR,
        /// As a threshold: log nothing.
        Off = sys::FP8RL_LOG_OFF,
    }
}

c_enum! {
    /// Element types (`fp8rl_dtype`).
    pub enum DType {
        /// IEEE binary32.
        F32 = sys::FP8RL_DTYPE_F32,
        /// bfloat16, stored as `u16` bits.
        Bf16 = sys::FP8RL_DTYPE_BF16,
        /// OCP FP8 E4M3 (e4m3fn: max 448, no Inf), stored as `u8`.
        E4m3 = sys::FP8RL_DTYPE_E4M3,
        /// OCP FP8 E5M2 (max 57344, with Inf), stored as `u8`.
        E5m2 = sys::FP8RL_DTYPE_E5M2,
    }
}

c_enum! {
    /// How a matrix `[rows, cols]` is cut into blocks that share one scale (`fp8rl_block_layout`).
    pub enum BlockLayout {
        /// 1x128 tiles along each row: codes `[rows, cols]`, scales `[rows, ceil(cols/128)]`.
        Tile1x128 = sys::FP8RL_LAYOUT_TILE_1X128,
        /// 1x128 tiles along each column, stored transposed: codes `[cols, rows]`, scales `[cols, ceil(rows/128)]`.
        Tile1x128Transposed = sys::FP8RL_LAYOUT_TILE_1X128_TRANSPOSED,
        /// 128x128 blocks: codes `[rows, cols]`, scales `[ceil(rows/128), ceil(cols/128)]`.
        Block128x128 = sys::FP8RL_LAYOUT_BLOCK_128X128,
    }
}

c_enum! {
    /// How block scales are represented (`fp8rl_scale_format`).
    pub enum ScaleFormat {
        /// scale = amax / fp8_max in FP32.
        Fp32 = sys::FP8RL_SCALE_FP32,
        /// The smallest power of two with amax <= fp8_max * scale.
        Pow2 = sys::FP8RL_SCALE_POW2,
    }
}

c_enum! {
    /// The supported decoder-only transformer families (`fp8rl_model_family`).
    pub enum ModelFamily {
        /// Llama 2/3.x, SmolLM2.
        Llama = sys::FP8RL_MODEL_FAMILY_LLAMA,
        /// Qwen2/2.5: bias on the q/k/v projections.
        Qwen2 = sys::FP8RL_MODEL_FAMILY_QWEN2,
        /// Qwen3: RMSNorm over each head of q and k.
        Qwen3 = sys::FP8RL_MODEL_FAMILY_QWEN3,
        /// Qwen3-MoE (`qwen3_moe`): Qwen3 attention; sparse layers with a router and experts
        /// (the `num_experts` fields of [`ModelConfig`](crate::ModelConfig)).
        Qwen3Moe = sys::FP8RL_MODEL_FAMILY_QWEN3_MOE,
    }
}

c_enum! {
    /// RoPE frequency scaling (`fp8rl_rope_scaling`).
    pub enum RopeScaling {
        /// Plain RoPE.
        None = sys::FP8RL_ROPE_SCALING_NONE,
        /// Llama 3.1/3.2 frequency-dependent interpolation.
        Llama3 = sys::FP8RL_ROPE_SCALING_LLAMA3,
    }
}

c_enum! {
    /// Arithmetic precision of a part of the model (`fp8rl_precision`).
    pub enum Precision {
        /// BF16 operands, FP32 accumulation.
        Bf16 = sys::FP8RL_PRECISION_BF16,
        /// E4M3 operands with block scales, FP32 accumulation.
        Fp8 = sys::FP8RL_PRECISION_FP8,
    }
}

c_enum! {
    /// Why a completion ended (`fp8rl_finish_reason`).
    pub enum FinishReason {
        /// Emitted a stop or EOS token; it is the last token.
        Stop = sys::FP8RL_FINISH_STOP,
        /// Reached max_new_tokens.
        Length = sys::FP8RL_FINISH_LENGTH,
        /// Reached the model's max_position_embeddings.
        ContextFull = sys::FP8RL_FINISH_CONTEXT_FULL,
    }
}

c_enum! {
    /// How importance weights are formed from w = exp(logp_old - logp_gen) (`fp8rl_importance_mode`).
    pub enum ImportanceMode {
        /// w = 1.
        Off = sys::FP8RL_IMPORTANCE_OFF,
        /// w as it is.
        Plain = sys::FP8RL_IMPORTANCE_PLAIN,
        /// w clamped to [low, high].
        Truncated = sys::FP8RL_IMPORTANCE_TRUNCATED,
        /// w where low <= w <= high, else 0.
        TokenMasked = sys::FP8RL_IMPORTANCE_TOKEN_MASKED,
        /// 0 for a whole sequence whose geometric mean of w is outside [low, high]; otherwise plain w.
        SequenceMasked = sys::FP8RL_IMPORTANCE_SEQUENCE_MASKED,
    }
}

c_enum! {
    /// The per-token loss (`fp8rl_loss_kind`).
    pub enum LossKind {
        /// GRPO/PPO clipped policy gradient, with an optional KL penalty.
        ClippedPolicyGradient = sys::FP8RL_LOSS_CLIPPED_POLICY_GRADIENT,
        /// SFT: -logp of every completion token.
        CrossEntropy = sys::FP8RL_LOSS_CROSS_ENTROPY,
    }
}

c_enum! {
    /// Estimator of KL(policy || reference) per token, x = logp_ref - logp (`fp8rl_kl_estimator`).
    pub enum KlEstimator {
        /// -x.
        K1 = sys::FP8RL_KL_K1,
        /// exp(x) - x - 1 (never negative).
        K3 = sys::FP8RL_KL_K3,
    }
}

c_enum! {
    /// How token losses become the batch loss (`fp8rl_aggregation`).
    pub enum Aggregation {
        /// Mean over all completion tokens of the batch.
        TokenMean = sys::FP8RL_AGGREGATION_TOKEN_MEAN,
        /// Mean over sequences of their token means.
        SequenceMean = sys::FP8RL_AGGREGATION_SEQUENCE_MEAN,
    }
}

c_enum! {
    /// The baseline advantages are measured from within a group (`fp8rl_advantage_baseline`).
    pub enum AdvantageBaseline {
        /// A = r - mean of the group.
        GroupMean = sys::FP8RL_BASELINE_GROUP_MEAN,
        /// A = r - mean of the others (RLOO; group size >= 2).
        LeaveOneOut = sys::FP8RL_BASELINE_LEAVE_ONE_OUT,
    }
}

c_enum! {
    /// Learning-rate schedule over optimizer steps (`fp8rl_lr_schedule`).
    pub enum LrSchedule {
        /// learning_rate throughout.
        Constant = sys::FP8RL_LR_CONSTANT,
        /// Linear warmup over warmup_steps, then constant.
        WarmupConstant = sys::FP8RL_LR_WARMUP_CONSTANT,
        /// Linear warmup, then cosine decay to min_lr_ratio * learning_rate at total_steps.
        WarmupCosine = sys::FP8RL_LR_WARMUP_COSINE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_round_trips_and_unknown_values_survive() {
        for raw in [0, 1, 2, 3, 4, 5, 99, -1, 0x7fff_ffff] {
            assert_eq!(DType::from_raw(raw).as_raw(), raw);
            assert_eq!(ImportanceMode::from_raw(raw).as_raw(), raw);
            assert_eq!(KlEstimator::from_raw(raw).as_raw(), raw);
        }
        assert_eq!(KlEstimator::from_raw(3), KlEstimator::K3);
        assert_eq!(KlEstimator::from_raw(2), KlEstimator::Unknown(2));
        assert_eq!(Backend::Cpu.as_raw(), sys::FP8RL_BACKEND_CPU);
    }
}
