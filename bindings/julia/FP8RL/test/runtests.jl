# Tests of the FP8RL package, against the library FP8RL_LIBRARY names:
#
#     FP8RL_LIBRARY=$PWD/build/capi/libfp8rl.so julia --project=bindings/julia/FP8RL -e 'using Pkg; Pkg.test()'
#
# Optional cross-checks against the C programs of this repository's build:
#   FP8RL_RL_LOOP_COMPLETIONS  a file `fp8rl_rl_loop FILE` (examples/rl_loop.c) wrote: one line of token ids
#                              per completion, step after step; or else
#   FP8RL_RL_LOOP_EXAMPLE      the built fp8rl_rl_loop, which the RL-loop test then runs to write that file;
#   FP8RL_SEEDED_ROLLOUT       the built tests/cross_language/seeded_rollout.c, whose output the seeded
#                              rollouts must reproduce character for character (log-prob bits included).
# Every model is the tiny Llama of examples/rl_loop.c: the whole suite takes seconds.

using FP8RL
using Test

const LibFP8RL = FP8RL.LibFP8RL
const INVALID_ARGUMENT = LibFP8RL.FP8RL_ERROR_INVALID_ARGUMENT
const NON_FINITE = LibFP8RL.FP8RL_ERROR_NON_FINITE

const TINY = (vocab_size = 32, hidden_size = 64, num_layers = 2, num_attention_heads = 4, num_key_value_heads = 2,
              intermediate_size = 128, max_position_embeddings = 32)
tiny_config(; overrides...) = ModelConfig(; merge(TINY, overrides)...)

const SAMPLING = SamplingParams(max_new_tokens = 4, stop_at_eos = false)

last_error_message() = unsafe_string(LibFP8RL.fp8rl_last_error_message())

# The bit patterns of Float32 values, so that comparisons are bitwise.
bits(values) = collect(reinterpret(UInt32, collect(Float32, values)))

# The exception f() throws, or nothing.
function thrown(f)
    try
        f()
    catch err
        return err
    end
    return nothing
end

# Whether err is an FP8RLError of `status` whose message contains `needle`.
is_error(err, status, needle = "") = err isa FP8RLError && err.status == status && occursin(needle, err.message)

# What a fixed batch of prompts and seeds generates: equal policies generate alike.
function generated(policy)
    return generate(policy, [[1, 2, 3], [4, 5], [6]], SAMPLING; seeds = [11, 12, 13]) do rollout
        [(c.tokens, bits(c.logprobs)) for c in rollout]
    end
end

# Makes a policy on `ctx` with a trainer and a rollout, and drops them all.
@noinline function make_and_drop(ctx)
    policy = Policy(tiny_config(); seed = 3, context = ctx)
    Trainer(policy)
    generate(policy, [[1, 2]], SAMPLING)
    return nothing
end

# Ranks as threads of this process, for the host-callback communicators: a
# barrier that spins (the collectives run inside a library call, where a task
# must not yield) and one posted buffer per rank.
struct ThreadHub
    size::Int
    arrived::Threads.Atomic{Int}
    generation::Threads.Atomic{Int}
    posted::Vector{Any}
end

ThreadHub(size) = ThreadHub(size, Threads.Atomic{Int}(0), Threads.Atomic{Int}(0), Vector{Any}(nothing, size))

function wait_all(hub::ThreadHub)
    generation = hub.generation[]
    if Threads.atomic_add!(hub.arrived, 1) == hub.size - 1  # the last to arrive releases the others
        hub.arrived[] = 0
        Threads.atomic_add!(hub.generation, 1)
    else
        while hub.generation[] == generation
            GC.safepoint()  # a collection another rank starts must not wait for this loop
        end
    end
    return nothing
end

# Posts this rank's buffer, waits for all, reads, waits again (no buffer changes while another rank reads it).
function exchange(read, hub::ThreadHub, rank, data)
    hub.posted[rank + 1] = data
    wait_all(hub)
    read()
    wait_all(hub)
    return nothing
end

# Rank `rank`'s collectives over `hub`; sums in rank order, so every rank computes the same bits.
function thread_collectives(hub::ThreadHub, rank::Integer)
    function sum_over_ranks(data)
        total = similar(data)
        exchange(hub, rank, data) do
            for i in eachindex(total)
                total[i] = foldl(+, (hub.posted[r][i] for r in 1:hub.size))
            end
        end
        copyto!(data, total)
        return nothing
    end
    function gather_from_ranks(data, counts)
        offsets = cumsum([0; counts])
        exchange(hub, rank, data) do
            for r in 1:hub.size
                part = (offsets[r] + 1):offsets[r + 1]
                r == rank + 1 || copyto!(view(data, part), view(hub.posted[r], part))
            end
        end
        return nothing
    end
    function from_root(data, root)
        exchange(() -> rank == root || copyto!(data, hub.posted[root + 1]), hub, rank, data)
        return nothing
    end
    return (all_reduce_sum! = sum_over_ranks, all_gather! = gather_from_ranks, broadcast! = from_root)
end

# body(rank) on two threads at once (the ranks block on each other); the
# results, or the exceptions thrown, in rank order.
function on_two_threads(body)
    results = Vector{Any}(undef, 2)
    Threads.@threads :static for r in 0:1
        results[r + 1] = try
            body(r)
        catch err
            err
        end
    end
    return results
end

# Two GRPO steps of a data-parallel FP8 policy on rank r's own prompts.
function train_rank(communicator, r)
    return Context(; num_threads = 1, communicator = communicator) do ctx
        close(communicator)  # the context keeps its own reference
        Policy(tiny_config(); seed = 1 + r, recipe = Recipe(:fp8_full), context = ctx) do policy
            optimizer = OptimizerConfig(learning_rate = 1e-2)
            Trainer(policy; loss = LossConfig(group_size = 2), optimizer = optimizer) do trainer
                fingerprints = [fingerprint(policy)]
                metrics = map(0:1) do step
                    prompts = [[3 + r, 5 + step, 7], [3 + r, 5 + step, 7]]
                    m = generate(policy, prompts, SAMPLING; seeds = next_seeds(trainer, 2)) do rollout
                        train_step!(trainer, rollout; rewards = [Float64(sum(c.tokens) % 3) for c in rollout])
                    end
                    push!(fingerprints, fingerprint(policy))
                    m
                end
                gather_weights!(trainer)
                (; rank = rank(ctx), world_size = world_size(ctx), fingerprints = fingerprints, metrics = metrics)
            end
        end
    end
end

# examples/rl_loop.c's completions, from the file it wrote or by running it; nothing without either.
function c_example_completions()
    path = get(ENV, "FP8RL_RL_LOOP_COMPLETIONS", "")
    example = get(ENV, "FP8RL_RL_LOOP_EXAMPLE", "")
    if isempty(path) && !isempty(example)
        path = joinpath(mktempdir(), "completions.txt")
        run(pipeline(`$example $path`; stdout = devnull))
    end
    isempty(path) && return nothing
    return [parse.(Int32, split(line)) for line in eachline(path)]
end

# seeded_rollout.c's output format: per completion, its tokens and the hex bits of its log-probs.
function seeded_rollout_text(completions)
    io = IOBuffer()
    for completion in completions
        print(io, "tokens:")
        foreach(token -> print(io, " ", token), completion.tokens)
        print(io, "\nlogprobs:")
        foreach(value -> print(io, " ", string(reinterpret(UInt32, value); base = 16, pad = 8)), completion.logprobs)
        print(io, "\n")
    end
    return String(take!(io))
end

const SEEDED_OUTPUTS = Dict{String,String}()

@testset "FP8RL" begin

@testset "version and build features" begin
    loaded = FP8RL.version()
    @test loaded.major == FP8RL.HEADER_VERSION.major && loaded.minor >= FP8RL.HEADER_VERSION.minor
    @test string(loaded) == FP8RL.version_string()
    features = build_features()
    @test features.bits isa UInt32
    @test features.cuda == ((features.bits & UInt32(LibFP8RL.FP8RL_FEATURE_CUDA)) != 0)
