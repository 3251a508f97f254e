# Tokenizers: a Hugging Face model folder's byte-level BPE tokenizer
# (tokenizer.json), encoding and decoding exactly as the `tokenizers` library
# does (docs/tokenizer.md). A tokenizer depends on nothing: it stays valid
# after the policy it was loaded for is closed.

"""
    Tokenizer

A loaded tokenizer (`fp8rl_tokenizer`): [`load_tokenizer`](@ref) from a model
folder, or [`tokenizer`](@ref) for a policy [`load_policy`](@ref) read. Use it
with [`encode`](@ref), [`encode_batch`](@ref), [`decode`](@ref),
[`token_to_id`](@ref), [`id_to_piece`](@ref), [`vocab_size`](@ref) and
[`special_ids`](@ref). Immutable: any number of tasks may use one at once.
`close` frees it at once (the garbage collector does otherwise).

Token ids are the tokenizer's own (0-based), as the policy functions take them.
"""
mutable struct Tokenizer <: _Handle
    ptr::Ptr{L.fp8rl_tokenizer}
    pending::Bool
    Tokenizer(ptr::Ptr{L.fp8rl_tokenizer}) = finalizer(_finalize, new(ptr, false))
end

Base.unsafe_convert(::Type{Ptr{L.fp8rl_tokenizer}}, tok::Tokenizer) = _ptr(tok)

# special_ids' output struct starts from the library's defaults (options.jl's rule)
_init_function(::Type{L.fp8rl_special_token_ids}) = L.fp8rl_special_token_ids_init

_raw_destroy(tok::Tokenizer) = L.fp8rl_tokenizer_destroy(tok.ptr)
_parent(::Tokenizer) = nothing
_kind(::Tokenizer) = "tokenizer"

Base.show(io::IO, tok::Tokenizer) =
    print(io, "FP8RL.Tokenizer(", isopen(tok) ? "vocab_size $(vocab_size(tok))" : "closed", ")")

"""
    load_tokenizer(folder) -> Tokenizer
    load_tokenizer(f, folder)

Loads `folder/tokenizer.json` and, where present, `tokenizer_config.json` and
`generation_config.json` (for [`special_ids`](@ref)). Throws an
[`FP8RLError`](@ref): `FP8RL_ERROR_IO` for an unreadable file,
`FP8RL_ERROR_CORRUPT_DATA` for a malformed one, `FP8RL_ERROR_UNSUPPORTED` for
a tokenizer type fp8rl does not implement. The do-block form closes it.
"""
function load_tokenizer(folder::AbstractString)
    out = Ref{Ptr{L.fp8rl_tokenizer}}(C_NULL)
    check(L.fp8rl_tokenizer_load(String(folder), out))
    return Tokenizer(out[])
end

load_tokenizer(f::Function, folder::AbstractString) = _closing(f, load_tokenizer(folder))

"""
    tokenizer(policy) -> Tokenizer
    tokenizer(f, policy)

The tokenizer of the folder `policy` was loaded from ([`load_policy`](@ref)),
read now; it does not depend on the policy. A policy made otherwise (random)
throws `FP8RL_ERROR_INVALID_ARGUMENT`.
"""
function tokenizer(policy::Policy)
    out = Ref{Ptr{L.fp8rl_tokenizer}}(C_NULL)
    check(L.fp8rl_policy_load_tokenizer(policy, out))
    return Tokenizer(out[])
end

tokenizer(f::Function, policy::Policy) = _closing(f, tokenizer(policy))

# Text as the bytes C reads: a string's UTF-8, or bytes as given (the library
# repairs bytes that are not UTF-8, each ill-formed sequence becoming U+FFFD).
_text_bytes(text::AbstractString) = Vector{UInt8}(String(text))
_text_bytes(text::AbstractVector{UInt8}) = Vector{UInt8}(text)

"""
    encode(tok, text; add_special_tokens = true) -> Vector{Int32}

The ids of `text` (a string, or bytes: `Vector{UInt8}`); with
`add_special_tokens`, the post-processor's tokens too (e.g. Llama 3's BOS).
"""
function encode(tok::Tokenizer, text::Union{AbstractString,AbstractVector{UInt8}}; add_special_tokens::Bool = true)
    data = _text_bytes(text)
    capacity = 3 * length(data) + 16  # a byte gives at most 3 ids (repaired to U+FFFD)
    while true
        ids = Vector{Int32}(undef, capacity)
        count = Ref{Int64}(-1)
        status = GC.@preserve data L.fp8rl_tokenizer_encode(tok, Cstring(pointer(data)), length(data),
                                                            Int32(add_special_tokens), ids, capacity, count)
        if status != L.FP8RL_OK && count[] > capacity
            capacity = Int(count[])
            continue
        end
        check(status)
        return resize!(ids, count[])
    end
end

