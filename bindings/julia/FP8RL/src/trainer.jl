# Trainers: RL (or SFT) steps on a policy, in the policy's own recipe.

"""
    Trainer(policy::Policy, config::TrainerConfig)
    Trainer(policy::Policy; loss = LossConfig(), optimizer = OptimizerConfig(), options...)
    Trainer(f, policy::Policy; options...)

Trains `policy` in place (`fp8rl_trainer`): each [`train_step!`](@ref)
recomputes the batch's log-probs, forms advantages, runs the loss forward and
backward over micro-batches (FP8 fprop, dgrad and wgrad under an FP8 recipe),
clips the gradient norm, takes an AdamW step on the FP32 master weights and
recalibrates; the policy then generates with the new weights. The keywords
are [`TrainerConfig`](@ref)'s; bad options throw an [`FP8RLError`](@ref) naming the field.

The trainer keeps its policy alive, and the policy cannot be closed while the
trainer is open. The do-block form closes the trainer when `f` returns.
"""
mutable struct Trainer <: _Handle
    ptr::Ptr{L.fp8rl_trainer}
    pending::Bool
    const policy::Policy
    const config::TrainerConfig
    const sparse_layers::Int  # of the policy: 0 for a dense one
    function Trainer(ptr::Ptr{L.fp8rl_trainer}, policy::Policy, config::TrainerConfig, sparse_layers::Integer)
        return finalizer(_finalize, new(ptr, false, policy, config, sparse_layers))
    end
end

function Trainer(policy::Policy, trainer_config::TrainerConfig)
    sparse_layers = _sparse_layer_count(config(policy))
    out = Ref{Ptr{L.fp8rl_trainer}}(C_NULL)
    check(L.fp8rl_trainer_create(policy, Ref(_to_c(trainer_config)), out))
    return Trainer(out[], policy, trainer_config, sparse_layers)
end

# The Mixture-of-Experts layers of a (valid) model config: Hugging Face's Qwen3MoeDecoderLayer rule, 0-based.
function _sparse_layer_count(model::ModelConfig)
    (model.num_experts == 0 || model.decoder_sparse_step <= 0) && return 0
    return count(layer -> !(layer in model.mlp_only_layers) && (layer + 1) % model.decoder_sparse_step == 0,
                 0:model.num_layers - 1)
end

Trainer(policy::Policy; options...) = Trainer(policy, TrainerConfig(; options...))
Trainer(f::Function, policy::Policy; options...) = _closing(f, Trainer(policy; options...))

Base.unsafe_convert(::Type{Ptr{L.fp8rl_trainer}}, trainer::Trainer) = _ptr(trainer)

_raw_destroy(trainer::Trainer) = L.fp8rl_trainer_destroy(trainer.ptr)
_parent(trainer::Trainer) = trainer.policy
_kind(::Trainer) = "trainer"

Base.show(io::IO, trainer::Trainer) = print(io, "FP8RL.Trainer(", isopen(trainer) ? "open" : "closed", ")")

