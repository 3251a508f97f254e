/* One rank of a data-parallel job dies before a collective: the last rank
 * exits with status 3 right after the communicator is made, while the others
 * enter fp8rl_trainer_create, which broadcasts rank 0's weights.
 * run_fault_test.sh checks that the launcher then ends the whole job, with a
 * failure, instead of leaving the survivors waiting in the collective. */
#include <fp8rl/fp8rl_mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void require(fp8rl_status status, const char* what) {
  if (status == FP8RL_OK) return;
  fprintf(stderr, "%s: %s\n", what, fp8rl_last_error_message());
  exit(1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  fp8rl_communicator* communicator = NULL;
  require(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &communicator), "communicator");
  if (rank == size - 1) {
    fprintf(stderr, "rank %d: exiting with status 3 before the trainer's first collective\n", rank);
    exit(3);
  }
  fp8rl_context_options options;
  require(fp8rl_context_options_init(&options), "options");
  options.backend = FP8RL_BACKEND_CPU;
  options.num_threads = 1;
  options.communicator = communicator;
  fp8rl_context* context = NULL;
  require(fp8rl_context_create(&options, &context), "context");
  fp8rl_model_config config;
  require(fp8rl_model_config_init(&config), "config");
  config.vocab_size = 32;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 32;
  fp8rl_policy* policy = NULL;
  require(fp8rl_policy_create_random(context, &config, 1, &policy), "policy");
  fp8rl_trainer_options trainer_options;
  require(fp8rl_trainer_options_init(&trainer_options), "trainer options");
  fp8rl_trainer* trainer = NULL;
  /* Waits for the dead rank: only the launcher can end this. */
  const fp8rl_status status = fp8rl_trainer_create(policy, &trainer_options, &trainer);
  fprintf(stderr, "rank %d: fp8rl_trainer_create returned %s: %s\n", rank, fp8rl_status_name(status),
          fp8rl_last_error_message());
  MPI_Finalize();
  return 0;
}
