# The C API's enums as Symbols. Each table maps a Symbol to the generated raw
# constant, so the header stays the one source of the values. A value the
# library returns that a table lacks (a newer library) comes back as its
# Int32, never as an error; an Int32 is also accepted wherever a Symbol is.

struct _CEnum
    name::String
    values::Vector{Pair{Symbol,Cint}}
end

const _BACKEND = _CEnum("backend", [
    :auto => L.FP8RL_BACKEND_AUTO, :cpu => L.FP8RL_BACKEND_CPU, :cuda => L.FP8RL_BACKEND_CUDA])
const _LOG_LEVEL = _CEnum("log_level", [
    :debug => L.FP8RL_LOG_DEBUG, :info => L.FP8RL_LOG_INFO, :warning => L.FP8RL_LOG_WARNING,
    :error => L.FP8RL_LOG_ERROR, :off => L.FP8RL_LOG_OFF])
const _DTYPE = _CEnum("dtype", [
    :f32 => L.FP8RL_DTYPE_F32, :bf16 => L.FP8RL_DTYPE_BF16, :e4m3 => L.FP8RL_DTYPE_E4M3,
    :e5m2 => L.FP8RL_DTYPE_E5M2])
const _LAYOUT = _CEnum("layout", [
    :tile_1x128 => L.FP8RL_LAYOUT_TILE_1X128, :tile_1x128_transposed => L.FP8RL_LAYOUT_TILE_1X128_TRANSPOSED,
    :block_128x128 => L.FP8RL_LAYOUT_BLOCK_128X128])
const _SCALE_FORMAT = _CEnum("scale_format", [:fp32 => L.FP8RL_SCALE_FP32, :pow2 => L.FP8RL_SCALE_POW2])
const _FAMILY = _CEnum("family", [
    :llama => L.FP8RL_MODEL_FAMILY_LLAMA, :qwen2 => L.FP8RL_MODEL_FAMILY_QWEN2,
    :qwen3 => L.FP8RL_MODEL_FAMILY_QWEN3, :qwen3_moe => L.FP8RL_MODEL_FAMILY_QWEN3_MOE])
const _ROPE_SCALING = _CEnum("rope_scaling", [
    :none => L.FP8RL_ROPE_SCALING_NONE, :llama3 => L.FP8RL_ROPE_SCALING_LLAMA3])
const _PRECISION = _CEnum("precision", [:bf16 => L.FP8RL_PRECISION_BF16, :fp8 => L.FP8RL_PRECISION_FP8])
const _FINISH_REASON = _CEnum("finish_reason", [
    :stop => L.FP8RL_FINISH_STOP, :length => L.FP8RL_FINISH_LENGTH,
    :context_full => L.FP8RL_FINISH_CONTEXT_FULL])
const _IMPORTANCE_MODE = _CEnum("importance mode", [
    :off => L.FP8RL_IMPORTANCE_OFF, :plain => L.FP8RL_IMPORTANCE_PLAIN,
    :truncated => L.FP8RL_IMPORTANCE_TRUNCATED, :token_masked => L.FP8RL_IMPORTANCE_TOKEN_MASKED,
    :sequence_masked => L.FP8RL_IMPORTANCE_SEQUENCE_MASKED])
const _LOSS_KIND = _CEnum("loss kind", [
    :clipped_policy_gradient => L.FP8RL_LOSS_CLIPPED_POLICY_GRADIENT, :cross_entropy => L.FP8RL_LOSS_CROSS_ENTROPY])
const _KL_ESTIMATOR = _CEnum("kl_estimator", [:k1 => L.FP8RL_KL_K1, :k3 => L.FP8RL_KL_K3])
const _AGGREGATION = _CEnum("aggregation", [
    :token_mean => L.FP8RL_AGGREGATION_TOKEN_MEAN, :sequence_mean => L.FP8RL_AGGREGATION_SEQUENCE_MEAN])
const _BASELINE = _CEnum("baseline", [
    :group_mean => L.FP8RL_BASELINE_GROUP_MEAN, :leave_one_out => L.FP8RL_BASELINE_LEAVE_ONE_OUT])
const _LR_SCHEDULE = _CEnum("schedule", [
    :constant => L.FP8RL_LR_CONSTANT, :warmup_constant => L.FP8RL_LR_WARMUP_CONSTANT,
    :warmup_cosine => L.FP8RL_LR_WARMUP_COSINE])

# Symbol -> C value (an Int32 passes through unchecked: the library checks ranges).
function _c(e::_CEnum, value::Symbol, what::AbstractString = e.name)
    for (name, c_value) in e.values
        name === value && return c_value
    end
    known = join((repr(first(pair)) for pair in e.values), ", ")
    throw(_invalid("$what: unknown $(e.name) $(repr(value)); expected one of $known"))
end
_c(::_CEnum, value::Integer, what::AbstractString = "") = Cint(value)

# C value -> Symbol, or the Int32 itself for a value this binding does not know.
function _from_c(e::_CEnum, value::Integer)
    for (name, c_value) in e.values
        c_value == value && return name
    end
    return Int32(value)
end

# A user's value for an enum field: a known Symbol, or an Int32 (a known one becomes its Symbol).
function _enum(e::_CEnum, value, what::AbstractString)
    value isa Symbol && return (_c(e, value, what); value)
    value isa Integer && return _from_c(e, value)
    throw(_invalid("$what: expected a Symbol ($(e.name)), got $(repr(value))"))
end