"""
    train_step!(trainer::Trainer, rollout::Rollout; rewards = nothing, advantages = nothing,
                logp_ref = nothing, logp_old = nothing) -> NamedTuple
    train_step!(trainer::Trainer, prompts, completions; rewards = nothing, advantages = nothing,
                logp_gen = nothing, logp_ref = nothing, logp_old = nothing, generation_seconds = 0.0) -> NamedTuple

One training step (`fp8rl_trainer_step`: the one-mini-batch iteration) on each prompt followed by its
completion: those of `rollout` (whose log-probs feed the importance
correction and the mismatch metrics, and whose generation time the time
breakdown), or token-id vectors generated elsewhere.

Mixture-of-Experts policies: when `rollout` recorded its experts
(`SamplingParams(record_experts = true)`), the step is given the generator's
choices (each sequence's [`experts`](@ref), laid end to end): the metrics then
compare the training router's choices with them, and a trainer with
`routing_replay` routes with them. `routing_replay` with a rollout that did
not record them, or with token-id vectors, throws an `FP8RL_ERROR_INVALID_ARGUMENT`
[`FP8RLError`](@ref) before C.

A policy-gradient loss takes exactly one of `rewards` (one per sequence,
turned into advantages within groups of `loss.group_size` consecutive
sequences) and `advantages`; cross-entropy takes neither. Per-token values
(`logp_gen`, the generator's log-probs; `logp_ref`, a reference policy's for
the KL penalty; `logp_old`, the policy's before the step, used as given instead
of its own) are one vector per completion or one flat vector. Rewards,
advantages, `logp_ref` and `logp_old` must be finite (checked before C).

Returns every field of `fp8rl_train_metrics`: `step`, `skipped`, `clipped`,
`loss`, `grad_norm`, `learning_rate`, `clip_fraction`, `ratio_mean`, `entropy`,
`kl_k1`, `kl_k3`, `reward_mean`, `has_mismatch`, `token_mult_prob_error`,
`gen_kl_error`, `is_weight_mean`, `is_truncated_fraction`, `is_masked_fraction`
(these five `nothing` without generator log-probs), `sequences`,
`completion_tokens`, `trained_tokens`, `tokens_per_second`,
`generation_seconds`, `recompute_seconds`, `train_seconds`,
`recalibration_seconds`, `recalibration_fraction`, `ratio_min`, `ratio_max`,
`old_policy_kl`, `minibatches`, `bytes_reduced`, `bytes_gathered`,
`communication_seconds`, and for Mixture-of-Experts policies
`routing_choices` (the (fed token, sparse layer, slot) choices compared with
the generator's; 0 without recorded experts or for a dense policy),
`routing_agreement` (the share of them the training router made alike: exactly
1 when generation and training run one recipe; `nothing` when none were
compared) and `router_aux_loss` (the load-balancing loss without its
coefficient, a fed-token mean; 0 for a dense policy). A non-finite gradient
is not an error: `skipped` is then `true` and nothing changed.
"""
function train_step!(trainer::Trainer, rollout::Rollout; rewards = nothing, advantages = nothing, logp_ref = nothing,
                     logp_old = nothing)
    return _train_step!(trainer, _rollout_inputs(trainer, rollout, rewards, advantages, logp_ref, logp_old))
end

function train_step!(trainer::Trainer, prompts::AbstractVector, given::AbstractVector; rewards = nothing,
                     advantages = nothing, logp_gen = nothing, logp_ref = nothing, logp_old = nothing,
                     generation_seconds::Real = 0.0)
    sequences = _user_sequences(prompts, given, _vocab_size(trainer.policy), "train_step!")
    inputs = _TrainInputs(sequences, rewards, advantages, logp_gen, logp_ref, logp_old, generation_seconds, nothing)
    return _train_step!(trainer, inputs)
end

"""
    train_iteration!(trainer::Trainer, rollout::Rollout; rewards = nothing, advantages = nothing,
                     logp_ref = nothing, logp_old = nothing) -> NamedTuple

One PPO iteration (`fp8rl_trainer_iterate`): the config's `minibatches`
optimizer steps on consecutive mini-batches of the rollout, with logp_old (the
policy's before the first update, or `logp_old`), the advantages and the
importance weights fixed once, so from the second mini-batch on the ratio
departs from 1 and the clip acts. Arguments as [`train_step!`](@ref). Returns
the iteration's metrics (the fields [`train_step!`](@ref) lists; `skipped`
and `clipped` say whether any step was) and `minibatch_metrics`, one
NamedTuple per step. Recorded experts are passed as [`train_step!`](@ref)
passes them, each mini-batch taking its sequences' share.
"""
function train_iteration!(trainer::Trainer, rollout::Rollout; rewards = nothing, advantages = nothing,
                          logp_ref = nothing, logp_old = nothing)
    inputs = _rollout_inputs(trainer, rollout, rewards, advantages, logp_ref, logp_old)
    steps = [_c_defaults(L.fp8rl_train_metrics) for _ in 1:trainer.config.minibatches]
    total = Ref(_c_defaults(L.fp8rl_train_metrics))
    _with_batch(trainer, inputs) do batch
        check(L.fp8rl_trainer_iterate(trainer, batch, total, steps, length(steps)))
    end
    return merge(_train_metrics(total[]), (minibatch_metrics = map(_train_metrics, steps),))
