/* MPI for the Rust binding's MPI test (bindings/rust/fp8rl/tests/mpi_ranks.rs),
 * which loads this library at run time: the offline build has no Rust MPI
 * crate, and MPI_COMM_WORLD and MPI_Comm_c2f are macros in some MPIs, so the
 * test cannot declare them itself. */
#include <mpi.h>
#include <stdint.h>

/* MPI_Init; this rank, the world size and MPI_COMM_WORLD's Fortran handle. */
int64_t fp8rl_test_mpi_init(int32_t* rank, int32_t* size) {
  MPI_Init(NULL, NULL);
  int r = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  *rank = r;
  *size = n;
  return (int64_t)MPI_Comm_c2f(MPI_COMM_WORLD);
}

/* all[r] = rank r's value, for every rank r. */
void fp8rl_test_mpi_allgather_u64(uint64_t value, uint64_t* all) {
  MPI_Allgather(&value, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
}

void fp8rl_test_mpi_finalize(void) { MPI_Finalize(); }
