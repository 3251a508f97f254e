# The option structs of trainers: the importance weights, the loss, the
# optimizer, and all with the rest of `fp8rl_trainer_options`. Defaults come
# from fp8rl_trainer_options_init and, for the structs it embeds, their own _init.

"""
    ImportanceOptions(; mode = :off, low = 0.0, high = 2.0)

How importance weights w = exp(logp_old - logp_gen) are formed, by
[`mismatch_metrics`](@ref) and by a trainer (`LossConfig.importance`)
(`fp8rl_importance_options`; defaults from `fp8rl_importance_options_init`):
`:off` (w = 1), `:plain`, `:truncated` (clamped to [low, high]),
`:token_masked` (0 outside [low, high]) or `:sequence_masked` (a whole
sequence gets 0 when the geometric mean of its weights is outside [low, high]).
Off by default: generation and training share one engine, so in one recipe
the log-probs agree bit for bit and every weight is 1, while any other mode
makes a policy-gradient step need the generator's log-probs. Use `:truncated`
(with `high = 2`) when the generator runs another recipe than the trainer.
"""
struct ImportanceOptions <: _Options
    mode::Union{Symbol,Int32}
    low::Float64
    high::Float64
end

_enums(::Type{ImportanceOptions}) = (mode = _IMPORTANCE_MODE,)

ImportanceOptions(; fields...) =
    _with(_from_c(ImportanceOptions, _c_defaults(L.fp8rl_importance_options)); fields...)

_to_c(options::ImportanceOptions) = _to_c_fields(options, _c_defaults(L.fp8rl_importance_options))

"""
    LossConfig(; kind = :clipped_policy_gradient, clip_low = 0.2, clip_high = 0.2,
               importance = ImportanceOptions(), kl_coefficient = 0.0, kl_estimator = :k3,
               aggregation = :token_mean,
               group_size = 1, baseline = :group_mean, normalize_by_std = false,
               sample_std = true, advantage_epsilon = 1e-6, temperature = 1.0)

The training loss (the loss fields of `fp8rl_trainer_options`).

- `kind`: `:clipped_policy_gradient` (GRPO/PPO: -w min(r A, clip(r, 1 - clip_low,
  1 + clip_high) A) + w β KL) or `:cross_entropy` (SFT).
- `importance`: token-level correction w = exp(logp_old - logp_gen) against
  the generator's log-probs, an [`ImportanceOptions`](@ref) (or a NamedTuple of
  its fields, e.g. `(mode = :truncated,)`); off by default.
- `kl_coefficient` (β) with `kl_estimator` `:k1` or `:k3`: a KL penalty to
  reference log-probs (`logp_ref` of [`train_step!`](@ref)).
- `aggregation`: `:token_mean` or `:sequence_mean`.
- `group_size` consecutive sequences form a group (one prompt's completions);
  rewards become advantages against the group's `baseline` (`:group_mean` or
  `:leave_one_out`), divided by its std + `advantage_epsilon` if `normalize_by_std`
  (`sample_std`: n - 1 rather than n).
- `temperature`: of the training distribution; use the sampling temperature
  (with top_k 0 and top_p 1) for training log-probs equal to the generator's.
"""
struct LossConfig <: _Options
    kind::Union{Symbol,Int32}
    clip_low::Float64
    clip_high::Float64
    importance::ImportanceOptions
    kl_coefficient::Float64
    kl_estimator::Union{Symbol,Int32}
    aggregation::Union{Symbol,Int32}
    group_size::Int32
    baseline::Union{Symbol,Int32}
    normalize_by_std::Bool
    sample_std::Bool
    advantage_epsilon::Float64
    temperature::Float32
end

_enums(::Type{LossConfig}) = (kind = _LOSS_KIND, kl_estimator = _KL_ESTIMATOR, aggregation = _AGGREGATION,
                              baseline = _BASELINE)
_c_names(::Type{LossConfig}) = (kind = :loss,)

LossConfig(; fields...) = _with(_from_c(LossConfig, _c_defaults(L.fp8rl_trainer_options)); fields...)

