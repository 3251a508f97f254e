/* fp8rl_mpi_communicator_create before MPI_Init and after MPI_Finalize:
 * refused with INVALID_ARGUMENT naming the cause, not an abort. Run without a
 * launcher (MPI_Init then makes a singleton); written in C99, so that it also
 * compiles fp8rl_mpi.h as C. */
#include <fp8rl/fp8rl_mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int expect_refused(const char* when, const char* cause) {
  fp8rl_communicator* communicator = NULL;
  const fp8rl_status status = fp8rl_mpi_communicator_create(0, &communicator);
  const char* message = fp8rl_last_error_message();
  if (status != FP8RL_ERROR_INVALID_ARGUMENT || communicator != NULL || strstr(message, cause) == NULL ||
      strstr(message, "fortran_comm") == NULL) {
    fprintf(stderr, "FAIL %s: %s: %s\n", when, fp8rl_status_name(status), message);
    return 1;
  }
  printf("%s: %s\n", when, message);
  return 0;
}

int main(int argc, char** argv) {
  int failures = expect_refused("before MPI_Init", "MPI is not initialized");
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  failures += expect_refused("after MPI_Finalize", "MPI is already finalized");
  return failures;
}
