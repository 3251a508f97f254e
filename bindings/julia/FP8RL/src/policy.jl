# Policies: a model's FP32 master weights, its precision recipe and the compute copies that recipe implies.

"""
    Policy(config::ModelConfig; seed = 0, recipe = nothing, context = nothing, backend = :cpu, num_threads = 0)
    Policy(f, config::ModelConfig; options...)

A policy with random weights (`fp8rl_policy_create_random`), the same for the
same `config` and `seed` on every platform, with the default (BF16) recipe or
`recipe`. Without `context` the policy makes its own ([`Context`](@ref) with
`backend` and `num_threads`) and closes it with itself; pass a `context` to
share one (it must then outlive the policy). See also [`load_policy`](@ref).

The library serializes calls on a policy through its context; `close` frees
it at once (the garbage collector does otherwise) and refuses while a
[`Trainer`](@ref) of it is open. Rollouts stay valid after their policy is
closed. The do-block form closes the policy when `f` returns.
"""
mutable struct Policy <: _Handle
    ptr::Ptr{L.fp8rl_policy}
    pending::Bool
    const context::Context
    const owns_context::Bool
    next_seed::UInt64  # the default prompt seeds of generate count up from here
    function Policy(ptr::Ptr{L.fp8rl_policy}, context::Context, owns_context::Bool)
        return finalizer(_finalize, new(ptr, false, context, owns_context, UInt64(0)))
    end
end

function Policy(model::ModelConfig; seed::Integer = 0, recipe::Union{Nothing,Recipe} = nothing,
                context::Union{Nothing,Context} = nothing, backend = :cpu, num_threads = nothing)
    raw = Ref(_to_c(model))
    weights_seed = _seed(seed, "Policy: seed")
    return _new_policy(recipe, context, backend, num_threads) do ctx, out
        L.fp8rl_policy_create_random(ctx, raw, weights_seed, out)
    end
end

Policy(f::Function, model::ModelConfig; options...) = _closing(f, Policy(model; options...))

"""
    load_policy(folder; recipe = nothing, context = nothing, backend = :cpu, num_threads = 0) -> Policy
    load_policy(f, folder; options...)

Loads a policy from a Hugging Face model folder (`fp8rl_policy_load`):
`config.json` and `model.safetensors` (or its sharded index), BF16, F16 or F32
tensors; not a folder [`export_fp8`](@ref) wrote. The recipe is the default
(BF16) unless `recipe` is given; the other options are [`Policy`](@ref)'s.
"""
function load_policy(folder::AbstractString; recipe::Union{Nothing,Recipe} = nothing,
                     context::Union{Nothing,Context} = nothing, backend = :cpu, num_threads = nothing)
    path = String(folder)
    return _new_policy(recipe, context, backend, num_threads) do ctx, out
        L.fp8rl_policy_load(ctx, path, out)
    end
end

load_policy(f::Function, folder::AbstractString; options...) = _closing(f, load_policy(folder; options...))

# make(ctx, out) calls the C constructor; a context made here is closed again if that fails.
function _new_policy(make, new_recipe, shared_context, backend, threads)
    owns_context = shared_context === nothing
    ctx = owns_context ? Context(; backend = backend, num_threads = threads) : shared_context
    out = Ref{Ptr{L.fp8rl_policy}}(C_NULL)
    created = false
    try
        check(make(ctx, out))
        created = true
    finally
        created || !owns_context || _close_quietly(ctx)
    end
    policy = Policy(out[], ctx, owns_context)
    if new_recipe !== nothing
        applied = false
        try
            set_recipe!(policy, new_recipe)
            applied = true
        finally
            applied || _close_quietly(policy)  # now, not at some later collection
        end
    end
    return policy
end

Base.unsafe_convert(::Type{Ptr{L.fp8rl_policy}}, policy::Policy) = _ptr(policy)

_raw_destroy(policy::Policy) = L.fp8rl_policy_destroy(policy.ptr)
_parent(policy::Policy) = policy.context
_kind(::Policy) = "policy"

function _closed(policy::Policy)
    policy.owns_context && close(policy.context)
    return nothing
end

Base.show(io::IO, policy::Policy) = print(io, "FP8RL.Policy(", isopen(policy) ? "open" : "closed", ")")

"""
    context(policy::Policy) -> Context

The context the policy lives on (its own, unless one was passed when it was made).
"""
context(policy::Policy) = policy.context

"""
    config(policy::Policy) -> ModelConfig

The policy's architecture (`fp8rl_policy_get_config`); `head_dim` is 0 when
implied, so the config makes an equal policy.
"""
function config(policy::Policy)
    raw = Ref(_c_defaults(L.fp8rl_model_config))  # struct_size tells the library which fields we have
    check(L.fp8rl_policy_get_config(policy, raw))
    return _model_config(raw[])
end

_vocab_size(policy::Policy) = config(policy).vocab_size

"""
    recipe(policy::Policy) -> Recipe

The policy's precision recipe (`fp8rl_policy_get_recipe`).
"""
function recipe(policy::Policy)
    raw = Ref(_c_defaults(L.fp8rl_recipe))
    check(L.fp8rl_policy_get_recipe(policy, raw))
    return _from_c(Recipe, raw[])
end

"""
    set_recipe!(policy::Policy, recipe::Recipe) -> policy

Sets the precision recipe and requantizes the compute weights
(`fp8rl_policy_set_recipe`); on any error the policy keeps its previous recipe.
"""
function set_recipe!(policy::Policy, new_recipe::Recipe)
    check(L.fp8rl_policy_set_recipe(policy, Ref(_to_c(new_recipe))))
    return policy