"""
    OptimizerConfig(; learning_rate = 1e-6, schedule = :constant, warmup_steps = 0,
                    total_steps = 0, min_lr_ratio = 0.0, beta1 = 0.9, beta2 = 0.999,
                    adam_epsilon = 1e-8, weight_decay = 0.01, max_grad_norm = 1.0)

AdamW on the FP32 master weights (the optimizer fields of
`fp8rl_trainer_options`). `schedule`: `:constant`, `:warmup_constant` (linear
warmup over `warmup_steps`) or `:warmup_cosine` (then cosine decay to
`min_lr_ratio * learning_rate` at `total_steps`). `weight_decay` applies to
matrices only; `max_grad_norm` clips the global gradient norm (0: off).
"""
struct OptimizerConfig <: _Options
    learning_rate::Float64
    schedule::Union{Symbol,Int32}
    warmup_steps::Int64
    total_steps::Int64
    min_lr_ratio::Float64
    beta1::Float64
    beta2::Float64
    adam_epsilon::Float64
    weight_decay::Float64
    max_grad_norm::Float64
end

_enums(::Type{OptimizerConfig}) = (schedule = _LR_SCHEDULE,)

OptimizerConfig(; fields...) = _with(_from_c(OptimizerConfig, _c_defaults(L.fp8rl_trainer_options)); fields...)

"""
    TrainerConfig(; loss = LossConfig(), optimizer = OptimizerConfig(),
                  calibration = CalibrationConfig(), micro_batch_tokens = 2048,
                  minibatches = 1, recalibrate_after_step = true,
                  freeze_attention_scales = false, seed = 0,
                  router_aux_loss_coef = 0.0, routing_replay = false)

Everything a [`Trainer`](@ref) is created with (`fp8rl_trainer_options`).
`loss`, `optimizer` and `calibration` also take NamedTuples of their fields.
`micro_batch_tokens` bounds the tokens whose activations are kept for one
backward pass; `minibatches` is the number of optimizer steps of one
[`train_iteration!`](@ref); `recalibrate_after_step` requantizes the weights and replaces
the attention scales after every step, and `freeze_attention_scales = true`
keeps the policy's attention scales through it (FP8 KV-cache scales
calibrated once); `seed` starts the trainer's stream of
prompt seeds ([`next_seeds`](@ref)).

Mixture-of-Experts policies only (dense ones ignore them):
`router_aux_loss_coef` (finite, >= 0) weighs Hugging Face's Qwen3-MoE
load-balancing loss in the loss, per micro-batch over its fed tokens and
sparse layers; the default 0 leaves the RL loss alone (as NeMo RL and slime
train), and the model config's own `router_aux_loss_coef` is not used.
`routing_replay = true` makes the training forward route each token to the
experts the generator chose (recorded with `SamplingParams(record_experts = true)`)
instead of its router's choice, with gate weights from its own router: for
generation and training in different recipes. The rollouts given to
[`train_step!`](@ref) must then have recorded their experts.
"""
struct TrainerConfig <: _Options
    loss::LossConfig
    optimizer::OptimizerConfig
    calibration::CalibrationConfig
    micro_batch_tokens::Int64
    minibatches::Int64
    recalibrate_after_step::Bool
    freeze_attention_scales::Bool
    seed::UInt64
    router_aux_loss_coef::Float64
    routing_replay::Bool
end

function TrainerConfig(; fields...)
    raw = _c_defaults(L.fp8rl_trainer_options)
    defaults = TrainerConfig(_from_c(LossConfig, raw), _from_c(OptimizerConfig, raw),
                             _from_c(CalibrationConfig, raw.calibration), raw.micro_batch_tokens, raw.minibatches,
                             raw.recalibrate_after_step != 0, raw.freeze_attention_scales != 0, raw.seed,
                             raw.router_aux_loss_coef,
                             raw.routing_replay != 0)
    return _with(defaults; fields...)
end

function _to_c(trainer::TrainerConfig)
    raw = _to_c_fields(trainer.loss, _c_defaults(L.fp8rl_trainer_options))
    raw = _to_c_fields(trainer.optimizer, raw)
    return _with(raw; calibration = _to_c_fields(trainer.calibration, raw.calibration),
                 micro_batch_tokens = trainer.micro_batch_tokens, minibatches = trainer.minibatches,
                 recalibrate_after_step = trainer.recalibrate_after_step,
                 freeze_attention_scales = trainer.freeze_attention_scales, seed = trainer.seed,
                 router_aux_loss_coef = trainer.router_aux_loss_coef, routing_replay = trainer.routing_replay)
end