end

const _MISMATCH_METRICS = (:token_mult_prob_error, :gen_kl_error, :is_weight_mean, :is_truncated_fraction,
                           :is_masked_fraction)
const _FLAG_METRICS = (:skipped, :clipped, :has_mismatch)

# What one step or iteration trains on, as the caller gave it.
struct _TrainInputs
    sequences::_Sequences
    rewards::Any
    advantages::Any
    logp_gen::Any
    logp_ref::Any
    logp_old::Any
    generation_seconds::Float64
    experts::Union{Nothing,Vector{Int32}}  # the generator's expert choices, laid out as the sequences
end

# A rollout's inputs: its sequences, log-probs, generation time and (for a
# policy with sparse layers) the expert choices it recorded.
function _rollout_inputs(trainer::Trainer, rollout::Rollout, rewards, advantages, logp_ref, logp_old)
    sequences = _sequences(rollout)
    choices = trainer.sparse_layers > 0 ? _recorded_experts(rollout, sequences) : nothing
    return _TrainInputs(sequences, rewards, advantages, _flat(rollout).logprobs, logp_ref, logp_old,
                        rollout.generation_seconds, choices)
end

# The expert choices `rollout` recorded, as a train batch takes them: each
# sequence's [positions = length - 1, sparse layers, k] C array (the memory
# order of the (k, sparse layers, positions) Julia array `experts` returns),
# sequence after sequence; `nothing` when it recorded none.
function _recorded_experts(rollout::Rollout, sequences::_Sequences)
    count = length(rollout)
    count == 0 && return nothing
    first_choices = experts(rollout, 1)
    size(first_choices, 3) == 0 && return nothing
    parts = Vector{Vector{Int32}}(undef, count)
    for i in 1:count
        choices = i == 1 ? first_choices : experts(rollout, i)
        fed = sequences.offsets[i + 1] - sequences.offsets[i] - 1
        if size(choices, 3) != fed
            throw(_invalid("train_step!: completion $i recorded experts for $(size(choices, 3)) positions, " *
                           "but its prompt and completion feed $fed tokens"))
        end
        parts[i] = vec(choices)
    end
    return reduce(vcat, parts)
end

function _train_step!(trainer::Trainer, inputs::_TrainInputs)
    metrics = Ref(_c_defaults(L.fp8rl_train_metrics))
    _with_batch(batch -> check(L.fp8rl_trainer_step(trainer, batch, metrics)), trainer, inputs)
    return _train_metrics(metrics[])
end

