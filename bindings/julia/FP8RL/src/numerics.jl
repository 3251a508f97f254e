# FP8 and BF16 conversion, block quantization and the matrix products.
#
# Elements are stored as the C API stores them: F32 as Float32, BF16 as its
# UInt16 bits, E4M3 and E5M2 as UInt8 codes. Matrices are ordinary Julia
# matrices (rows × cols); the binding lays them out row-major for C and back.

const _STORAGE = (f32 = Float32, bf16 = UInt16, e4m3 = UInt8, e5m2 = UInt8)

function _storage(dtype::Symbol, what::AbstractString)
    haskey(_STORAGE, dtype) || throw(_invalid("$what: unknown dtype $(repr(dtype)); expected :f32, :bf16, :e4m3 or :e5m2"))
    return _STORAGE[dtype]
end

# The dtype elements of a type hold: BF16 bits for UInt16, F32 for other reals
# (converted); UInt8 codes could be E4M3 or E5M2, so the caller must say.
_dtype_of(::Type{<:Real}) = :f32
_dtype_of(::Type{UInt16}) = :bf16
_dtype_of(::Type{T}) where {T} = throw(_invalid("convert_dtype: say which dtype $T elements hold (from = ...)"))
_dtype_of(::Type{UInt8}) = throw(_invalid("convert_dtype: say which dtype UInt8 elements hold (from = :e4m3 or :e5m2)"))

"""
    convert_dtype(src::AbstractArray, to::Symbol; from = <by eltype>, saturate = true) -> Array

Converts elements between types, rounding to nearest even, with no scaling
(`fp8rl_convert`); the result has the shape of `src`. Supported: `:f32` to and
from `:bf16`, `:e4m3` and `:e5m2`. `from` defaults to `:bf16` for `UInt16` elements
and to `:f32` for other reals (converted to Float32 first); it must be given
for `UInt8` codes. NaN stays NaN. On
overflow into FP8, `saturate` clamps to the largest finite value; without it
E4M3 gets NaN and E5M2 Inf. F32 to BF16 overflows to Inf.

```julia
convert_dtype(Float32[1, 500, -0.5], :e4m3) == UInt8[0x38, 0x7e, 0xb0]  # 500 saturates to 448
```
"""
function convert_dtype(src::AbstractArray, to::Symbol; from::Symbol = _dtype_of(eltype(src)), saturate::Bool = true)
    source_type = _storage(from, "convert_dtype: from")
    target_type = _storage(to, "convert_dtype: to")
    if !(eltype(src) === source_type || (from === :f32 && eltype(src) <: Real))
        throw(_invalid("convert_dtype: $from elements are stored as $source_type, got $(eltype(src))"))
    end
    data = convert(Array{source_type}, src)  # contiguous, and Float32 for any real :f32 input
    dst = similar(data, target_type)
    isempty(data) && return dst
    check(L.fp8rl_convert(data, _c(_DTYPE, from), dst, _c(_DTYPE, to), Csize_t(length(data)), Int32(saturate)))
    return dst
end

"""
    QuantizeOptions(; format = :e4m3, layout = :tile_1x128, scale_format = :fp32,
                    saturate = true, allow_non_finite = false)

Options of block quantization (`fp8rl_quantize_options`; defaults from
`fp8rl_quantize_options_init`). `format` is `:e4m3` or `:e5m2`; `layout` how
the matrix is cut into blocks sharing a scale: `:tile_1x128` (activations,
gradients), `:tile_1x128_transposed` (for wgrad) or `:block_128x128`
(weights); `scale_format` `:fp32` (amax / fp8_max) or `:pow2`. `saturate`
clamps out-of-range values to the FP8 maximum; `allow_non_finite` encodes
NaN/Inf instead of refusing them (they then do not affect their block's scale).
"""
struct QuantizeOptions <: _Options
    format::Union{Symbol,Int32}
    layout::Union{Symbol,Int32}
    scale_format::Union{Symbol,Int32}
    saturate::Bool
    allow_non_finite::Bool
end

_enums(::Type{QuantizeOptions}) = (format = _DTYPE, layout = _LAYOUT, scale_format = _SCALE_FORMAT)

QuantizeOptions(; fields...) = _with(_from_c(QuantizeOptions, _c_defaults(L.fp8rl_quantize_options)); fields...)

_to_c(options::QuantizeOptions) = _to_c_fields(options, _c_defaults(L.fp8rl_quantize_options))

"""
    QuantizedMatrix(codes::Vector{UInt8}, scales::Vector{Float32}, rows, cols, options::QuantizeOptions)

A block-quantized `rows × cols` matrix, as [`quantize`](@ref) makes it. `codes`
and `scales` (dequantization multipliers: value ≈ decode(code) × scale) are flat
vectors in the C layout of `options.layout`, row-major:

- `:tile_1x128`: codes [rows, cols], scales [rows, ceil(cols / 128)];
- `:tile_1x128_transposed`: codes [cols, rows], scales [cols, ceil(rows / 128)];
- `:block_128x128`: codes [rows, cols], scales [ceil(rows / 128), ceil(cols / 128)].
"""
struct QuantizedMatrix
    codes::Vector{UInt8}
    scales::Vector{Float32}
    rows::Int
    cols::Int
    options::QuantizeOptions
end

"""
    quantized_sizes(options::QuantizeOptions, rows, cols) -> (codes = Int, scales = Int)

How many codes and scales a quantized `rows × cols` matrix takes (`fp8rl_quantized_sizes`).
"""
function quantized_sizes(options::QuantizeOptions, rows::Integer, cols::Integer)
    codes = Ref{Int64}(0)
    scales = Ref{Int64}(0)
    check(L.fp8rl_quantized_sizes(Ref(_to_c(options)), rows, cols, codes, scales))
    return (codes = Int(codes[]), scales = Int(scales[]))