end

@testset "options take the library's defaults" begin
    sampling = SamplingParams()
    @test sampling.temperature == 1 && sampling.top_k == 0 && sampling.top_p == 1 && sampling.max_new_tokens == 64
    @test sampling.stop_at_eos && sampling.batch_slots == 0 && sampling.max_tokens_per_step == 2048
    @test sampling.stop_token_ids == Int32[]
    @test Recipe() == Recipe(:bf16) == Recipe(linear = :bf16, scale_format = :fp32, kv_cache = :bf16, attention = :bf16)
    @test Recipe(:fp8) == Recipe(linear = :fp8)
    @test Recipe(:fp8_full; bf16_first_layers = 1) ==
          Recipe(linear = :fp8, kv_cache = :fp8, attention = :fp8, bf16_first_layers = 1)
    model = tiny_config()
    @test model.family === :llama && model.head_dim == 0 && model.rope_scaling === :none
    @test model.rms_norm_eps == 1e-5 && model.rope_theta == 10000 && model.bos_token_id == -1
    @test model.eos_token_ids == Int64[] && !model.tie_word_embeddings && !model.qk_norm
    @test model == tiny_config() && hash(model) == hash(tiny_config())
    @test tiny_config(eos_token_ids = [2, 3]).eos_token_ids == [2, 3]
    defaults = TrainerConfig()
    @test defaults.loss.kind === :clipped_policy_gradient && defaults.loss.clip_low == 0.2
    @test defaults.loss.importance == ImportanceOptions() && defaults.loss.importance.mode === :off
    @test defaults.loss.kl_estimator === :k3 && defaults.loss.group_size == 1
    @test defaults.loss.sample_std && !defaults.loss.normalize_by_std && defaults.loss.temperature == 1
    @test defaults.optimizer.learning_rate == 1e-6 && defaults.optimizer.schedule === :constant
    @test defaults.optimizer.weight_decay == 0.01 && defaults.optimizer.max_grad_norm == 1
    @test defaults.calibration == CalibrationConfig() == CalibrationConfig(percentile = 99.9, margin = 1.05, max_value = 448)
    @test defaults.micro_batch_tokens == 2048 && defaults.recalibrate_after_step && defaults.seed == 0
    @test QuantizeOptions() ==
          QuantizeOptions(format = :e4m3, layout = :tile_1x128, scale_format = :fp32, saturate = true, allow_non_finite = false)
    @test ImportanceOptions() == ImportanceOptions(mode = :off, low = 0, high = 2)
    # the embedded C structs: one default each (their own _init), written back with their struct_size
    raw = FP8RL._to_c(TrainerConfig(loss = (importance = (mode = :truncated, high = 3),)))
    @test raw.importance.struct_size == sizeof(LibFP8RL.fp8rl_importance_options)
    @test raw.importance == FP8RL._to_c(ImportanceOptions(mode = :truncated, high = 3))
    @test raw.calibration == FP8RL._to_c(CalibrationConfig())
    # nested options from NamedTuples; C values, known ones as Symbols and unknown ones kept as Int32
    @test TrainerConfig(loss = (group_size = 4,)).loss.group_size == 4
    @test Recipe(linear = 1).linear === :fp8
    @test Recipe(linear = 7).linear === Int32(7)
    @test startswith(repr(SamplingParams()), "SamplingParams(temperature = 1.0f0, top_k = 0")
    # mistakes are caught when the options are made
    @test is_error(thrown(() -> SamplingParams(temprature = 1)), INVALID_ARGUMENT, "no option `temprature`")
    @test is_error(thrown(() -> Recipe(linear = :fp9)), INVALID_ARGUMENT, "Recipe: linear: unknown precision :fp9")
    @test is_error(thrown(() -> Recipe(:fp16)), INVALID_ARGUMENT, "unknown preset")
    @test is_error(thrown(() -> TrainerConfig(seed = -1)), INVALID_ARGUMENT, "TrainerConfig: seed")
    @test is_error(thrown(() -> tiny_config(eos_token_ids = collect(1:9)) |> parameter_count), INVALID_ARGUMENT, "at most 8")
    @test thrown(() -> ModelConfig(vocab_size = 32)) isa UndefKeywordError
end

@testset "library errors carry the status and the library's message" begin
    bad = tiny_config(vocab_size = 0)
    err = thrown(() -> parameter_count(bad))
    @test is_error(err, INVALID_ARGUMENT, "vocab_size")
    @test err.status_name == "FP8RL_ERROR_INVALID_ARGUMENT"
    @test startswith(err.message, "fp8rl_model_config_parameter_count: ")
    @test err.message == last_error_message()
    @test sprint(showerror, err) == "FP8RLError: $(err.message) [FP8RL_ERROR_INVALID_ARGUMENT]"
    err = thrown(() -> Policy(bad))
    @test is_error(err, INVALID_ARGUMENT, "vocab_size") && startswith(err.message, "fp8rl_policy_create_random: ")
    # embeddings 32x64, head 32x64, final norm 64; per layer q and o 64x64, k and v 64x32, MLP 3x64x128, two norms
    @test parameter_count(tiny_config()) == 2 * 32 * 64 + 64 + 2 * (4096 + 2 * 2048 + 4096 + 3 * 8192 + 128)
    err = thrown(() -> convert_dtype(UInt16[0x3f80], :e4m3))  # BF16 -> E4M3 is not a supported pair
    @test is_error(err, LibFP8RL.FP8RL_ERROR_UNSUPPORTED) && startswith(err.message, "fp8rl_convert: ")
    @test FP8RL.check(LibFP8RL.FP8RL_OK) === nothing
    err = thrown(() -> FP8RL.check(1234))  # a status this binding has no name for
    @test err isa FP8RLError && err.status == 1234 && err.status_name == "FP8RL_STATUS_UNKNOWN"
end

@testset "Qwen3-MoE configs" begin
    # layers 0 and 2 sparse (4 experts of width 32, top 2), layer 1 dense (intermediate_size 128)
    moe = tiny_config(family = :qwen3_moe, qk_norm = true, num_layers = 3, num_experts = 4, num_experts_per_tok = 2,
                      moe_intermediate_size = 32, norm_topk_prob = true, mlp_only_layers = [1])
    @test FP8RL._model_config(FP8RL._to_c(moe)) == moe
    # embeddings and head 2x32x64, final norm 64; per layer q and o 64x64, k and v 64x32, two norms of 64, q/k
    # head norms of 16; layer 1: MLP 3x64x128; layers 0 and 2: router 4x64 and 4 (active: 2) experts 3x64x32
    common = 2 * 32 * 64 + 64 + 3 * (2 * 4096 + 2 * 2048 + 2 * 64 + 2 * 16) + 3 * 64 * 128
    @test parameter_count(moe) == common + 2 * (4 * 64 + 4 * 3 * 64 * 32)
    @test active_parameter_count(moe) == common + 2 * (4 * 64 + 2 * 3 * 64 * 32)
    @test active_parameter_count(tiny_config()) == parameter_count(tiny_config())
    @test is_error(thrown(() -> parameter_count(tiny_config(; family = :qwen3_moe, qk_norm = true, num_experts = 4,
                                                            num_experts_per_tok = 5, moe_intermediate_size = 32))),
                   INVALID_ARGUMENT, "num_experts_per_tok")
    @test is_error(thrown(() -> parameter_count(tiny_config(mlp_only_layers = collect(0:64)))), INVALID_ARGUMENT,
                   "mlp_only_layers: at most 64")
    @test Policy(p -> generate(r -> length(r[1].tokens), p, [[1]], SAMPLING), moe) == 4
end