# Calls f(Ref(batch)) with the C batch of `inputs`, validated and converted first.
function _with_batch(f, trainer::Trainer, inputs::_TrainInputs)
    rewards, advantages, sequences = inputs.rewards, inputs.advantages, inputs.sequences
    _check_loss_inputs(trainer.config.loss.kind, rewards, advantages)
    count = length(sequences.prompt_lengths)
    offsets = sequences.completion_offsets
    reward_values = rewards === nothing ? nothing : _float_vector(rewards, count, "train_step!: rewards")
    advantage_values = advantages === nothing ? nothing : _float_vector(advantages, count, "train_step!: advantages")
    # The library decides where non-finite generator log-probs matter (the importance weights).
    gen = inputs.logp_gen === nothing ? nothing :
          _per_token(inputs.logp_gen, offsets, "train_step!: logp_gen"; allow_non_finite = true)
    ref = inputs.logp_ref === nothing ? nothing : _per_token(inputs.logp_ref, offsets, "train_step!: logp_ref")
    old = inputs.logp_old === nothing ? nothing : _per_token(inputs.logp_old, offsets, "train_step!: logp_old")
    choices = inputs.experts
    if choices === nothing && trainer.config.routing_replay && trainer.sparse_layers > 0
        throw(_invalid("train_step!: routing_replay trains with the generator's expert choices, but the rollout " *
                       "recorded none: generate it with SamplingParams(record_experts = true) (token-id " *
                       "vectors carry none), or turn routing_replay off"))
    end
    tokens, sequence_offsets, prompt_lengths = sequences.tokens, sequences.offsets, sequences.prompt_lengths
    # The batch holds raw pointers into these arrays: they must outlive the call.
    GC.@preserve tokens sequence_offsets prompt_lengths reward_values advantage_values gen ref old choices begin
        batch = _with(_c_defaults(L.fp8rl_train_batch);
                      tokens = pointer(tokens), offsets = pointer(sequence_offsets), num_sequences = count,
                      prompt_lengths = pointer(prompt_lengths), num_completion_tokens = last(offsets),
                      logp_gen = _pointer(gen), logp_ref = _pointer(ref), logp_old = _pointer(old),
                      rewards = _pointer(reward_values), advantages = _pointer(advantage_values),
                      generation_seconds = inputs.generation_seconds,
                      experts = _expert_pointer(choices), num_expert_choices = choices === nothing ? 0 : length(choices))
        f(Ref(batch))
    end
    return nothing
end

_pointer(::Nothing) = Ptr{Cfloat}(C_NULL)
_pointer(values::Vector{Float32}) = pointer(values)
_expert_pointer(::Nothing) = Ptr{Int32}(C_NULL)
_expert_pointer(values::Vector{Int32}) = pointer(values)

function _check_loss_inputs(kind, rewards, advantages)
    if kind === :clipped_policy_gradient && (rewards === nothing) == (advantages === nothing)
        throw(_invalid("train_step!: a policy-gradient loss takes exactly one of rewards and advantages"))
    elseif kind === :cross_entropy && !(rewards === nothing && advantages === nothing)
        throw(_invalid("train_step!: the cross-entropy loss takes neither rewards nor advantages"))
    end
    return nothing
end

# Every metric; flags as Bools, the mismatch metrics `nothing` when the batch had no logp_gen, and
# routing_agreement `nothing` when no expert choices were compared.
function _train_metrics(raw::L.fp8rl_train_metrics)
    has_mismatch = raw.has_mismatch != 0
    fields = _fields(raw)
    names = keys(fields)
    values = map(names) do name
        value = getfield(fields, name)
        if name in _FLAG_METRICS
            value != 0
        elseif !has_mismatch && name in _MISMATCH_METRICS
            nothing
        elseif name === :routing_agreement && raw.routing_choices == 0
            nothing
        else
            value
        end
    end
    return NamedTuple{names}(values)
end

"""
    recompute_logprobs(trainer::Trainer, rollout::Rollout) -> Vector{Vector{Float32}}
    recompute_logprobs(trainer::Trainer, prompts, completions) -> Vector{Vector{Float32}}

The completion tokens' log-probs under the training distribution (log
softmax(logits / loss.temperature)), as a step recomputes them
(`fp8rl_trainer_recompute_logprobs`), one vector per completion. Under the
generator's recipe and temperature (top_k 0, top_p 1) they equal the
generator's bit for bit.
"""
recompute_logprobs(trainer::Trainer, rollout::Rollout) = _recompute_logprobs(trainer, _sequences(rollout))

