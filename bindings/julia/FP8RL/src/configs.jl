# The option structs of policies: architecture, precision recipe, sampling, calibration.

"""
    ModelConfig(; vocab_size, hidden_size, num_layers, num_attention_heads, num_key_value_heads,
                intermediate_size, max_position_embeddings, options...)

The architecture of a decoder-only transformer (`fp8rl_model_config`), field
for field the keys of a Hugging Face `config.json` (`num_layers` is its
`num_hidden_layers`). The seven sizes are required; the other fields take the
defaults of `fp8rl_model_config_init`:

- `family = :llama` (or `:qwen2`, `:qwen3`, `:qwen3_moe`);
- `head_dim = 0`: implied, `hidden_size ÷ num_attention_heads`, which must divide exactly;
- `rms_norm_eps = 1e-5`, `rope_theta = 10000.0`;
- `rope_scaling = :none` (or `:llama3`, with `rope_factor = 1.0`, `rope_low_freq_factor = 1.0`,
  `rope_high_freq_factor = 4.0` and `rope_original_max_position_embeddings = 0`);
- `tie_word_embeddings = false`, `attention_bias = false`, `qk_norm = false`;
- `bos_token_id = -1` (none) and `eos_token_ids = Int64[]` (at most 8);
- Mixture-of-Experts, for `:qwen3_moe` only: `num_experts = 0`, `num_experts_per_tok = 0` (top-k, in
  1:num_experts), `moe_intermediate_size = 0` (each expert's SwiGLU width), `norm_topk_prob = false`
  (renormalize the chosen experts' weights), `decoder_sparse_step = 1` and `mlp_only_layers = Int32[]`
  (at most 64; 0-based layer `i` is sparse when not listed and `(i + 1) % decoder_sparse_step == 0`,
  other layers keep the dense MLP of `intermediate_size`), `router_aux_loss_coef = 0.001`.

The library checks the values when the config is used: [`parameter_count`](@ref)
and [`active_parameter_count`](@ref) validate one and name a bad field.
"""
struct ModelConfig <: _Options
    family::Union{Symbol,Int32}
    vocab_size::Int64
    hidden_size::Int64
    num_layers::Int64
    num_attention_heads::Int64
    num_key_value_heads::Int64
    head_dim::Int64
    intermediate_size::Int64
    max_position_embeddings::Int64
    rms_norm_eps::Float64
    rope_theta::Float64
    rope_scaling::Union{Symbol,Int32}
    rope_factor::Float64
    rope_low_freq_factor::Float64
    rope_high_freq_factor::Float64
    rope_original_max_position_embeddings::Int64
    tie_word_embeddings::Bool
    attention_bias::Bool
    qk_norm::Bool
    bos_token_id::Int64
    eos_token_ids::Vector{Int64}
    num_experts::Int64
    num_experts_per_tok::Int64
    moe_intermediate_size::Int64
    norm_topk_prob::Bool
    decoder_sparse_step::Int64
    mlp_only_layers::Vector{Int32}
    router_aux_loss_coef::Float64
end

_enums(::Type{ModelConfig}) = (family = _FAMILY, rope_scaling = _ROPE_SCALING)

function ModelConfig(; vocab_size, hidden_size, num_layers, num_attention_heads, num_key_value_heads,
                     intermediate_size, max_position_embeddings, options...)
    defaults = _model_config(_c_defaults(L.fp8rl_model_config))
    return _with(defaults; vocab_size, hidden_size, num_layers, num_attention_heads, num_key_value_heads,
                 intermediate_size, max_position_embeddings, options...)
end

# A ModelConfig from the raw struct: its first num_eos_token_ids EOS tokens
# and first num_mlp_only_layers dense layers count.
function _model_config(raw::L.fp8rl_model_config)
    eos = clamp(Int(raw.num_eos_token_ids), 0, L.FP8RL_MAX_EOS_TOKEN_IDS)
    dense = clamp(Int(raw.num_mlp_only_layers), 0, L.FP8RL_MAX_MLP_ONLY_LAYERS)
    return _from_c(ModelConfig, raw; eos_token_ids = collect(Int64, raw.eos_token_ids[1:eos]),
                   mlp_only_layers = collect(Int32, raw.mlp_only_layers[1:dense]))
end

# The fixed-size C array of `values` (the rest as in `defaults`), or an error naming `field`.
function _c_array(values, defaults::NTuple{N}, field) where {N}
    length(values) > N && throw(_invalid("ModelConfig: $field: at most $N entries, got $(length(values))"))
    return ntuple(i -> i <= length(values) ? values[i] : defaults[i], N)
end

function _to_c(model::ModelConfig)
    raw = _c_defaults(L.fp8rl_model_config)
    eos = _c_array(model.eos_token_ids, raw.eos_token_ids, "eos_token_ids")
    dense = _c_array(model.mlp_only_layers, raw.mlp_only_layers, "mlp_only_layers")
    raw = _to_c_fields(model, raw; skip = (:eos_token_ids, :mlp_only_layers))
    return _with(raw; eos_token_ids = eos, num_eos_token_ids = length(model.eos_token_ids),
                 mlp_only_layers = dense, num_mlp_only_layers = length(model.mlp_only_layers))
end

"""
    parameter_count(config::ModelConfig) -> Int

The number of weights of the model `config` describes (embeddings, every
layer's projections, biases and norms, the final norm and, unless tied, the
LM head). Validates the config: a bad one throws an [`FP8RLError`](@ref)
(`FP8RL_ERROR_INVALID_ARGUMENT`) whose message names the field.
"""
function parameter_count(model::ModelConfig)
    count = Ref{Int64}(0)
    check(L.fp8rl_model_config_parameter_count(Ref(_to_c(model)), count))
    return Int(count[])
