# Rollouts: generation and scoring. A rollout holds the library's copies of
# the completions and depends on nothing: it stays valid after its policy and
# that policy's context are closed.

"""
    Completion

One completion of a [`Rollout`](@ref), copied out of the library:
`tokens::Vector{Int32}` (the prompt not included), `logprobs::Vector{Float32}`
(the log-prob of each token under the sampling distribution, <= 0) and
`finish_reason`: `:stop` (a stop or EOS token, the last one), `:length`
(`max_new_tokens`) or `:context_full` (`max_position_embeddings`); an Int32 for
a reason this binding does not know.
"""
struct Completion
    tokens::Vector{Int32}
    logprobs::Vector{Float32}
    finish_reason::Union{Symbol,Int32}
end

Base.:(==)(a::Completion, b::Completion) =
    a.tokens == b.tokens && a.logprobs == b.logprobs && a.finish_reason == b.finish_reason
Base.hash(c::Completion, h::UInt) = hash(c.finish_reason, hash(c.logprobs, hash(c.tokens, hash(Completion, h))))

# All completions copied out at once (fp8rl_rollout_copy): completion i is
# tokens[offsets[i] + 1 : offsets[i + 1]], and so are its log-probs.
struct _FlatCompletions
    tokens::Vector{Int32}
    logprobs::Vector{Float32}
    offsets::Vector{Int64}
    finish_reasons::Vector{Cint}
end

"""
    Rollout

The completions of one [`generate`](@ref) call (`fp8rl_rollout`), one per
prompt, in prompt order. `rollout[i]` (1-based) is the [`Completion`](@ref) of
prompt `i`; a rollout iterates over its completions, `length` counts them,
[`completions`](@ref) copies them all and [`total_tokens`](@ref) counts their
tokens. Read-only fields: `seeds` (the prompts' seeds) and
`generation_seconds` (the wall time of the generation).

A rollout holds the library's copies and depends on nothing: it stays valid
after its policy and context are closed. `close` frees it at once (the garbage
collector does otherwise); the do-block form of `generate` closes it.
"""
mutable struct Rollout <: _Handle
    ptr::Ptr{L.fp8rl_rollout}
    pending::Bool
    const prompt_tokens::Vector{Int32}
    const prompt_offsets::Vector{Int64}
    const seeds::Vector{UInt64}
    generation_seconds::Float64
    flat::Union{Nothing,_FlatCompletions}  # read once, on first use
    function Rollout(ptr::Ptr{L.fp8rl_rollout}, prompt_tokens::Vector{Int32}, prompt_offsets::Vector{Int64},
                     seeds::Vector{UInt64})
        return finalizer(_finalize, new(ptr, false, prompt_tokens, prompt_offsets, seeds, 0.0, nothing))
    end
end

Base.unsafe_convert(::Type{Ptr{L.fp8rl_rollout}}, rollout::Rollout) = _ptr(rollout)

_raw_destroy(rollout::Rollout) = L.fp8rl_rollout_destroy(rollout.ptr)
_parent(::Rollout) = nothing
_kind(::Rollout) = "rollout"

function _closed(rollout::Rollout)
    rollout.flat = nothing  # a closed rollout is closed whether or not it was read
    return nothing
end

Base.show(io::IO, rollout::Rollout) =
    print(io, "FP8RL.Rollout(", length(rollout), " completions, ", isopen(rollout) ? "open" : "closed", ")")

Base.length(rollout::Rollout) = length(rollout.prompt_offsets) - 1
Base.eltype(::Type{Rollout}) = Completion
Base.firstindex(::Rollout) = 1
Base.lastindex(rollout::Rollout) = length(rollout)
Base.keys(rollout::Rollout) = Base.OneTo(length(rollout))
Base.iterate(rollout::Rollout, index::Int = 1) = index > length(rollout) ? nothing : (rollout[index], index + 1)

function Base.getindex(rollout::Rollout, index::Integer)
    1 <= index <= length(rollout) || throw(BoundsError(rollout, index))
    tokens = Ref{Ptr{Int32}}(C_NULL)
    logprobs = Ref{Ptr{Cfloat}}(C_NULL)
    len = Ref{Int64}(0)
    finish = Ref{Cint}(0)
    # The arrays belong to the rollout: copy them while it is surely alive.
    return GC.@preserve rollout begin
        check(L.fp8rl_rollout_get(rollout, Int64(index - 1), tokens, logprobs, len, finish))
        count = Int(len[])
        # An empty completion may come with dangling pointers: never read through them.
        Completion(count == 0 ? Int32[] : copy(unsafe_wrap(Array, tokens[], count)),
                   count == 0 ? Float32[] : copy(unsafe_wrap(Array, logprobs[], count)),
                   _from_c(_FINISH_REASON, finish[]))
    end
end

"""
    experts(rollout, index) -> Array{Int32,3}

The experts completion `index`'s fed tokens were routed to, a copy of shape
`(k, sparse layers, positions)` (the C array `[positions, sparse layers, k]`
in Julia's column-major order), 0-based expert indices, best first; recorded
with `SamplingParams(record_experts = true)` on a Mixture-of-Experts policy,
else it has no positions (`fp8rl_rollout_get_experts`).
"""
function experts(rollout::Rollout, index::Integer)
    1 <= index <= length(rollout) || throw(BoundsError(rollout, index))
    choices = Ref{Ptr{Int32}}(C_NULL)
    positions, layers, k = Ref{Int64}(0), Ref{Int64}(0), Ref{Int64}(0)
    return GC.@preserve rollout begin
        check(L.fp8rl_rollout_get_experts(rollout, Int64(index - 1), choices, positions, layers, k))
        dims = (Int(k[]), Int(layers[]), Int(positions[]))
        prod(dims) == 0 ? zeros(Int32, dims) : copy(unsafe_wrap(Array, choices[], dims))
    end
