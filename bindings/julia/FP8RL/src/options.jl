# The machinery of the option structs: Julia structs for the C API's options,
# whose defaults the library's own `*_init` functions give, and their
# conversion to and from the raw (immutable, isbits) C structs.

# ---- raw C structs

_init_function(::Type{L.fp8rl_context_options}) = L.fp8rl_context_options_init
_init_function(::Type{L.fp8rl_quantize_options}) = L.fp8rl_quantize_options_init
_init_function(::Type{L.fp8rl_model_config}) = L.fp8rl_model_config_init
_init_function(::Type{L.fp8rl_recipe}) = L.fp8rl_recipe_init
_init_function(::Type{L.fp8rl_calibration_options}) = L.fp8rl_calibration_options_init
_init_function(::Type{L.fp8rl_sampling_options}) = L.fp8rl_sampling_options_init
_init_function(::Type{L.fp8rl_importance_options}) = L.fp8rl_importance_options_init
_init_function(::Type{L.fp8rl_trainer_options}) = L.fp8rl_trainer_options_init
_init_function(::Type{L.fp8rl_train_batch}) = L.fp8rl_train_batch_init
# structs the library fills: their _init sets struct_size and zeroes the rest
_init_function(::Type{L.fp8rl_memory_report}) = L.fp8rl_memory_report_init
_init_function(::Type{L.fp8rl_mismatch_metrics}) = L.fp8rl_mismatch_metrics_init
_init_function(::Type{L.fp8rl_train_metrics}) = L.fp8rl_train_metrics_init

# The library's defaults for the C struct T, struct_size included: every raw
# struct the binding passes, options and outputs alike, starts from here
# (fields are only ever appended, so a struct filled otherwise could miss one).
function _c_defaults(::Type{T}) where {T}
    ref = Ref{T}()
    check(_init_function(T)(ref))
    return ref[]
end

# An output struct as a NamedTuple of its fields (struct_size left out).
function _fields(raw::T) where {T}
    names = Tuple(name for name in fieldnames(T) if name !== :struct_size)
    return NamedTuple{names}(map(name -> getfield(raw, name), names))
end

# A copy of the immutable struct `s` with `fields` replaced, each converted to
# its field's type (raw C structs are immutable, so this is how they are filled).
function _with(s::T; fields...) where {T}
    for name in keys(fields)
        if !hasfield(T, name)
            known = join(fieldnames(T), ", ")
            throw(_invalid("$(nameof(T)): no option `$name`; the options are $known"))
        end
    end
    values = ntuple(fieldcount(T)) do i
        name = fieldname(T, i)
        haskey(fields, name) ? _convert_field(T, name, fields[name]) : getfield(s, i)
    end
    return T(values...)
end

_convert_field(::Type{T}, name::Symbol, value) where {T} = convert(fieldtype(T, name), value)

# NamedTuple of field name => _CEnum for the enum fields of an option type.
_enums(::Type) = (;)
# NamedTuple of field name => C field name where the two differ.
_c_names(::Type) = (;)
_c_name(::Type{T}, name::Symbol) where {T} = get(_c_names(T), name, name)

# ---- the Julia option structs

"""
Supertype of the option structs ([`ModelConfig`](@ref), [`Recipe`](@ref),
[`SamplingParams`](@ref), ...): immutable, compared field by field, shown as the
keyword call that makes them.
"""
abstract type _Options end

function _convert_field(::Type{T}, name::Symbol, value) where {T<:_Options}
    what = "$(nameof(T)): $name"
    enums = _enums(T)
    haskey(enums, name) && return _enum(getfield(enums, name), value, what)
    FT = fieldtype(T, name)
    if FT <: AbstractVector
        value isa Union{AbstractVector,Tuple} || throw(_invalid("$what: expected a vector, got $(repr(value))"))
        return collect(eltype(FT), value)  # a copy: the struct must not alias the caller's array
    end
    FT <: _Options && value isa NamedTuple && return FT(; value...)
    try
        return convert(FT, value)
    catch err
        err isa Union{MethodError,InexactError} || rethrow()
        throw(_invalid("$what: cannot take $(repr(value)) as a $FT"))
    end
end

# The option struct T read from a raw struct: enums become Symbols, flags Bools.
function _from_c(::Type{T}, raw; overrides...) where {T<:_Options}
    enums = _enums(T)
    values = map(fieldnames(T)) do name
        if haskey(overrides, name)
            overrides[name]
        else
            value = getfield(raw, _c_name(T, name))
            if haskey(enums, name)
                _from_c(getfield(enums, name), value)
            elseif fieldtype(T, name) === Bool
                value != 0
            elseif fieldtype(T, name) <: _Options  # an options struct the C struct embeds
                _from_c(fieldtype(T, name), value)
            else
                value
            end
        end
    end
    return T(values...)
end

# `raw` with the fields of `x` written into it (those in `skip` excepted). An
# options field goes into the C struct `raw` embeds there, which keeps its
# own struct_size.
function _to_c_fields(x::T, raw; skip = ()) where {T<:_Options}
    enums = _enums(T)
    fields = Pair{Symbol,Any}[]
    for name in fieldnames(T)
        name in skip && continue
        value = getfield(x, name)
        if haskey(enums, name)
            value = _c(getfield(enums, name), value, "$(nameof(T)): $name")
        elseif value isa _Options
            value = _to_c_fields(value, getfield(raw, _c_name(T, name)))
        end
        push!(fields, _c_name(T, name) => value)
    end
    return _with(raw; fields...)
end

Base.:(==)(a::T, b::T) where {T<:_Options} = all(getfield(a, i) == getfield(b, i) for i in 1:fieldcount(T))

function Base.hash(x::_Options, h::UInt)
    h = hash(typeof(x), h)
    for i in 1:fieldcount(typeof(x))
        h = hash(getfield(x, i), h)
    end
    return h
end

function Base.show(io::IO, x::T) where {T<:_Options}
    print(io, nameof(T), "(")
    for (i, name) in enumerate(fieldnames(T))
        i > 1 && print(io, ", ")
        print(io, name, " = ")
        show(io, getfield(x, name))
    end
    print(io, ")")
end
