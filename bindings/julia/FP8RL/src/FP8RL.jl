"""
    FP8RL

FP8 end-to-end reinforcement learning of LLM policies, from Julia, over the C
library `libfp8rl` (set `FP8RL_LIBRARY` to the built `libfp8rl.so`).

The C API's handles are Julia objects that free themselves ([`Context`](@ref),
[`Policy`](@ref), [`Rollout`](@ref), [`Trainer`](@ref), [`Tokenizer`](@ref); `close` frees them at
once), its failures are [`FP8RLError`](@ref)s carrying the library's status and
message, its option structs are keyword-constructed Julia structs whose
defaults come from the library, and arrays go in and come out as `Array`s.
`FP8RL.LibFP8RL` is the raw layer, one wrapper per C function.

```julia
using FP8RL
config = ModelConfig(vocab_size = 32, hidden_size = 64, num_layers = 2, num_attention_heads = 4,
                     num_key_value_heads = 2, intermediate_size = 128, max_position_embeddings = 32)
Policy(config; seed = 1, recipe = Recipe(:fp8_full)) do policy
    Trainer(policy; loss = LossConfig(group_size = 4), optimizer = OptimizerConfig(learning_rate = 1e-2)) do trainer
        prompts = fill([8, 9, 10, 11], 4)
        generate(policy, prompts, SamplingParams(max_new_tokens = 6); seeds = next_seeds(trainer, 4)) do rollout
            rewards = [count(==(7), c.tokens) / length(c.tokens) for c in rollout]
            train_step!(trainer, rollout; rewards = rewards)
        end
    end
end
```
"""
module FP8RL

using Libdl

include("LibFP8RL.jl")
# `L.fp8rl_*` reads as "the C function" throughout the idiomatic layer.
const L = LibFP8RL

include("errors.jl")
include("enums.jl")
include("options.jl")
include("configs.jl")
include("training_configs.jl")
include("logging.jl")
include("handles.jl")
include("communicator.jl")
include("host_collectives.jl")
include("context.jl")
include("arrays.jl")
include("numerics.jl")
include("policy.jl")
include("tokenizer.jl")
include("rollouts.jl")
include("trainer.jl")
include("mismatch.jl")
include("version.jl")

export FP8RLError
export version, version_string, build_features
export Context, backend, num_threads, description, rank, world_size
export Communicator, mpi_communicator, nccl_unique_id, nccl_communicator
export ModelConfig, Recipe, SamplingParams, CalibrationConfig, LossConfig, OptimizerConfig, TrainerConfig
export QuantizeOptions, ImportanceOptions
export Policy, load_policy, context, config, recipe, set_recipe!, parameter_count, active_parameter_count, memory,
    save, export_fp8
export fingerprint
export attention_scales, set_attention_scales!, recalibrate_attention_scales!, copy_weights!
export Rollout, Completion, generate, score, completions, total_tokens, experts
export Trainer, train_step!, train_iteration!, recompute_logprobs, recalibrate!, next_seeds, save_state, load_state!
export gather_weights!
export mismatch_metrics
export Tokenizer, load_tokenizer, tokenizer, encode, encode_batch, decode, token_to_id, id_to_piece, vocab_size,
    special_ids
export QuantizedMatrix, quantized_sizes, quantize, dequantize, convert_dtype, gemm_fp8, gemm_bf16

function __init__()
    # A C function pointer must be made at run time: one from precompilation would be stale.
    _LOG_CALLBACK[] = @cfunction(_log_callback, Cvoid, (Cint, Ptr{UInt8}, Ptr{Cvoid}))
    _init_collective_trampolines()
    _check_library_version()
    return nothing
end

end # module FP8RL