end

function _flat(rollout::Rollout)
    rollout.flat === nothing || return rollout.flat
    total = total_tokens(rollout)
    tokens = _buffer(Int32, total)
    logprobs = _buffer(Float32, total)
    offsets = Vector{Int64}(undef, length(rollout) + 1)
    finish = Vector{Cint}(undef, length(rollout))
    check(L.fp8rl_rollout_copy(rollout, tokens, logprobs, length(tokens), offsets, finish))
    flat = _FlatCompletions(resize!(tokens, total), resize!(logprobs, total), offsets, finish)
    rollout.flat = flat
    return flat
end

function _completion(flat::_FlatCompletions, index::Int)
    span = flat.offsets[index] + 1:flat.offsets[index + 1]
    return Completion(flat.tokens[span], flat.logprobs[span], _from_c(_FINISH_REASON, flat.finish_reasons[index]))
end

"""
    completions(rollout::Rollout) -> Vector{Completion}

Every completion of the rollout, copied out in one call (`fp8rl_rollout_copy`).
"""
function completions(rollout::Rollout)
    flat = _flat(rollout)
    return [_completion(flat, index) for index in 1:length(rollout)]
end

"""
    total_tokens(rollout::Rollout) -> Int

The number of completion tokens over all completions.
"""
function total_tokens(rollout::Rollout)
    total = Ref{Int64}(0)
    check(L.fp8rl_rollout_total_tokens(rollout, total))
    return Int(total[])
end

# The rollout's prompts followed by its completions, for scoring and training.
function _sequences(rollout::Rollout)
    flat = _flat(rollout)
    return _sequences(rollout.prompt_tokens, rollout.prompt_offsets, flat.tokens, flat.offsets)
end

"""
    generate(policy::Policy, prompts, sampling = SamplingParams(); seeds = nothing) -> Rollout
    generate(f, policy::Policy, prompts, sampling = SamplingParams(); seeds = nothing)

One completion per prompt (`fp8rl_policy_generate`). `prompts` is a vector of
non-empty token-id vectors, each id in `0:vocab_size-1` (checked before C).
`seeds`, one unsigned 64-bit integer per prompt, alone decide each prompt's
random draws: a prompt with the same seed gets the same completion (tokens and
log-probs, bitwise) whatever else is in the batch. By default they count up
0, 1, 2, ... per policy; in an RL loop pass `seeds = next_seeds(trainer, n)`.
The do-block form passes the rollout to `f`, closes it and returns `f`'s result.
"""
function generate(policy::Policy, prompts::AbstractVector, sampling::SamplingParams = SamplingParams();
                  seeds = nothing)
    tokens, offsets = _token_sequences(prompts, _vocab_size(policy), "generate: prompts")
    count = length(offsets) - 1
    prompt_seeds = seeds === nothing ? _counter_seeds!(policy, count) : _seed_vector(seeds, count, "generate: seeds")
    out = Ref{Ptr{L.fp8rl_rollout}}(C_NULL)
    _with_c_sampling(sampling) do options
        check(L.fp8rl_policy_generate(policy, tokens, offsets, count, prompt_seeds, options, out))
    end
    rollout = Rollout(out[], tokens, offsets, prompt_seeds)  # owned (and finalized) from here on
    seconds = Ref{Cdouble}(0.0)
    check(L.fp8rl_rollout_seconds(rollout, seconds))
    rollout.generation_seconds = seconds[]
    made = Ref{Int64}(0)
    check(L.fp8rl_rollout_count(rollout, made))
    if made[] != count
        throw(FP8RLError(L.FP8RL_ERROR_INTERNAL, "generate: $count prompts gave $(made[]) completions"))
    end
    return rollout
end

generate(f::Function, policy::Policy, prompts::AbstractVector, sampling::SamplingParams = SamplingParams();
         seeds = nothing) = _closing(f, generate(policy, prompts, sampling; seeds = seeds))

function _counter_seeds!(policy::Policy, count::Integer)
    first_seed = policy.next_seed
    policy.next_seed += UInt64(count)
    return [first_seed + UInt64(i) for i in 0:count - 1]
end

"""
    score(policy::Policy, rollout::Rollout, sampling = SamplingParams()) -> Vector{Vector{Float32}}
    score(policy::Policy, prompts, completions, sampling = SamplingParams()) -> Vector{Vector{Float32}}

The log-prob of every completion token under `policy`, one vector per
completion, exactly as generation with `sampling`'s temperature, top_k and
top_p records it (`fp8rl_policy_score`; the other options are ignored): bit for
bit the generator's for the same policy and recipe. `prompts` and
`completions` are token-id vectors (completions may be empty).
"""
score(policy::Policy, rollout::Rollout, sampling::SamplingParams = SamplingParams()) =
    _score(policy, _sequences(rollout), sampling)

score(policy::Policy, prompts::AbstractVector, given::AbstractVector, sampling::SamplingParams = SamplingParams()) =
    _score(policy, _user_sequences(prompts, given, _vocab_size(policy), "score"), sampling)

function _score(policy::Policy, sequences::_Sequences, sampling::SamplingParams)
    logprobs = _buffer(Float32, last(sequences.completion_offsets))
    tokens, offsets, prompt_lengths = sequences.tokens, sequences.offsets, sequences.prompt_lengths
    _with_c_sampling(sampling) do options
        check(L.fp8rl_policy_score(policy, tokens, offsets, length(prompt_lengths), prompt_lengths, options,
                                   logprobs, length(logprobs)))
    end
    return _split(logprobs, sequences.completion_offsets)
end
