# Data-parallel GRPO over MPI: every rank trains the same policy on its own
# prompts, and all end every step with bitwise the same weights.
#
#     mpiexecjl -n 2 julia --project=bindings/julia/FP8RL bindings/julia/FP8RL/examples/mpi_grpo.jl
#
# Needs MPI.jl in the environment (the package extension that gives
# `mpi_communicator(::MPI.Comm)` loads with it) and libfp8rl_mpi, built with
# fp8rl where CMake finds MPI, beside libfp8rl (or named by FP8RL_MPI_LIBRARY).
# MPI.jl must use the MPI that libfp8rl_mpi was built against; for the
# system's: `using MPIPreferences; MPIPreferences.use_system_binary()`.
#
# The loop of examples/rl_loop.c, split over the ranks: rank r generates and
# trains on prompts r, r + N, ... of each step; the trainer sums the gradients
# over the ranks, so every rank takes the same step. The prompt seeds come
# from one stream over all ranks, and the metrics are global: rank 0 prints them.

using FP8RL
using MPI

MPI.Init()
const COMM = MPI.COMM_WORLD
const RANK, RANKS = MPI.Comm_rank(COMM), MPI.Comm_size(COMM)

const GROUP = 4        # completions per prompt (a GRPO group, never split between ranks)
const PROMPTS = 4      # distinct prompts per step, over all ranks
const STEPS = 20

function main()
    communicator = mpi_communicator(COMM)
    Context(; num_threads = 1, communicator = communicator) do context  # closed before MPI.Finalize
        close(communicator)  # the context keeps its own reference
        train(context)
    end
end

function train(context)
    config = ModelConfig(vocab_size = 32, hidden_size = 64, num_layers = 2, num_attention_heads = 4,
                         num_key_value_heads = 2, intermediate_size = 128, max_position_embeddings = 32)
    # Each rank starts from its own random weights: the trainer starts all from rank 0's.
    Policy(config; seed = 1 + RANK, recipe = Recipe(:fp8_full), context = context) do policy
        loss = LossConfig(group_size = GROUP, importance = ImportanceOptions(mode = :truncated))
        Trainer(policy; loss = loss, optimizer = OptimizerConfig(learning_rate = 1e-2)) do trainer
            sampling = SamplingParams(max_new_tokens = 6, stop_at_eos = false)
            mine = RANK:RANKS:(PROMPTS - 1)
            for step in 0:(STEPS - 1)
                prompts = [[8 + (step * 5 + p * 3 + j) % 24 for j in 0:3] for p in mine for _ in 1:GROUP]
                seeds = next_seeds(trainer, length(prompts))
                metrics = generate(policy, prompts, sampling; seeds = seeds) do rollout
                    rewards = [count(==(7), c.tokens) / length(c.tokens) for c in rollout]
                    train_step!(trainer, rollout; rewards = rewards)
                end
                fingerprints = MPI.Allgather(fingerprint(policy), COMM)
                all(==(fingerprints[1]), fingerprints) || error("rank $RANK: the ranks' weights differ")
                if RANK == 0
                    println("step $step: reward $(round(metrics.reward_mean; digits = 3)), ",
                            "token_mult_prob_error $(metrics.token_mult_prob_error), ",
                            "gathered $(metrics.bytes_gathered) B, fingerprint $(string(fingerprints[1]; base = 16))")
                end
            end
            gather_weights!(trainer)  # whole master weights again, before anything reads them
        end
    end
end

main()
MPI.Finalize()