# The tiny Qwen3-MoE: layers 0 and 2 sparse (4 experts of width 32, top 2), layer 1 dense.
const MOE = tiny_config(family = :qwen3_moe, qk_norm = true, num_layers = 3, num_experts = 4, num_experts_per_tok = 2,
                        moe_intermediate_size = 32, norm_topk_prob = true, mlp_only_layers = [1],
                        router_aux_loss_coef = 0.0)
const MOE_PROMPTS = [[1, 2, 3], [1, 2, 3], [4, 5], [4, 5], [6], [6]]  # three prompts, groups of two
const MOE_SEEDS = [11, 12, 13, 14, 15, 16]
const MOE_REWARDS = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0]
const RECORDING = SamplingParams(max_new_tokens = 6, stop_at_eos = false, record_experts = true)
const NOT_RECORDING = SamplingParams(max_new_tokens = 6, stop_at_eos = false)

# Hugging Face's Qwen3MoeDecoderLayer rule, written out here (0-based layers).
moe_sparse_layers(c) = [layer for layer in 0:c.num_layers - 1
                        if !(layer in c.mlp_only_layers) && (layer + 1) % c.decoder_sparse_step == 0]

# (fed token, sparse layer, slot) choices of sequences `range`: every token of prompt + completion but the last is fed.
moe_choices(rollout, range = 1:length(MOE_PROMPTS)) =
    sum(length(MOE_PROMPTS[i]) + length(rollout[i].tokens) - 1 for i in range) *
    length(moe_sparse_layers(MOE)) * MOE.num_experts_per_tok

# HF's load_balancing_loss_func for perfectly balanced routing: E times the sum over the k slots and E experts of
# (share of tokens whose slot-th choice is e) times (mean router probability of e), both 1/E when balanced.
function balanced_aux_loss(c)
    experts_count = c.num_experts
    return experts_count * sum((1 / experts_count) * (1 / experts_count)
                               for _slot in 1:c.num_experts_per_tok, _expert in 1:experts_count)
end

moe_policy(recipe) = Policy(MOE; seed = 5, recipe = recipe)
const MOE_TRAINING = (loss = LossConfig(group_size = 2), optimizer = OptimizerConfig(learning_rate = 1e-2))
moe_trainer(policy; options...) = Trainer(policy; MOE_TRAINING..., options...)
moe_trainer(f::Function, policy; options...) = Trainer(f, policy; MOE_TRAINING..., options...)

@testset "Qwen3-MoE training" begin
    @test moe_sparse_layers(MOE) == [0, 2]
    k = MOE.num_experts_per_tok
    @test balanced_aux_loss(MOE) ≈ k  # HF's loss is k when balanced
    defaults = TrainerConfig()
    @test defaults.router_aux_loss_coef == 0 && !defaults.routing_replay
    raw = FP8RL._to_c(TrainerConfig(router_aux_loss_coef = 0.25, routing_replay = true))
    @test raw.router_aux_loss_coef == 0.25 && raw.routing_replay == 1

    for recipe in (Recipe(:bf16), Recipe(:fp8))
        # in the generator's recipe, training routes every fed token as the generator did
        Policy(MOE; seed = 5, recipe = recipe) do policy
            moe_trainer(policy; micro_batch_tokens = 8) do trainer
                generate(policy, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS) do rollout
                    @test size(experts(rollout, 1)) == (2, 2, 3 + 6 - 1)
                    metrics = train_step!(trainer, rollout; rewards = MOE_REWARDS)
                    # prompts of 12 tokens, completions of 6 x 6, the last of each of the 6 sequences not fed
                    @test metrics.routing_choices == moe_choices(rollout) == (12 + 6 * 6 - 6) * 2 * 2
                    @test metrics.routing_agreement == 1.0
                    @test isfinite(metrics.loss) && metrics.grad_norm > 0 && !metrics.skipped
                    @test 0.5 * balanced_aux_loss(MOE) <= metrics.router_aux_loss <= 2 * balanced_aux_loss(MOE)
                end
                # without recorded experts nothing is compared; the load-balancing loss is measured all the same
                generate(policy, MOE_PROMPTS, NOT_RECORDING; seeds = MOE_SEEDS) do rollout
                    metrics = train_step!(trainer, rollout; rewards = MOE_REWARDS)
                    @test metrics.routing_choices == 0 && metrics.routing_agreement === nothing
                    @test metrics.router_aux_loss > 0
                end
            end
            # each mini-batch of an iteration takes its sequences' experts
            moe_trainer(policy; minibatches = 3) do trainer
                generate(policy, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS) do rollout
                    metrics = train_iteration!(trainer, rollout; rewards = MOE_REWARDS)
                    @test metrics.routing_choices == moe_choices(rollout) && metrics.routing_agreement == 1.0
                    @test [m.routing_choices for m in metrics.minibatch_metrics] ==
                          [moe_choices(rollout, 2m + 1:2m + 2) for m in 0:2]
                    @test metrics.minibatch_metrics[1].routing_agreement == 1.0
                    @test all(0 < m.routing_agreement <= 1 for m in metrics.minibatch_metrics)
                end
            end
        end

        # routing replay in the generator's recipe: the recorded experts are the router's own choice
        plain_policy, replay_policy = moe_policy(recipe), moe_policy(recipe)
        plain, replaying = moe_trainer(plain_policy), moe_trainer(replay_policy; routing_replay = true)
        rollout = generate(plain_policy, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS)
        free = train_step!(plain, rollout; rewards = MOE_REWARDS)
        replayed = train_step!(replaying, rollout; rewards = MOE_REWARDS)
        @test replayed.routing_agreement == free.routing_agreement == 1.0
        @test replayed.routing_choices == moe_choices(rollout)
        @test (replayed.loss, replayed.grad_norm, replayed.router_aux_loss) ==
              (free.loss, free.grad_norm, free.router_aux_loss)
        @test fingerprint(replay_policy) == fingerprint(plain_policy)
        foreach(close, (rollout, plain, replaying, plain_policy, replay_policy))

        # the load-balancing loss coefficient adds its share to the loss, on the same batch and weights
        coef = 0.5
        plain_policy, weighted_policy = moe_policy(recipe), moe_policy(recipe)
        plain, weighted = moe_trainer(plain_policy), moe_trainer(weighted_policy; router_aux_loss_coef = coef)
        rollout = generate(plain_policy, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS)
        without = train_step!(plain, rollout; rewards = MOE_REWARDS)
        with_aux = train_step!(weighted, rollout; rewards = MOE_REWARDS)
        @test without.router_aux_loss > 0 && with_aux.router_aux_loss == without.router_aux_loss
        @test isapprox(with_aux.loss - without.loss, coef * without.router_aux_loss; rtol = 1e-6)
        @test with_aux.grad_norm != without.grad_norm
        foreach(close, (rollout, plain, weighted, plain_policy, weighted_policy))
    end

    # routing replay without recorded experts is refused before C, with a message that says what to do
    Policy(MOE; seed = 5) do policy
        moe_trainer(policy; routing_replay = true) do trainer
            before = last_error_message()
            generate(policy, MOE_PROMPTS, NOT_RECORDING; seeds = MOE_SEEDS) do rollout
                for train! in (train_step!, train_iteration!)
                    err = thrown(() -> train!(trainer, rollout; rewards = MOE_REWARDS))
                    @test is_error(err, INVALID_ARGUMENT, "SamplingParams(record_experts = true)")
                end
                tokens = [c.tokens for c in rollout]
                err = thrown(() -> train_step!(trainer, MOE_PROMPTS, tokens; rewards = MOE_REWARDS))
                @test is_error(err, INVALID_ARGUMENT, "routing_replay")
            end
            @test last_error_message() == before  # nothing reached the library
            # with recorded experts the same trainer steps
            generate(policy, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS) do rollout
                metrics = train_step!(trainer, rollout; rewards = MOE_REWARDS)
                @test metrics.routing_agreement == 1.0 && metrics.routing_choices == moe_choices(rollout)
            end
        end
    end

    # routing replay trains a BF16 policy on FP8 generations
    Policy(MOE; seed = 5, recipe = Recipe(:fp8)) do generator
        Policy(MOE; seed = 5) do policy
            moe_trainer(policy; routing_replay = true) do trainer
                generate(generator, MOE_PROMPTS, RECORDING; seeds = MOE_SEEDS) do rollout
                    metrics = train_step!(trainer, rollout; rewards = MOE_REWARDS)
                    @test metrics.routing_choices == moe_choices(rollout)
                    @test 0 < metrics.routing_agreement <= 1  # the BF16 router may choose otherwise
                    @test isfinite(metrics.loss) && !metrics.skipped
                end
            end
        end
    end

    # bad options name the field; a dense policy ignores both options
    Policy(MOE; seed = 5) do policy
        @test is_error(thrown(() -> Trainer(policy; router_aux_loss_coef = -1.0)), INVALID_ARGUMENT,
                       "router_aux_loss_coef")
    end
    Policy(tiny_config(); seed = 1) do policy
        moe_trainer(policy; routing_replay = true, router_aux_loss_coef = 0.5) do trainer
            generate(policy, [[1, 2], [3]], RECORDING) do rollout
                metrics = train_step!(trainer, rollout; rewards = [1.0, 0.0])
                @test metrics.routing_choices == 0 && metrics.routing_agreement === nothing
                @test metrics.router_aux_loss == 0
            end
        end
    end