end

"""
    active_parameter_count(config::ModelConfig) -> Int

The weights one token computes with: [`parameter_count`](@ref) with only
`num_experts_per_tok` experts in each sparse layer (the same count for a
dense model). Validates the config as `parameter_count` does.
"""
function active_parameter_count(model::ModelConfig)
    count = Ref{Int64}(0)
    check(L.fp8rl_model_config_active_parameter_count(Ref(_to_c(model)), count))
    return Int(count[])
end

"""
    Recipe(; linear = :bf16, scale_format = :fp32, kv_cache = :bf16, attention = :bf16,
           bf16_first_layers = 0, bf16_last_layers = 0, head = :bf16)
    Recipe(preset::Symbol; overrides...)

The precision recipe of a policy, for generation and training alike
(`fp8rl_recipe`; defaults from `fp8rl_recipe_init`). `linear` (the q/k/v/o and
gate/up/down projections), `kv_cache` and `attention` are `:bf16` or `:fp8`;
FP8 attention needs the FP8 KV cache. `scale_format` (`:fp32` or `:pow2`) is
that of the FP8 block scales; the first and last `bf16_*_layers` layers stay
entirely BF16. `head` (`:bf16` or `:fp8`) is the LM head's GEMMs, BF16 by default as
the published recipe keeps it. Embedding lookups, norms, softmax and RoPE always run in BF16/FP32.

Presets: `Recipe(:bf16)` (everything BF16, the baseline), `Recipe(:fp8)` (FP8
linear layers) and `Recipe(:fp8_full)` (FP8 linear layers, KV cache and attention).
"""
struct Recipe <: _Options
    linear::Union{Symbol,Int32}
    scale_format::Union{Symbol,Int32}
    kv_cache::Union{Symbol,Int32}
    attention::Union{Symbol,Int32}
    bf16_first_layers::Int32
    bf16_last_layers::Int32
    head::Union{Symbol,Int32}
end

_enums(::Type{Recipe}) = (linear = _PRECISION, scale_format = _SCALE_FORMAT, kv_cache = _PRECISION,
                          attention = _PRECISION, head = _PRECISION)

Recipe(; fields...) = _with(_from_c(Recipe, _c_defaults(L.fp8rl_recipe)); fields...)

function Recipe(preset::Symbol; fields...)
    base = Recipe()
    if preset === :fp8
        base = _with(base; linear = :fp8)
    elseif preset === :fp8_full
        base = _with(base; linear = :fp8, kv_cache = :fp8, attention = :fp8)
    elseif preset !== :bf16
        throw(_invalid("Recipe: unknown preset $(repr(preset)); expected :bf16, :fp8 or :fp8_full"))
    end
    return _with(base; fields...)
end

_to_c(recipe::Recipe) = _to_c_fields(recipe, _c_defaults(L.fp8rl_recipe))

"""
    SamplingParams(; temperature = 1.0, top_k = 0, top_p = 1.0, max_new_tokens = 64,
                   stop_token_ids = Int32[], stop_at_eos = true, batch_slots = 0,
                   max_tokens_per_step = 2048, record_experts = false)

How completions are drawn and when they end (`fp8rl_sampling_options`;
defaults from `fp8rl_sampling_options_init`): softmax(logits / temperature)
restricted to the `top_k` most likely tokens (0: all), then to the smallest
set reaching probability `top_p`. `temperature = 0` is greedy (the recorded
log-prob is then 0). A completion ends after a token of `stop_token_ids`, an
EOS token of the model (if `stop_at_eos`), or `max_new_tokens` tokens.
`batch_slots` (0: all prompts at once) and `max_tokens_per_step` change speed
and memory, never the results. `record_experts` keeps, for a
Mixture-of-Experts policy, the experts each fed token was routed to
([`experts`](@ref)).
"""
struct SamplingParams <: _Options
    temperature::Float32
    top_k::Int32
    top_p::Float32
    max_new_tokens::Int32
    stop_token_ids::Vector{Int32}
    stop_at_eos::Bool
    batch_slots::Int32
    max_tokens_per_step::Int32
    record_experts::Bool
end

SamplingParams(; fields...) =
    _with(_from_c(SamplingParams, _c_defaults(L.fp8rl_sampling_options); stop_token_ids = Int32[]); fields...)

# Calls f(options::Ref{fp8rl_sampling_options}): the raw struct points into the
# Julia array of stop tokens, which stays alive (and unmoved) during f.
function _with_c_sampling(f, sampling::SamplingParams)
    stops = sampling.stop_token_ids
    return GC.@preserve stops begin
        raw = _to_c_fields(sampling, _c_defaults(L.fp8rl_sampling_options); skip = (:stop_token_ids,))
        stop_pointer = isempty(stops) ? Ptr{Int32}(C_NULL) : pointer(stops)
        f(Ref(_with(raw; stop_token_ids = stop_pointer, num_stop_token_ids = length(stops))))
    end
end

"""
    CalibrationConfig(; percentile = 99.9, margin = 1.05, max_value = 448.0)

How the per-layer Q/K/V scales of the FP8 KV cache and attention follow the
activations (`fp8rl_calibration_options`; defaults from
`fp8rl_calibration_options_init`): the `percentile` (in (0, 100]) of every
token's largest magnitude, times `margin` (>= 1), maps to the FP8 value `max_value`.
"""
struct CalibrationConfig <: _Options
    percentile::Float64
    margin::Float64
    max_value::Float64
end

CalibrationConfig(; fields...) =
    _with(_from_c(CalibrationConfig, _c_defaults(L.fp8rl_calibration_options)); fields...)

_to_c(calibration::CalibrationConfig) = _to_c_fields(calibration, _c_defaults(L.fp8rl_calibration_options))