end

"""
    parameter_count(policy::Policy) -> Int

The number of weights of the policy's model.
"""
function parameter_count(policy::Policy)
    count = Ref{Int64}(0)
    check(L.fp8rl_policy_parameter_count(policy, count))
    return Int(count[])
end

"""
    memory(policy::Policy) -> NamedTuple

Bytes the policy holds, by component (`fp8rl_policy_memory`): `master_weights`
(FP32, host), `compute_weights` (the recipe's BF16/E4M3 copies on the backend),
and `gradients`, `optimizer_state`, `backward_weights`, which are 0 for a
policy (see `memory(::Trainer)`).
"""
function memory(policy::Policy)
    report = Ref(_c_defaults(L.fp8rl_memory_report))
    check(L.fp8rl_policy_memory(policy, report))
    return _fields(report[])
end

"""
    attention_scales(policy::Policy) -> (q = Vector{Float32}, k = ..., v = ...)

The per-layer scales of the FP8 KV cache and FP8 attention: keys and values are
stored as E4M3 codes of value / scale, queries quantized with the q scale.
They are 1 until set or recalibrated.
"""
function attention_scales(policy::Policy)
    layers = config(policy).num_layers
    q, k, v = Vector{Float32}(undef, layers), Vector{Float32}(undef, layers), Vector{Float32}(undef, layers)
    check(L.fp8rl_policy_get_attention_scales(policy, q, k, v, layers))
    return (q = q, k = k, v = v)
end

"""
    set_attention_scales!(policy::Policy, q, k, v) -> policy
    set_attention_scales!(policy::Policy, scales::NamedTuple) -> policy

Sets the per-layer attention scales: one per layer in each vector, each finite
and > 0 (the library names a bad layer); on error the scales are unchanged.
`scales` is what [`attention_scales`](@ref) returns.
"""
function set_attention_scales!(policy::Policy, q::AbstractVector, k::AbstractVector, v::AbstractVector)
    layers = config(policy).num_layers
    q32 = _float_vector(q, layers, "set_attention_scales!: q")
    k32 = _float_vector(k, layers, "set_attention_scales!: k")
    v32 = _float_vector(v, layers, "set_attention_scales!: v")
    check(L.fp8rl_policy_set_attention_scales(policy, q32, k32, v32, layers))
    return policy
end

set_attention_scales!(policy::Policy, scales::NamedTuple) = set_attention_scales!(policy, scales.q, scales.k, scales.v)

"""
    recalibrate_attention_scales!(policy::Policy, sequences, calibration = CalibrationConfig()) -> policy

Sets the attention scales from a full-sequence pass over `sequences` (token-id
vectors), as training does (`fp8rl_policy_recalibrate_attention_scales`): per
layer and for each of Q, K and V, the `calibration.percentile` of every
token's largest magnitude, times `margin`, maps to `max_value`.
"""
function recalibrate_attention_scales!(policy::Policy, sequences::AbstractVector,
                                       calibration::CalibrationConfig = CalibrationConfig())
    tokens, offsets = _token_sequences(sequences, _vocab_size(policy), "recalibrate_attention_scales!: sequences")
    check(L.fp8rl_policy_recalibrate_attention_scales(policy, tokens, offsets, length(offsets) - 1,
                                                      Ref(_to_c(calibration))))
    return policy
end

"""
    save(policy::Policy, folder; dtype = :bf16)

Writes the master weights as a Hugging Face model folder (`config.json`,
`model.safetensors`, sharded above 5 GiB), each file atomically, creating the
folder if needed (`fp8rl_policy_save`). `dtype` is `:bf16` (rounded to nearest
even) or `:f32` (exact). [`load_policy`](@ref) reads it back.
"""
function save(policy::Policy, folder::AbstractString; dtype::Symbol = :bf16)
    check(L.fp8rl_policy_save(policy, String(folder), _c(_DTYPE, dtype, "save: dtype")))
    return nothing
end

"""
    export_fp8(policy::Policy, folder)

Writes the policy as an FP8 block-quantized Hugging Face checkpoint for serving
engines such as vLLM and SGLang (`fp8rl_policy_export_fp8`): E4M3 projection
weights with `weight_scale_inv` block scales, the rest BF16.
[`load_policy`](@ref) does not read this format back.
"""
function export_fp8(policy::Policy, folder::AbstractString)
    check(L.fp8rl_policy_export_fp8(policy, String(folder)))
    return nothing
end

"""
    copy_weights!(destination::Policy, source::Policy) -> destination

Copies the master weights and attention scales of `source` into `destination`
and requantizes them in `destination`'s own recipe (`fp8rl_policy_copy_weights`):
for an FP8 generator fed by a BF16-trained policy, after every step. Both must
have the same model config and be distinct.
"""
function copy_weights!(destination::Policy, source::Policy)
    check(L.fp8rl_policy_copy_weights(destination, source))
    return destination
end

"""
    fingerprint(policy::Policy) -> UInt64

A 64-bit fingerprint of what the policy computes with (`fp8rl_policy_fingerprint`):
every compute copy of its weights (BF16 values, E4M3 codes and block scales),
its attention scales and its recipe. Equal fingerprints on all ranks after a
data-parallel step say the ranks generate alike. As slow as copying the weights.
"""
function fingerprint(policy::Policy)
    value = Ref{UInt64}(0)
    check(L.fp8rl_policy_fingerprint(policy, value))
    return value[]
end