end

@testset "bad inputs are refused before anything reaches C" begin
    Policy(tiny_config(); seed = 1) do policy
        before = last_error_message()
        err = thrown(() -> generate(policy, [[1, 2], [3, 40, 5]], SAMPLING))
        @test is_error(err, INVALID_ARGUMENT, "generate: prompts[2][2]: token id 40 outside the vocabulary [0, 32)")
        @test is_error(thrown(() -> generate(policy, [[1], Int[]], SAMPLING)), INVALID_ARGUMENT, "prompts[2]: empty")
        @test is_error(thrown(() -> generate(policy, [[-1]], SAMPLING)), INVALID_ARGUMENT, "outside the vocabulary")
        @test is_error(thrown(() -> generate(policy, Vector{Int}[], SAMPLING)), INVALID_ARGUMENT, "no sequences")
        @test is_error(thrown(() -> generate(policy, [[1.5]], SAMPLING)), INVALID_ARGUMENT, "integers")
        err = thrown(() -> generate(policy, [[1]], SAMPLING; seeds = [1, 2]))
        @test is_error(err, INVALID_ARGUMENT, "one seed per prompt")
        @test is_error(thrown(() -> generate(policy, [[1]], SAMPLING; seeds = [-1])), INVALID_ARGUMENT, "unsigned")
        err = thrown(() -> set_attention_scales!(policy, [1.0], [1.0], [1.0]))
        @test is_error(err, INVALID_ARGUMENT, "expected 2 values")
        err = thrown(() -> set_attention_scales!(policy, [1.0, NaN], [1.0, 1.0], [1.0, 1.0]))
        @test is_error(err, NON_FINITE, "q[2]: NaN is not finite")
        @test is_error(thrown(() -> score(policy, [[1]], [[2], [3]])), INVALID_ARGUMENT, "2 completions for 1 prompts")
        Trainer(policy; loss = LossConfig(group_size = 2)) do trainer
            generate(policy, [[1, 2], [1, 2]], SAMPLING; seeds = next_seeds(trainer, 2)) do rollout
                err = thrown(() -> train_step!(trainer, rollout; rewards = [1.0, NaN]))
                @test is_error(err, NON_FINITE, "train_step!: rewards[2]: NaN is not finite")
                err = thrown(() -> train_step!(trainer, rollout; rewards = [1.0, 1e39]))
                @test is_error(err, NON_FINITE, "in Float32")
                err = thrown(() -> train_step!(trainer, rollout))
                @test is_error(err, INVALID_ARGUMENT, "exactly one of rewards and advantages")
                err = thrown(() -> train_step!(trainer, rollout; rewards = [1, 0], advantages = [1, 0]))
                @test is_error(err, INVALID_ARGUMENT, "exactly one of rewards and advantages")
                @test is_error(thrown(() -> train_step!(trainer, rollout; rewards = [1.0])), INVALID_ARGUMENT, "expected 2")
                err = thrown(() -> train_step!(trainer, rollout; rewards = [1, 0], logp_ref = [zeros(4)]))
                @test is_error(err, INVALID_ARGUMENT, "logp_ref: 1 vectors for 2 completions")
            end
            @test is_error(thrown(() -> next_seeds(trainer, -1)), INVALID_ARGUMENT, ">= 0")
        end
        @test last_error_message() == before  # nothing above reached the library
    end
end

@testset "handles close once, in the order the C API requires" begin
    policy = Policy(tiny_config(); seed = 1)
    own_context = context(policy)
    rollout = generate(policy, [[1, 2], [3, 4, 5]], SAMPLING; seeds = [1, 2])
    expected = completions(rollout)
    close(policy)
    close(policy)  # idempotent
    @test !isopen(policy) && !isopen(own_context)  # a policy closes the context it made for itself
    @test is_error(thrown(() -> generate(policy, [[1]], SAMPLING)), INVALID_ARGUMENT, "this policy is closed")
    @test is_error(thrown(() -> config(policy)), INVALID_ARGUMENT, "this policy is closed")
    @test is_error(thrown(() -> backend(own_context)), INVALID_ARGUMENT, "this context is closed")

    # a rollout holds copies: valid after its policy and context are gone
    GC.gc()
    @test length(rollout) == 2 && collect(rollout) == expected && rollout[2] == expected[2]
    @test total_tokens(rollout) == 8 && all(c -> c.finish_reason === :length, rollout)
    @test rollout.seeds == UInt64[1, 2] && rollout.generation_seconds > 0
    @test thrown(() -> rollout[3]) isa BoundsError
    close(rollout)
    close(rollout)
    @test is_error(thrown(() -> rollout[1]), INVALID_ARGUMENT, "this rollout is closed")
    @test is_error(thrown(() -> completions(rollout)), INVALID_ARGUMENT, "this rollout is closed")

    ctx = Context()
    @test backend(ctx) === :cpu && num_threads(ctx) >= 1 && !isempty(description(ctx))
    shared = Policy(tiny_config(); context = ctx)
    @test context(shared) === ctx
    err = thrown(() -> close(ctx))  # the library refuses while a policy lives on the context
    @test is_error(err, INVALID_ARGUMENT, "still alive") && startswith(err.message, "fp8rl_context_destroy: ")
    @test isopen(ctx)
    trainer = Trainer(shared)
    err = thrown(() -> close(shared))  # and while a trainer uses the policy
    @test is_error(err, INVALID_ARGUMENT, "trainer") && isopen(shared)
    close(trainer)
    close(shared)
    @test isopen(ctx)  # a shared context is the caller's to close
    close(ctx)
    close(ctx)
    @test !isopen(ctx)

    # do-blocks return the body's value and close, even when the body throws
    @test Policy(p -> generate(r -> length(r[1].tokens), p, [[1]], SAMPLING), tiny_config()) == 4
    kept = Ref{Any}(nothing)
    err = thrown() do
        Context() do c
            kept[] = c
            error("boom")
        end
    end
    @test err isa ErrorException && !isopen(kept[])
end

@testset "the garbage collector frees handles in any order" begin
    ctx = Context()
    make_and_drop(ctx)
    make_and_drop(ctx)
    for _ in 1:3
        GC.gc()
    end
    # fp8rl_context_destroy refuses while a policy lives: closing proves that the
    # finalizers destroyed every trainer and policy, whichever ran first
    close(ctx)
    @test !isopen(ctx)
end