"""
    encode_batch(tok, texts; add_special_tokens = true) -> Vector{Vector{Int32}}

The ids of each text, as [`encode`](@ref) gives them, in one call.
"""
function encode_batch(tok::Tokenizer, texts::AbstractVector; add_special_tokens::Bool = true)
    data = [_text_bytes(text) for text in texts]
    sizes = Int64[length(d) for d in data]
    out = Ref{Ptr{L.fp8rl_encoding}}(C_NULL)
    GC.@preserve data begin
        pointers = Cstring[Cstring(pointer(d)) for d in data]
        check(L.fp8rl_tokenizer_encode_batch(tok, pointers, sizes, length(data), Int32(add_special_tokens), out))
    end
    encoding = out[]
    try
        ids = Ref{Ptr{Int32}}(C_NULL)
        count = Ref{Int64}(0)
        return map(0:length(data)-1) do index
            check(L.fp8rl_encoding_get(encoding, index, ids, count))
            copy(unsafe_wrap(Array, ids[], count[]))
        end
    finally
        L.fp8rl_encoding_destroy(encoding)
    end
end

"""
    decode(tok, ids; skip_special_tokens = false) -> String

The text of `ids`. Ids that name no token are skipped (as `tokenizers` does);
bytes that do not form UTF-8 (ids cut inside a character) become U+FFFD. A
negative id throws `FP8RL_ERROR_INVALID_ARGUMENT`.
"""
function decode(tok::Tokenizer, ids::AbstractVector{<:Integer}; skip_special_tokens::Bool = false)
    raw = _int32_ids(ids)
    capacity = 16 * length(raw) + 64
    while true
        text = Vector{UInt8}(undef, capacity)
        bytes = Ref{Int64}(-1)
        status = GC.@preserve text L.fp8rl_tokenizer_decode(tok, raw, length(raw), Int32(skip_special_tokens),
                                                            Ptr{Cchar}(pointer(text)), capacity, bytes)
        if status != L.FP8RL_OK && bytes[] > capacity
            capacity = Int(bytes[])
            continue
        end
        check(status)
        return String(resize!(text, bytes[]))
    end
end

function _int32_ids(ids::AbstractVector{<:Integer})
    for (i, id) in enumerate(ids)
        typemin(Int32) <= id <= typemax(Int32) || throw(_invalid("decode: ids[$i] = $id is not a token id"))
    end
    return Vector{Int32}(ids)
end

"""
    token_to_id(tok, token) -> Union{Int32,Nothing}

The id of a token by its spelling in tokenizer.json (a space is "Ġ" in a
byte-level vocabulary), or an added token's content; `nothing` when no token
is spelled so.
"""
function token_to_id(tok::Tokenizer, token::Union{AbstractString,AbstractVector{UInt8}})
    data = _text_bytes(token)
    id = Ref{Int32}(-1)
    GC.@preserve data check(L.fp8rl_tokenizer_token_to_id(tok, Cstring(pointer(data)), length(data), id))
    return id[] < 0 ? nothing : id[]
end

"""
    id_to_piece(tok, id) -> String

The spelling of token `id` in tokenizer.json (byte-level: "Ġworld"). An id
that names no token throws `FP8RL_ERROR_INVALID_ARGUMENT`.
"""
function id_to_piece(tok::Tokenizer, id::Integer)
    typemin(Int32) <= id <= typemax(Int32) || throw(_invalid("id_to_piece: $id is not a token id"))
    bytes = Ref{Int64}(0)
    check(L.fp8rl_tokenizer_id_to_piece(tok, Int32(id), Ptr{Cchar}(C_NULL), 0, bytes))
    piece = Vector{UInt8}(undef, bytes[])
    GC.@preserve piece check(L.fp8rl_tokenizer_id_to_piece(tok, Int32(id), Ptr{Cchar}(pointer(piece)), bytes[], bytes))
    return String(resize!(piece, bytes[]))
end

"""
    vocab_size(tok) -> Int

One past the largest id, added tokens included.
"""
function vocab_size(tok::Tokenizer)
    size = Ref{Int64}(0)
    check(L.fp8rl_tokenizer_vocab_size(tok, size))
    return Int(size[])
end

"""
    special_ids(tok) -> NamedTuple

The folder's special ids: `(bos, eos, pad, add_bos_token)`, where `bos` and
`pad` are `nothing` when the folder names none, `eos` is a `Vector{Int32}`
(tokenizer_config.json's, then generation_config.json's, without repeats) and
`add_bos_token` is tokenizer_config.json's flag (`nothing` when not stated;
reported, not applied: what [`encode`](@ref) adds is the post-processor's).
"""
function special_ids(tok::Tokenizer)
    ids = Ref(_c_defaults(L.fp8rl_special_token_ids))
    check(L.fp8rl_tokenizer_special_ids(tok, ids))
    s = ids[]
    known(id) = id < 0 ? nothing : id
    return (bos = known(s.bos), eos = Int32[s.eos[i] for i in 1:min(s.num_eos, length(s.eos))], pad = known(s.pad),
            add_bos_token = s.add_bos_token < 0 ? nothing : s.add_bos_token != 0)
end
