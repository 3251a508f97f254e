# Host arrays in and out: checks of what users pass (before anything reaches
# C, naming the argument and the 1-based position) and the flat layouts of the
# C API. Offsets are the C API's own: `offsets[i]` (1-based i) counts the items
# before sequence i, so sequence i is items[offsets[i] + 1 : offsets[i + 1]].

# Token-id sequences -> (flat Int32 tokens, Int64 offsets, 0 first). Every id
# must lie in [0, vocab_size); only completions may be empty.
function _token_sequences(sequences, vocab_size::Integer, what::AbstractString; allow_empty::Bool = false)
    if !(sequences isa AbstractVector)
        throw(_invalid("$what: expected a vector of token-id vectors, got $(typeof(sequences))"))
    end
    isempty(sequences) && throw(_invalid("$what: no sequences"))
    tokens = Int32[]
    offsets = zeros(Int64, length(sequences) + 1)
    for (i, row) in enumerate(sequences)
        if !(row isa AbstractVector)
            throw(_invalid("$what[$i]: expected a vector of token ids, got $(typeof(row))"))
        end
        !allow_empty && isempty(row) && throw(_invalid("$what[$i]: empty sequence"))
        for (j, token) in enumerate(row)
            token isa Integer || throw(_invalid("$what[$i][$j]: token ids are integers, got $(repr(token))"))
            if !(0 <= token < vocab_size)
                throw(_invalid("$what[$i][$j]: token id $token outside the vocabulary [0, $vocab_size)"))
            end
            push!(tokens, Int32(token))
        end
        offsets[i + 1] = length(tokens)
    end
    return tokens, offsets
end

# `values`, one per item, as a Float32 vector; NaN and Inf (also after
# rounding to Float32) are refused unless allow_non_finite.
function _float_vector(values, count::Integer, what::AbstractString; allow_non_finite::Bool = false)
    values isa AbstractVector{<:Real} || throw(_invalid("$what: expected a vector of reals, got $(typeof(values))"))
    length(values) == count || throw(_invalid("$what: expected $count values, got $(length(values))"))
    out = Vector{Float32}(undef, count)
    for (i, value) in enumerate(values)
        rounded = Float32(value)
        if !allow_non_finite && !isfinite(rounded)
            suffix = isfinite(value) ? " in Float32" : ""
            throw(_non_finite("$what[$i]: $value is not finite$suffix"))
        end
        out[i] = rounded
    end
    return out
end

# Per-completion-token values, given flat or as one vector per completion.
function _per_token(values, completion_offsets::Vector{Int64}, what::AbstractString; allow_non_finite::Bool = false)
    total = Int(last(completion_offsets))
    if values isa AbstractVector{<:AbstractVector}
        count = length(completion_offsets) - 1
        length(values) == count || throw(_invalid("$what: $(length(values)) vectors for $count completions"))
        for (i, row) in enumerate(values)
            expected = completion_offsets[i + 1] - completion_offsets[i]
            if length(row) != expected
                throw(_invalid("$what[$i]: $(length(row)) values for a completion of $expected tokens"))
            end
        end
        values = isempty(values) ? Float32[] : reduce(vcat, values)
    end
    return _float_vector(values, total, what; allow_non_finite)
end

# One unsigned 64-bit seed per prompt.
function _seed_vector(seeds, count::Integer, what::AbstractString)
    seeds isa AbstractVector{<:Integer} || throw(_invalid("$what: expected a vector of integers, got $(typeof(seeds))"))
    length(seeds) == count || throw(_invalid("$what: expected one seed per prompt ($count), got $(length(seeds))"))
    return [_seed(seed, "$what[$i]") for (i, seed) in enumerate(seeds)]
end

function _seed(seed::Integer, what::AbstractString)
    0 <= seed <= typemax(UInt64) || throw(_invalid("$what: seeds are unsigned 64-bit, got $seed"))
    return UInt64(seed)
end