@testset "policies" begin
    Policy(tiny_config(); seed = 1, recipe = Recipe(:fp8)) do policy
        @test config(policy) == tiny_config()
        @test recipe(policy) == Recipe(:fp8)
        full = Recipe(:fp8_full; scale_format = :pow2, bf16_first_layers = 1, bf16_last_layers = 1, head = :fp8)
        @test set_recipe!(policy, full) === policy && recipe(policy) == full
        err = thrown(() -> set_recipe!(policy, Recipe(attention = :fp8)))  # FP8 attention needs the FP8 KV cache
        @test is_error(err, INVALID_ARGUMENT) && recipe(policy) == full

        params = parameter_count(policy)
        @test params == parameter_count(tiny_config())
        report = memory(policy)
        @test keys(report) == (:master_weights, :compute_weights, :gradients, :optimizer_state, :backward_weights)
        @test report.master_weights == 4 * params && report.gradients == 0 && report.optimizer_state == 0
        @test 0 < report.compute_weights < report.master_weights

        @test attention_scales(policy) == (q = ones(Float32, 2), k = ones(Float32, 2), v = ones(Float32, 2))
        @test set_attention_scales!(policy, Float32[0.5, 2], [1, 1], [1, 1]) === policy
        @test attention_scales(policy).q == Float32[0.5, 2]
        @test is_error(thrown(() -> set_attention_scales!(policy, [1, 0], [1, 1], [1, 1])), INVALID_ARGUMENT)
        set_attention_scales!(policy, attention_scales(policy))
        recalibrate_attention_scales!(policy, [[1, 2, 3, 4], [5, 6]])
        scales = attention_scales(policy)
        @test all(>(0), scales.q) && all(>(0), scales.k) && all(>(0), scales.v) && scales.q != Float32[0.5, 2]

        set_recipe!(policy, Recipe())
        mktempdir() do dir
            save(policy, joinpath(dir, "model"); dtype = :f32)
            @test isfile(joinpath(dir, "model", "config.json"))
            load_policy(joinpath(dir, "model")) do loaded
                @test config(loaded) == config(policy) && recipe(loaded) == Recipe()
                @test generated(loaded) == generated(policy)  # F32 weights are exact
            end
            export_fp8(policy, joinpath(dir, "fp8"))
            @test isfile(joinpath(dir, "fp8", "config.json"))
            err = thrown(() -> load_policy(joinpath(dir, "missing")))
            @test is_error(err, LibFP8RL.FP8RL_ERROR_IO) && startswith(err.message, "fp8rl_policy_load: ")
        end

        Policy(tiny_config(); seed = 2) do other
            @test generated(other) != generated(policy)
            @test copy_weights!(other, policy) === other
            @test generated(other) == generated(policy)
            @test is_error(thrown(() -> copy_weights!(other, other)), INVALID_ARGUMENT)
        end
    end
end

# The hand-written byte-level BPE tokenizer of tests/capi/tiny_tokenizer.h: ids 0..255 are the bytes (spelled with
# GPT-2's byte-to-character table, the space as "Ġ"), merges 256 he, 257 ll, 258 hell, 259 hello, 260 Ġw, 261 or,
# 262 Ġwor, special tokens 263 <s>, 264 </s>, 265 <pad>, post-processor "<s> $A".
function byte_char(b::Integer)
    printable(c) = 0x21 <= c <= 0x7e || 0xa1 <= c <= 0xac || 0xae <= c <= 0xff
    printable(b) && return Char(b)
    return Char(256 + count(c -> !printable(c), 0:b-1))
end

json_string(s) = "\"" * replace(s, "\\" => "\\\\", "\"" => "\\\"") * "\""

function write_tiny_tokenizer(dir)
    space = string(byte_char(UInt8(' ')))
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (space, "w"), ("o", "r"), (space * "w", "or")]
    vocab = [json_string(string(byte_char(b))) * ":$b" for b in 0:255]
    append!(vocab, [json_string(a * b) * ":$(255 + i)" for (i, (a, b)) in enumerate(merges)])
    added(id, content) = """{"id":$id,"content":"$content","single_word":false,"lstrip":false,"rstrip":false,""" *
                         """"normalized":false,"special":true}"""
    json = """{"version":"1.0","added_tokens":[$(added(263, "<s>")),$(added(264, "</s>")),$(added(265, "<pad>"))],
        "normalizer":null,
        "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
        "post_processor":{"type":"TemplateProcessing",
          "single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
          "pair":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},
                  {"Sequence":{"id":"B","type_id":1}}],
          "special_tokens":{"<s>":{"id":"<s>","ids":[263],"tokens":["<s>"]}}},
        "decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
        "model":{"type":"BPE","dropout":null,"unk_token":null,"fuse_unk":false,"byte_fallback":false,
          "vocab":{$(join(vocab, ","))},"merges":[$(join([json_string(a * " " * b) for (a, b) in merges], ","))]}}"""
    write(joinpath(dir, "tokenizer.json"), json)
    write(joinpath(dir, "tokenizer_config.json"),
          """{"bos_token": "<s>", "eos_token": {"content": "</s>"}, "pad_token": "<pad>", "add_bos_token": true}""")
    write(joinpath(dir, "generation_config.json"), """{"eos_token_id": [264, 10]}""")
    return dir
end

@testset "tokenizers" begin
    mktempdir() do dir
        write_tiny_tokenizer(dir)
        load_tokenizer(dir) do tok
            @test encode(tok, "hello world") == Int32[263, 259, 262, 108, 100]
            @test encode(tok, "hello world"; add_special_tokens = false) == Int32[259, 262, 108, 100]
            @test encode(tok, "") == Int32[263]
            @test encode(tok, UInt8[0xff]; add_special_tokens = false) == Int32[239, 191, 189]  # repaired to U+FFFD
            @test encode(tok, "a\0b"; add_special_tokens = false) == Int32[97, 0, 98]
            @test length(encode(tok, fill(0xff, 1000); add_special_tokens = false)) == 3000
            @test decode(tok, [263, 259, 262, 108, 100]) == "<s>hello world"
            @test decode(tok, [263, 259, 262, 108, 100]; skip_special_tokens = true) == "hello world"
            @test decode(tok, [259, 266, 100_000, 262]) == "hello wor"
            @test decode(tok, [195]) == "\ufffd"
            @test decode(tok, fill(259, 500)) == "hello"^500
            @test is_error(thrown(() -> decode(tok, [5, -2])), INVALID_ARGUMENT)
            texts = ["hello world", "", "\xff", "hello</s>"]
            @test encode_batch(tok, texts) == [encode(tok, t) for t in texts]
            @test encode_batch(tok, String[]) == Vector{Int32}[]
            @test id_to_piece(tok, 262) == "Ġwor"
            @test all(token_to_id(tok, id_to_piece(tok, id)) == id for id in 0:265)
            @test token_to_id(tok, " ") === nothing
            @test is_error(thrown(() -> id_to_piece(tok, 266)), INVALID_ARGUMENT)
            @test vocab_size(tok) == 266
            @test special_ids(tok) == (bos = 263, eos = Int32[264, 10], pad = 265, add_bos_token = true)
        end
        err = thrown(() -> load_tokenizer(joinpath(dir, "missing")))
        @test is_error(err, LibFP8RL.FP8RL_ERROR_IO) && occursin("tokenizer.json", err.message)

        Policy(tiny_config(); seed = 1) do policy
            @test is_error(thrown(() -> tokenizer(policy)), INVALID_ARGUMENT)
            save(policy, joinpath(dir, "model"); dtype = :f32)
        end
        for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json")
            cp(joinpath(dir, name), joinpath(dir, "model", name))
        end
        tok = load_policy(joinpath(dir, "model")) do policy
            tokenizer(policy)
        end
        @test encode(tok, "hello world") == Int32[263, 259, 262, 108, 100]  # outlives the policy
        close(tok)
        @test !isopen(tok)
    end
end

