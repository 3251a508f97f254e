// The main of the MPI doctest suites, run by every rank of an MPI job: every
// rank runs every test case in the same order, so their collectives match.
// The launcher fails the job when any rank exits non-zero.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  doctest::Context context(argc, argv);
  const int failed = context.run();
  MPI_Finalize();
  return failed;
}
