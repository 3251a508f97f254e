//! Trainer options: the loss, the advantages, the optimizer and recalibration.

use fp8rl_sys as sys;

use crate::attention::CalibrationOptions;
use crate::enums::{AdvantageBaseline, Aggregation, KlEstimator, LossKind, LrSchedule};
use crate::mismatch::ImportanceOptions;

c_options! {
    /// Options of a [`Trainer`](crate::Trainer) (`fp8rl_trainer_options`),
    /// every field of the C struct, with the library's defaults.
    ///
    /// ```
    /// use fp8rl::{ImportanceMode, ImportanceOptions, TrainerOptions};
    /// let options = TrainerOptions::new()
    ///     .learning_rate(1e-2)
    ///     .group_size(4)
    ///     .importance(ImportanceOptions::new().mode(ImportanceMode::Truncated));
    /// assert_eq!(options.beta2, 0.999);
    /// assert_eq!(options.importance.high, 2.0);
    /// ```
    pub struct TrainerOptions: sys::fp8rl_trainer_options = sys::fp8rl_trainer_options_init {
        /// Default [`LossKind::ClippedPolicyGradient`].
        loss: LossKind,
        /// epsilon_low in [0, 1]; default 0.2.
        clip_low: f64,
        /// epsilon_high >= 0; default 0.2 (DAPO's clip-higher: 0.28).
        clip_high: f64,
        /// Token-level IS correction w = exp(logp_old - logp_gen), with the
        /// defaults of [`ImportanceOptions`] (off). Any other mode makes a
        /// policy-gradient loss need logp_gen in the batch.
        importance: ImportanceOptions,
        /// beta >= 0 of the KL penalty to the reference; > 0 needs logp_ref. Default 0.
        kl_coefficient: f64,
        /// Default [`KlEstimator::K3`].
        kl_estimator: KlEstimator,
        /// Default [`Aggregation::TokenMean`].
        aggregation: Aggregation,
        /// Completions per prompt, consecutive in the batch (>= 1; default 1):
        /// the groups of reward normalization.
        group_size: i32,
        /// Default [`AdvantageBaseline::GroupMean`].
        baseline: AdvantageBaseline,
        /// Divide advantages by the group's std + epsilon. Default false.
        normalize_by_std: bool,
        /// Sample std (n - 1) if true (default); population std if false.
        sample_std: bool,
        /// >= 0; default 1e-6.
        advantage_epsilon: f64,
        /// Peak learning rate >= 0; default 1e-6.
        learning_rate: f64,
        /// Default [`LrSchedule::Constant`].
        schedule: LrSchedule,
        /// >= 0; default 0.
        warmup_steps: i64,
        /// Cosine schedule: warmup + decay steps; default 0.
        total_steps: i64,
        /// Cosine schedule: final / peak rate in [0, 1]; default 0.
        min_lr_ratio: f64,
        /// AdamW beta1 in [0, 1); default 0.9.
        beta1: f64,
        /// AdamW beta2 in [0, 1); default 0.999.
        beta2: f64,
        /// AdamW epsilon > 0; default 1e-8.
        adam_epsilon: f64,
        /// >= 0, on matrices only (not norms, biases); default 0.01.
        weight_decay: f64,
        /// Global L2 clipping; 0 turns it off. Default 1.
        max_grad_norm: f64,
        /// Training log-probs are log softmax(logits / temperature) over the
        /// whole vocabulary (> 0; default 1): use the sampling temperature with
        /// top_k 0 and top_p 1 for log-probs equal to the generator's.
        temperature: f32,
        /// Tokens per micro-batch (>= 1; default 2048): activations of one
        /// micro-batch are kept for its backward pass.
        micro_batch_tokens: i64,
        /// Optimizer steps per [`Trainer::iterate`](crate::Trainer::iterate) (>= 1;
        /// default 1): the batch's sequences in this many consecutive
        /// mini-batches of near-equal count.
        minibatches: i64,
        /// Recalibrate after every step (default true).
        recalibrate_after_step: bool,
        /// How recalibration sets the Q/K/V scales from the training forward
        /// pass, with the defaults of [`CalibrationOptions`].
        calibration: CalibrationOptions,
        /// Seed of [`Trainer::next_seeds`](crate::Trainer::next_seeds); default 0.
        seed: u64,
        /// Mixture-of-Experts policies: the weight (finite, >= 0) of Hugging
        /// Face's Qwen3-MoE load-balancing loss in the loss, per micro-batch
        /// over its fed tokens and sparse layers. Default 0 (as NeMo RL and
        /// slime train RL: it perturbs the log-probs); the model config's
        /// `router_aux_loss_coef` is not used. The metrics report the loss
        /// itself ([`TrainMetrics::router_aux_loss`](crate::TrainMetrics::router_aux_loss))
        /// whatever its weight.
        router_aux_loss_coef: f64,
        /// Mixture-of-Experts policies: the training forward routes each token
        /// to the experts the generator chose (the batch's
        /// [`experts`](crate::TrainBatch::experts), then required) instead of
        /// its router's choice, with gate weights from its own router (routing
        /// replay, for generation and training in different recipes). Default
        /// false.
        routing_replay: bool,
        /// Recalibration keeps the policy's Q/K/V scales (as set when
        /// training begins) and only requantizes the weights: FP8 KV-cache
        /// scales calibrated once. Default false: replaced after every
        /// optimizer step.
        freeze_attention_scales: bool,
    }
}