# C-style offsets of `total` items: 0 first, never decreasing, `total` last.
function _offsets(offsets, total::Integer, what::AbstractString)
    offsets isa AbstractVector{<:Integer} || throw(_invalid("$what: expected a vector of integers"))
    isempty(offsets) && throw(_invalid("$what: empty; it needs one more entry than there are sequences"))
    first(offsets) == 0 || throw(_invalid("$what[1]: the first offset must be 0, got $(first(offsets))"))
    previous = 0
    for (i, offset) in enumerate(offsets)
        offset < previous && throw(_invalid("$what[$i]: offsets decrease: $offset after $previous"))
        previous = offset
    end
    previous == total || throw(_invalid("$what: the last offset is $previous, but there are $total items"))
    return collect(Int64, offsets)
end

# C-style offsets of consecutive vectors of the given lengths.
_offsets_of(lengths) = pushfirst!(cumsum(collect(Int64, lengths)), 0)

# Flat values -> one vector per sequence (copies).
_split(values::Vector, offsets::Vector{Int64}) = [values[offsets[i] + 1:offsets[i + 1]] for i in 1:length(offsets) - 1]

# Prompts followed by their completions, in the layout of the C API's sequence
# arguments (fp8rl_policy_score, fp8rl_trainer_recompute_logprobs, fp8rl_train_batch).
struct _Sequences
    tokens::Vector{Int32}
    offsets::Vector{Int64}
    prompt_lengths::Vector{Int64}
    completion_offsets::Vector{Int64}  # into per-completion-token arrays
end

function _sequences(prompt_tokens::Vector{Int32}, prompt_offsets::Vector{Int64},
                    completion_tokens::Vector{Int32}, completion_offsets::Vector{Int64})
    count = length(prompt_offsets) - 1
    tokens = Vector{Int32}(undef, length(prompt_tokens) + length(completion_tokens))
    offsets = zeros(Int64, count + 1)
    prompt_lengths = Vector{Int64}(undef, count)
    filled = 0
    for i in 1:count
        prompt_length = prompt_offsets[i + 1] - prompt_offsets[i]
        completion_length = completion_offsets[i + 1] - completion_offsets[i]
        copyto!(tokens, filled + 1, prompt_tokens, prompt_offsets[i] + 1, prompt_length)
        copyto!(tokens, filled + prompt_length + 1, completion_tokens, completion_offsets[i] + 1, completion_length)
        filled += prompt_length + completion_length
        offsets[i + 1] = filled
        prompt_lengths[i] = prompt_length
    end
    return _Sequences(tokens, offsets, prompt_lengths, completion_offsets)
end

# Prompts and completions given by the user, checked against the vocabulary.
function _user_sequences(prompts, completions, vocab_size::Integer, caller::AbstractString)
    prompt_tokens, prompt_offsets = _token_sequences(prompts, vocab_size, "$caller: prompts")
    completion_tokens, completion_offsets =
        _token_sequences(completions, vocab_size, "$caller: completions"; allow_empty = true)
    if length(completion_offsets) != length(prompt_offsets)
        throw(_invalid("$caller: $(length(completion_offsets) - 1) completions for $(length(prompt_offsets) - 1) prompts"))
    end
    return _sequences(prompt_tokens, prompt_offsets, completion_tokens, completion_offsets)
end

# A matrix as the row-major elements C reads: a Julia matrix is column-major,
# so its transpose's memory is the row-major layout of the matrix itself.
_row_major(matrix::AbstractMatrix, ::Type{T}) where {T} = convert(Matrix{T}, permutedims(matrix))

# Row-major [rows, cols] elements from C -> a rows × cols Julia matrix.
_from_row_major(values::Vector, rows::Integer, cols::Integer) = permutedims(reshape(values, Int(cols), Int(rows)))

# A buffer of `count` elements that is never empty: C may refuse a NULL or
# zero-length buffer even when nothing is written to it.
_buffer(::Type{T}, count::Integer) where {T} = Vector{T}(undef, max(Int(count), 1))