end

"""
    quantize(ctx::Context, input::AbstractMatrix, options::QuantizeOptions) -> QuantizedMatrix
    quantize(ctx::Context, input::AbstractMatrix; options...) -> QuantizedMatrix

Block-quantizes a matrix to FP8 codes and FP32 scales on the context's backend
(`fp8rl_quantize`). `input` holds Float32 (other reals are converted) or BF16
bits as UInt16. NaN/Inf input throws an [`FP8RLError`](@ref)
(`FP8RL_ERROR_NON_FINITE`, naming the first bad row-major index) unless
`allow_non_finite`.
"""
function quantize(ctx::Context, input::AbstractMatrix, options::QuantizeOptions)
    rows, cols = size(input)
    if eltype(input) === UInt16
        data, dtype = _row_major(input, UInt16), L.FP8RL_DTYPE_BF16
    else
        data, dtype = _row_major(input, Float32), L.FP8RL_DTYPE_F32
    end
    code_count, scale_count = quantized_sizes(options, rows, cols)
    codes = Vector{UInt8}(undef, code_count)
    scales = Vector{Float32}(undef, scale_count)
    check(L.fp8rl_quantize(ctx, Ref(_to_c(options)), data, dtype, rows, cols, codes, code_count, scales, scale_count))
    return QuantizedMatrix(codes, scales, rows, cols, options)
end

quantize(ctx::Context, input::AbstractMatrix; options...) = quantize(ctx, input, QuantizeOptions(; options...))

"""
    dequantize(ctx::Context, q::QuantizedMatrix) -> Matrix{Float32}

Reconstructs the `q.rows × q.cols` Float32 matrix from its codes and scales (`fp8rl_dequantize`).
"""
function dequantize(ctx::Context, q::QuantizedMatrix)
    output = Vector{Float32}(undef, q.rows * q.cols)
    check(L.fp8rl_dequantize(ctx, Ref(_to_c(q.options)), q.codes, length(q.codes), q.scales, length(q.scales),
                             q.rows, q.cols, output, length(output)))
    return _from_row_major(output, q.rows, q.cols)
end

# GEMM output storage for c_dtype :f32 or :bf16.
function _gemm_output(dtype::Symbol, count::Integer, what::AbstractString)
    dtype in (:f32, :bf16) || throw(_invalid("$what: out must be :f32 or :bf16, got $(repr(dtype))"))
    return Vector{_STORAGE[dtype]}(undef, count)
end

# The raw view of q; its pointers are valid only while q's arrays are preserved.
_fp8_matrix(q::QuantizedMatrix) =
    L.fp8rl_fp8_matrix(pointer(q.codes), length(q.codes), pointer(q.scales), length(q.scales), q.rows, q.cols,
                       _c(_LAYOUT, q.options.layout, "gemm_fp8: layout"))

"""
    gemm_fp8(ctx::Context, a::QuantizedMatrix, w::QuantizedMatrix; out = :f32) -> Matrix

Block-scaled FP8 GEMM, `C = A Wᵀ` for A `M × K` and W `N × K`, with FP32
accumulation (`fp8rl_gemm_fp8`); returns the `M × N` matrix C as Float32
(`out = :f32`) or BF16 bits (`out = :bf16`, UInt16). `a` must be E4M3 in
`:tile_1x128`, `w` E4M3 in `:block_128x128` (or `:tile_1x128`). Batch-invariant
and deterministic: each element of C is bitwise the same whatever M, the other
rows or the thread count.
"""
function gemm_fp8(ctx::Context, a::QuantizedMatrix, w::QuantizedMatrix; out::Symbol = :f32)
    for (name, q) in (("a", a), ("w", w))
        if q.options.format !== :e4m3
            throw(_invalid("gemm_fp8: $name is quantized as $(repr(q.options.format)); FP8 GEMMs take :e4m3"))
        end
    end
    m, n = a.rows, w.rows
    c = _gemm_output(out, m * n, "gemm_fp8")
    a_codes, a_scales, w_codes, w_scales = a.codes, a.scales, w.codes, w.scales
    GC.@preserve a_codes a_scales w_codes w_scales begin
        check(L.fp8rl_gemm_fp8(ctx, Ref(_fp8_matrix(a)), Ref(_fp8_matrix(w)), c, _c(_DTYPE, out), length(c)))
    end
    return _from_row_major(c, m, n)
end

"""
    gemm_bf16(ctx::Context, a::AbstractMatrix{UInt16}, w::AbstractMatrix{UInt16}; out = :f32) -> Matrix

BF16 GEMM, `C = A Wᵀ` for A `M × K` and W `N × K` given as BF16 bits (see
[`convert_dtype`](@ref)), with FP32 accumulation (`fp8rl_gemm_bf16`); returns
the `M × N` matrix C as Float32 (`out = :f32`) or BF16 bits (`out = :bf16`).
Batch-invariant like [`gemm_fp8`](@ref).
"""
function gemm_bf16(ctx::Context, a::AbstractMatrix{UInt16}, w::AbstractMatrix{UInt16}; out::Symbol = :f32)
    m, k = size(a)
    n, w_k = size(w)
    k == w_k || throw(_invalid("gemm_bf16: a is $m × $k and w is $n × $w_k; they must share the K dimension"))
    a_data = _row_major(a, UInt16)
    w_data = _row_major(w, UInt16)
    c = _gemm_output(out, m * n, "gemm_bf16")
    check(L.fp8rl_gemm_bf16(ctx, a_data, length(a_data), w_data, length(w_data), m, n, k, c, _c(_DTYPE, out),
                            length(c)))
    return _from_row_major(c, m, n)
end