@testset "generation and scoring" begin
    Policy(tiny_config(); seed = 1, recipe = Recipe(:fp8_full)) do policy
        # default seeds count up per policy
        @test generate(r -> r.seeds, policy, [[1], [2]], SAMPLING) == UInt64[0, 1]
        @test generate(r -> r.seeds, policy, [[1]], SAMPLING) == UInt64[2]
        # a prompt's seed alone decides its completion, whatever the batch and the batching
        alone = generate(r -> r[1], policy, [[1, 2, 3]], SAMPLING; seeds = [7])
        for sampling in (SAMPLING, SamplingParams(max_new_tokens = 4, stop_at_eos = false, batch_slots = 1),
                         SamplingParams(max_new_tokens = 4, stop_at_eos = false, max_tokens_per_step = 1))
            @test generate(r -> r[2], policy, [[4, 5], [1, 2, 3], [6]], sampling; seeds = [1, 7, 2]) == alone
        end
        @test generate(r -> r[1], policy, [[1, 2, 3]], SAMPLING; seeds = [8]).tokens != alone.tokens
        # greedy generation records log-prob 0 and ignores the seeds
        greedy = SamplingParams(temperature = 0, max_new_tokens = 5, stop_at_eos = false)
        first_run = generate(completions, policy, [[1, 2], [3]], greedy; seeds = [1, 2])
        @test all(c -> all(iszero, c.logprobs), first_run)
        @test generate(completions, policy, [[1, 2], [3]], greedy; seeds = [99, 98]) == first_run
        # stop tokens end a completion after being emitted
        stop_at = alone.tokens[2]
        stopped = generate(r -> r[1], policy, [[1, 2, 3]],
                           SamplingParams(max_new_tokens = 4, stop_at_eos = false, stop_token_ids = [stop_at]);
                           seeds = [7])
        @test stopped.finish_reason === :stop && stopped.tokens[end] == stop_at
        @test length(stopped.tokens) <= 2 && stopped.tokens == alone.tokens[1:length(stopped.tokens)]

        # scoring gives the generator's log-probs bit for bit, under the same sampling distribution
        sampling = SamplingParams(temperature = 0.7, top_k = 10, top_p = 0.9, max_new_tokens = 6, stop_at_eos = false)
        generate(policy, [[1, 2, 3], [4, 5], [6]], sampling) do rollout
            generated = [bits(c.logprobs) for c in rollout]
            @test bits.(score(policy, rollout, sampling)) == generated
            @test bits.(score(policy, [[1, 2, 3], [4, 5], [6]], [c.tokens for c in rollout], sampling)) == generated
            hotter = SamplingParams(temperature = 1.05, top_k = 10, top_p = 0.9, max_new_tokens = 6, stop_at_eos = false)
            @test bits.(score(policy, rollout, hotter)) != generated
        end
        # given completions: one vector per completion, an empty one included; row by row, batch-invariant
        scores = score(policy, [[1, 2], [3], [4]], [[4, 5, 6], [7], Int[]])
        @test length.(scores) == [3, 1, 0] && all(s -> all(<(0), s), scores)
        @test bits(score(policy, [[1, 2]], [[4, 5, 6]])[1]) == bits(scores[1])
    end
end

@testset "seeded rollout of tests/cross_language/seeded_rollout.c ($name)" for name in ("bf16", "fp8")
    # seeded_rollout.c: the tiny Llama, seed 1, BF16 or FP8 linear layers + KV cache + attention
    chosen = name == "fp8" ? Recipe(:fp8_full) : Recipe(:bf16)
    sampling = SamplingParams(temperature = 0.8, max_new_tokens = 8, stop_at_eos = false)
    prompts = [[1, 2, 3], [4, 5, 6, 7], [8]]
    text = Policy(tiny_config(); seed = 1, recipe = chosen) do policy
        generate(policy, prompts, sampling; seeds = [11, 12, 13]) do rollout
            generated = completions(rollout)
            @test length(generated) == 3
            @test all(c -> length(c.tokens) == 8 && length(c.logprobs) == 8 && c.finish_reason === :length, generated)
            @test all(c -> all(x -> 0 <= x < 32, c.tokens) && all(<=(0), c.logprobs), generated)
            @test collect(rollout) == generated  # rollout_get and rollout_copy agree
            seeded_rollout_text(generated)
        end
    end
    SEEDED_OUTPUTS[name] = text
    program = get(ENV, "FP8RL_SEEDED_ROLLOUT", "")
    if isempty(program)
        @info "FP8RL_SEEDED_ROLLOUT is not set: the $name rollout is not compared with the C program's"
    else
        @test text == read(`$program $name`, String)
    end
end

@testset "the BF16 and FP8 recipes give different rollouts" begin
    @test SEEDED_OUTPUTS["bf16"] != SEEDED_OUTPUTS["fp8"]
end

@testset "trainers" begin
    Policy(tiny_config(); seed = 1, recipe = Recipe(:fp8_full)) do policy
        loss = LossConfig(group_size = 2)
        Trainer(policy; loss = loss, optimizer = OptimizerConfig(learning_rate = 3e-3)) do trainer
            @test trainer.config.loss == loss
            prompts = [[1, 2], [1, 2], [3], [3]]
            generate(policy, prompts, SAMPLING; seeds = next_seeds(trainer, 4)) do rollout
                generated = [bits(c.logprobs) for c in rollout]
                # one recipe, one temperature: training log-probs equal the generator's bit for bit
                @test bits.(recompute_logprobs(trainer, rollout)) == generated
                @test bits.(recompute_logprobs(trainer, prompts, [c.tokens for c in rollout])) == generated
                metrics = train_step!(trainer, rollout; rewards = [1.0, 0.0, 0.5, 0.0])
                @test keys(metrics) == Tuple(n for n in fieldnames(LibFP8RL.fp8rl_train_metrics) if n !== :struct_size)
                @test metrics.step == 1 && metrics.learning_rate == 3e-3
                @test metrics.sequences == 4 && metrics.completion_tokens == 16
                @test metrics.reward_mean ≈ 0.375
                @test metrics.has_mismatch === true && metrics.token_mult_prob_error == 1.0 && metrics.ratio_mean == 1.0
                @test metrics.skipped === false && metrics.clipped isa Bool && metrics.kl_k1 == 0
                @test metrics.generation_seconds == rollout.generation_seconds
                # a dense policy: no expert choices, no load-balancing loss
                @test metrics.routing_choices == 0 && metrics.routing_agreement === nothing
                @test metrics.router_aux_loss == 0
                # completions made elsewhere, without generator log-probs: no mismatch metrics
                metrics = train_step!(trainer, prompts, [c.tokens for c in rollout]; advantages = [1, -1, 0.5, -0.5])
                @test metrics.step == 2 && metrics.has_mismatch === false && metrics.reward_mean == 0
                @test metrics.token_mult_prob_error === nothing && metrics.is_masked_fraction === nothing
                # generator log-probs given per completion, and flat
                logp = [c.logprobs for c in rollout]
                @test train_step!(trainer, prompts, [c.tokens for c in rollout]; rewards = [1, 0, 1, 0],
                                  logp_gen = logp).has_mismatch === true
                @test train_step!(trainer, prompts, [c.tokens for c in rollout]; rewards = [1, 0, 1, 0],
                                  logp_gen = reduce(vcat, logp)).step == 4
            end
            # a PPO iteration of two mini-batch steps on the same rollout
            Trainer(policy; minibatches = 2) do iterating
                iteration = train_iteration!(iterating, rollout; rewards = [1.0, 0.0, 0.5, 0.0])
                @test iteration.minibatches == 2 && length(iteration.minibatch_metrics) == 2
                @test [m.step for m in iteration.minibatch_metrics] == [1, 2]
                @test iteration.minibatch_metrics[1].ratio_min == iteration.minibatch_metrics[1].ratio_max == 1.0
                @test_throws FP8RLError train_iteration!(iterating, rollout; rewards = [1.0, 0.0, 0.5, 0.0],
                                                         logp_old = fill(NaN32, 16))
            end
            mktempdir() do dir
                path = joinpath(dir, "state.safetensors")
                save_state(trainer, path)
                drawn = next_seeds(trainer, 3)
                @test load_state!(trainer, path) === trainer
                @test next_seeds(trainer, 3) == drawn  # the seed stream is part of the state
                @test next_seeds(trainer, 0) == UInt64[]
                err = thrown(() -> load_state!(trainer, joinpath(dir, "missing.safetensors")))
                @test is_error(err, LibFP8RL.FP8RL_ERROR_IO)
            end
            @test recalibrate!(trainer) >= 0
            params = parameter_count(policy)
            report = memory(trainer)
            # the arena: FP32 buffers with tensors at 128-element offsets (at most 127 elements of padding each)
            @test 4 * params <= report.gradients < 4 * (params + 127 * 64)
            @test report.optimizer_state == 2 * report.gradients && report.backward_weights > 0
        end
    end
    # supervised fine-tuning lowers the cross-entropy of the given answers
    Policy(tiny_config(); seed = 1, recipe = Recipe(:fp8_full)) do policy
        sft_loss = LossConfig(kind = :cross_entropy)
        Trainer(policy; loss = sft_loss, optimizer = OptimizerConfig(learning_rate = 1e-2)) do sft
            prompts, answers = [[1, 2], [3, 4], [5]], [[7, 7, 8], [9, 10], [11, 12, 13]]
            # the loss is the token mean of -logp under the current weights
            expected_first = -sum(Float64, reduce(vcat, recompute_logprobs(sft, prompts, answers))) / 8
            losses = [train_step!(sft, prompts, answers).loss for _ in 1:8]
            @test isapprox(losses[1], expected_first; rtol = 1e-5)
            @test losses[end] < 0.5 * losses[1]
            err = thrown(() -> train_step!(sft, prompts, answers; rewards = [1, 1, 1]))
            @test is_error(err, INVALID_ARGUMENT, "neither rewards nor advantages")
        end
    end