recompute_logprobs(trainer::Trainer, prompts::AbstractVector, given::AbstractVector) =
    _recompute_logprobs(trainer, _user_sequences(prompts, given, _vocab_size(trainer.policy), "recompute_logprobs"))

function _recompute_logprobs(trainer::Trainer, sequences::_Sequences)
    logprobs = _buffer(Float32, last(sequences.completion_offsets))
    prompt_lengths = sequences.prompt_lengths
    check(L.fp8rl_trainer_recompute_logprobs(trainer, sequences.tokens, sequences.offsets, length(prompt_lengths),
                                             prompt_lengths, logprobs, length(logprobs)))
    return _split(logprobs, sequences.completion_offsets)
end

"""
    recalibrate!(trainer::Trainer) -> Float64

Requantizes every compute copy of the policy's weights from the FP32 master
weights and applies the attention scales measured in the last step
(`fp8rl_trainer_recalibrate`); returns the seconds it took. Steps do it
themselves unless `recalibrate_after_step` is off.
"""
function recalibrate!(trainer::Trainer)
    seconds = Ref{Cdouble}(0.0)
    check(L.fp8rl_trainer_recalibrate(trainer, seconds))
    return seconds[]
end

"""
    gather_weights!(trainer::Trainer) -> trainer

Data parallelism: all-gathers the FP32 master weights, so that this rank's
policy holds all of them again (`fp8rl_trainer_gather_weights`; each rank
updates only its optimizer slice's). Collective: every rank calls it. Call it
before reading the policy's master weights after a data-parallel step (`save`,
`export_fp8`, `set_recipe!`, `copy_weights!`, or closing the trainer when the
policy is used afterwards); until then those throw `FP8RL_ERROR_DISTRIBUTED`.
[`save_state`](@ref) gathers them itself. Returns at once with one rank.
"""
function gather_weights!(trainer::Trainer)
    check(L.fp8rl_trainer_gather_weights(trainer))
    return trainer
end

"""
    next_seeds(trainer::Trainer, count) -> Vector{UInt64}

Seeds for the next `count` prompts, from the trainer's seed stream
(`fp8rl_trainer_next_seeds`; part of the saved state, so a resumed run draws
the same seeds). Pass them to [`generate`](@ref).
"""
function next_seeds(trainer::Trainer, count::Integer)
    count >= 0 || throw(_invalid("next_seeds: count must be >= 0, got $count"))
    seeds = Vector{UInt64}(undef, count)
    count == 0 && return seeds  # nothing to draw, and no buffer for C to refuse
    check(L.fp8rl_trainer_next_seeds(trainer, count, seeds))
    return seeds
end

"""
    save_state(trainer::Trainer, path)

Saves the whole training state (master weights, AdamW moments, step counters,
seed stream, recipe, attention scales) to one `.safetensors` file, atomically;
its folder must exist (`fp8rl_trainer_save_state`).
"""
function save_state(trainer::Trainer, path::AbstractString)
    check(L.fp8rl_trainer_save_state(trainer, String(path)))
    return nothing
end

"""
    load_state!(trainer::Trainer, path) -> trainer

Restores a state [`save_state`](@ref) wrote; later steps continue bit for bit
as the saved run did, given the same options (`fp8rl_trainer_load_state`). The
file is validated in full before anything changes.
"""
function load_state!(trainer::Trainer, path::AbstractString)
    check(L.fp8rl_trainer_load_state(trainer, String(path)))
    return trainer
end

"""
    memory(trainer::Trainer) -> NamedTuple

Bytes the trainer and its policy hold, by component (`fp8rl_trainer_memory`):
`master_weights`, `compute_weights`, `gradients`, `optimizer_state` (AdamW
moments) and `backward_weights` (the transposed copies the backward pass reads).
"""
function memory(trainer::Trainer)
    report = Ref(_c_defaults(L.fp8rl_memory_report))
    check(L.fp8rl_trainer_memory(trainer, report))
    return _fields(report[])
end