end

@testset "communicators" begin
    @testset "host callbacks live as long as the last reference" begin
        ignore(args...) = nothing  # one rank: the library calls no collective
        collectives = (all_reduce_sum! = ignore, all_gather! = ignore, broadcast! = ignore)
        rooted = length(FP8RL._ROOTED)
        communicator = Communicator(collectives; rank = 0, world_size = 1, name = "one rank")
        @test (rank(communicator), world_size(communicator)) == (0, 1)
        @test length(FP8RL._ROOTED) == rooted + 1
        Context(; num_threads = 1, communicator = communicator) do ctx
            close(communicator)
            @test length(FP8RL._ROOTED) == rooted + 1  # the context still uses them
            @test (rank(ctx), world_size(ctx)) == (0, 1)
        end
        @test length(FP8RL._ROOTED) == rooted  # the library's destroy released them
        Context() do ctx
            @test (rank(ctx), world_size(ctx)) == (0, 1)  # no communicator: one process
        end
    end

    @testset "bad callbacks and ranks are refused" begin
        @test is_error(thrown(() -> Communicator((all_reduce_sum! = identity,); rank = 0, world_size = 1)),
                       INVALID_ARGUMENT, "all_gather!")
        collectives = (all_reduce_sum! = identity, all_gather! = (data, counts) -> nothing,
                       broadcast! = (data, root) -> nothing)
        rooted = length(FP8RL._ROOTED)
        @test is_error(thrown(() -> Communicator(collectives; rank = 2, world_size = 2)), INVALID_ARGUMENT, "rank")
        @test length(FP8RL._ROOTED) == rooted  # a refused communicator keeps nothing alive
    end

    @testset "a missing libfp8rl_mpi is an error naming it" begin
        missing_library = joinpath(tempdir(), "fp8rl-no-such-folder", "libfp8rl_mpi.so")
        withenv("FP8RL_MPI_LIBRARY" => missing_library) do
            err = thrown(() -> mpi_communicator(0))
            @test is_error(err, LibFP8RL.FP8RL_ERROR_BACKEND_UNAVAILABLE, missing_library)
            @test occursin("FP8RL_MPI_LIBRARY", err.message)
        end
    end

    @testset "NCCL needs the CUDA backend" begin
        if build_features().cuda
            @info "a CUDA build: NCCL communicators are tested on the GPU machine"
        else
            @test is_error(thrown(nccl_unique_id), LibFP8RL.FP8RL_ERROR_UNSUPPORTED)
            @test is_error(thrown(() -> nccl_communicator(zeros(UInt8, 128), 0, 1, 0; timeout = 10)),
                           LibFP8RL.FP8RL_ERROR_UNSUPPORTED)
        end
        @test is_error(thrown(() -> nccl_communicator(zeros(UInt8, 5), 0, 1, 0; timeout = 10)), INVALID_ARGUMENT, "128")
    end

    if Threads.nthreads() < 2
        @info "one Julia thread: the two-rank tests need `julia --threads=2`"
    else
        @testset "two ranks as threads train in lockstep" begin
            hub = ThreadHub(2)
            results = on_two_threads() do r
                train_rank(Communicator(thread_collectives(hub, r); rank = r, world_size = 2, name = "threads"), r)
            end
            @test all(result -> !(result isa Exception), results)
            if !any(result -> result isa Exception, results)
                @test [(result.rank, result.world_size) for result in results] == [(0, 2), (1, 2)]
                # different seeds, then rank 0's weights on both ranks, kept bitwise equal by every step
                @test results[1].fingerprints == results[2].fingerprints
                @test allunique(results[1].fingerprints)
                for (mine, theirs) in zip(results[1].metrics, results[2].metrics)
                    @test mine.token_mult_prob_error == 1.0
                    @test mine.sequences == 4  # global: both ranks' sequences
                    @test mine.loss === theirs.loss && mine.grad_norm === theirs.grad_norm
                    @test mine.bytes_reduced > 0 && mine.bytes_gathered > 0
                end
            end
        end

        @testset "a failing collective fails the training call naming it" begin
            hub = ThreadHub(2)
            results = on_two_threads() do r
                failing = merge(thread_collectives(hub, r),
                                (broadcast! = (data, root) -> error("injected broadcast failure"),))
                train_rank(Communicator(failing; rank = r, world_size = 2, name = "threads"), r)
            end
            for (r, err) in zip(0:1, results)
                @test is_error(err, LibFP8RL.FP8RL_ERROR_DISTRIBUTED, "threads broadcast failed on rank $r of 2")
                @test is_error(err, LibFP8RL.FP8RL_ERROR_DISTRIBUTED, "injected broadcast failure")
            end
        end
    end
end

@testset "mismatch metrics" begin
    logp = [Float32[-0.5, -1.0], Float32[-0.25]]
    same = mismatch_metrics(logp, logp)
    @test same.tokens == 3 && same.non_finite_tokens == 0
    @test same.token_mult_prob_error == 1.0 && same.gen_kl_error == 0.0 && same.is_weight_mean == 1.0
    @test mismatch_metrics(reduce(vcat, logp), reduce(vcat, logp), [0, 2, 3]) == same
    shifted = mismatch_metrics(logp, [x .- 0.1f0 for x in logp]; importance = ImportanceOptions(mode = :plain))
    @test shifted.token_mult_prob_error > 1 && shifted.is_weight_mean > 1 && shifted.gen_kl_error > 0
    @test mismatch_metrics(logp, [Float32[-0.5, NaN], Float32[-0.25]]).non_finite_tokens == 1
    @test is_error(thrown(() -> mismatch_metrics(Float32[NaN], Float32[0], [0, 1])), NON_FINITE, "logp_old[1]")
    @test is_error(thrown(() -> mismatch_metrics(Float32[0, 0], Float32[0, 0], [0, 3])), INVALID_ARGUMENT, "last offset")
    @test is_error(thrown(() -> mismatch_metrics(Float32[0, 0], Float32[0], [0, 2])), INVALID_ARGUMENT, "logp_gen 1")
end

@testset "numerics" begin
    Context() do ctx
        codes = convert_dtype(Float32[1, 500, -0.5], :e4m3)
        @test codes == UInt8[0x38, 0x7e, 0xb0]  # 500 saturates to 448
        @test convert_dtype(codes, :f32; from = :e4m3) == Float32[1, 448, -0.5]
        @test isnan(convert_dtype(convert_dtype(Float32[500], :e4m3; saturate = false), :f32; from = :e4m3)[1])
        halves = convert_dtype([1.0 2.0; 3.0 4.0], :bf16)  # any real array, shape kept
        @test size(halves) == (2, 2) && halves[1, 1] == 0x3f80 && halves[1, 2] == 0x4000
        @test convert_dtype(halves, :f32) == Float32[1 2; 3 4]
        @test is_error(thrown(() -> convert_dtype(UInt8[1], :f32)), INVALID_ARGUMENT, "from")

        # block quantization keeps each value within E4M3's relative precision, in the matrix's own orientation
        a = Float32[sin(i + 3j) * i for i in 1:4, j in 1:256]  # 4 × 256
        q = quantize(ctx, a; layout = :tile_1x128)
        @test q.rows == 4 && q.cols == 256 && length(q.codes) == 4 * 256 && length(q.scales) == 4 * 2
        @test quantized_sizes(q.options, 4, 256) == (codes = 1024, scales = 8)
        back = dequantize(ctx, q)
        @test size(back) == (4, 256) && all(abs.(back .- a) .<= abs.(a) ./ 16 .+ 1e-3)
        @test is_error(thrown(() -> quantize(ctx, Float32[1 NaN])), NON_FINITE, "fp8rl_quantize: ")
        @test length(quantize(ctx, Float32[1 NaN]; allow_non_finite = true).codes) == 2  # NaN encodes as NaN

        # GEMMs: C = A Wᵀ
        x = Float32[1 2; 3 4; 5 6]  # M = 3, K = 2
        w = Float32[1 0; 0 1; 1 1; 2 -1]  # N = 4, K = 2
        expected = [sum(x[i, k] * w[j, k] for k in 1:2) for i in 1:3, j in 1:4]
        @test gemm_bf16(ctx, convert_dtype(x, :bf16), convert_dtype(w, :bf16)) == expected
        @test convert_dtype(gemm_bf16(ctx, convert_dtype(x, :bf16), convert_dtype(w, :bf16); out = :bf16), :f32) == expected
        err = thrown(() -> gemm_bf16(ctx, convert_dtype(x, :bf16), convert_dtype(permutedims(x), :bf16)))
        @test is_error(err, INVALID_ARGUMENT, "K dimension")

        activations = Float32[cos(i * k / 7) for i in 1:2, k in 1:128]  # M = 2, K = 128
        weights = Float32[sin(j + k / 5) / 4 for j in 1:3, k in 1:128]  # N = 3, K = 128
        qa = quantize(ctx, activations; layout = :tile_1x128)
        qw = quantize(ctx, weights; layout = :block_128x128)
        product = gemm_fp8(ctx, qa, qw)
        da, dw = dequantize(ctx, qa), dequantize(ctx, qw)
        reference = [sum(Float64(da[i, k]) * dw[j, k] for k in 1:128) for i in 1:2, j in 1:3]
        @test size(product) == (2, 3) && maximum(abs.(product .- reference)) <= 1e-4 * maximum(abs.(reference))
        # batch-invariant: a row alone gives the same bits
        @test bits(gemm_fp8(ctx, quantize(ctx, activations[2:2, :]; layout = :tile_1x128), qw)) == bits(product[2:2, :])
        e5m2 = quantize(ctx, activations; format = :e5m2)
        @test is_error(thrown(() -> gemm_fp8(ctx, e5m2, qw)), INVALID_ARGUMENT, "e4m3")
    end
end

@testset "library log messages reach Julia's logging" begin
    # A context that logs everything, through the C callback, while a policy generates and
    # trains: whatever the library says comes out as log records of module FP8RL.
    logger = Test.TestLogger(min_level = Base.CoreLogging.Debug)
    ctx = Context(log_level = :debug)
    Base.CoreLogging.with_logger(logger) do
        Policy(tiny_config(); context = ctx) do policy
            Trainer(policy) do trainer
                generate(policy, [[1, 2]], SAMPLING) do rollout
                    train_step!(trainer, rollout; rewards = [1.0])
                end
            end
        end
    end
    close(ctx)
    records = filter(record -> record._module === FP8RL, logger.logs)
    @test all(record -> record.message isa String, records)
    isempty(records) && @info "the library logged nothing at debug level in this run"
end

@testset "the RL loop of examples/rl_loop.c" begin
    # rl_loop.c: a tiny Llama with FP8 linear layers, KV cache and attention learns by GRPO to answer with 7
    PROMPTS, GROUP, PROMPT_LEN, NEW, STEPS, TARGET = 4, 4, 4, 6, 20, 7
    SEQS = PROMPTS * GROUP
    produced = Vector{Vector{Int32}}()
    mean_rewards = Float64[]
    Policy(tiny_config(); seed = 1, recipe = Recipe(:fp8_full), backend = :cpu) do policy
        loss = LossConfig(group_size = GROUP, importance = ImportanceOptions(mode = :truncated))
        Trainer(policy; loss = loss, optimizer = OptimizerConfig(learning_rate = 1e-2)) do trainer
            sampling = SamplingParams(max_new_tokens = NEW, stop_at_eos = false)
            for step in 0:STEPS - 1
                # prompts[i * PROMPT_LEN + j] = 8 + (step * 5 + (i / GROUP) * 3 + j) % 24, i and j from 0
                prompts = [[8 + (step * 5 + div(i, GROUP) * 3 + j) % 24 for j in 0:PROMPT_LEN - 1] for i in 0:SEQS - 1]
                seeds = next_seeds(trainer, SEQS)
                metrics = generate(policy, prompts, sampling; seeds = seeds) do rollout
                    rewards = Float32[]
                    for completion in rollout
                        hits = count(==(TARGET), completion.tokens)
                        len = length(completion.tokens)
                        # as C computes it: a float32 quotient, 0 for an empty completion
                        push!(rewards, len > 0 ? Float32(hits) / Float32(len) : 0.0f0)
                        push!(produced, completion.tokens)
                    end
                    reward_sum = 0.0  # float32 rewards summed in a double, in order, as in C
                    for reward in rewards
                        reward_sum += Float64(reward)
                    end
                    push!(mean_rewards, reward_sum / SEQS)
                    train_step!(trainer, rollout; rewards = rewards)
                end
                @test metrics.step == step + 1 && metrics.sequences == SEQS && metrics.completion_tokens == SEQS * NEW
                @test isapprox(metrics.reward_mean, mean_rewards[end]; atol = 1e-6)
                # one FP8 recipe generates and trains: the recomputed log-probs equal the generator's
                @test metrics.has_mismatch === true && metrics.token_mult_prob_error == 1.0 && metrics.gen_kl_error == 0
                @test metrics.skipped === false
            end
        end
    end
    @test length(produced) == STEPS * SEQS
    @test mean_rewards[end] > mean_rewards[1] + 0.3  # the C example's own criterion
    expected = c_example_completions()
    if expected === nothing
        @info "neither FP8RL_RL_LOOP_COMPLETIONS nor FP8RL_RL_LOOP_EXAMPLE is set: completions not compared with C's"
    else
        @test length(expected) == STEPS * SEQS
        differing = findfirst(i -> produced[i] != expected[i], 1:min(length(produced), length(expected)))
        @test differing === nothing  # every completion equals the C example's, token for token
    end
end

end # @testset "FP8RL"
