// fp8rl_mpi_communicator_create in a real MPI job: the communicator has the
// rank and size of the one the handle names, and every handle that names no
// intracommunicator is refused with INVALID_ARGUMENT, naming fortran_comm,
// without ending the job (MPI_COMM_WORLD's handler aborts by default).
#include <doctest/doctest.h>
#include <fp8rl/fp8rl_mpi.h>

#include <string>

#include "mpi/mpi_test_support.h"

namespace {

using mpi_test::world_rank;
using mpi_test::world_size;

void check_refused(int64_t fortran_comm, const std::string& needle) {
  CAPTURE(fortran_comm);
  fp8rl_communicator* const untouched = reinterpret_cast<fp8rl_communicator*>(0x1);
  fp8rl_communicator* communicator = untouched;
  CHECK(fp8rl_mpi_communicator_create(fortran_comm, &communicator) == FP8RL_ERROR_INVALID_ARGUMENT);
  const std::string message = fp8rl_last_error_message();
  CAPTURE(message);
  CHECK(message.find("fp8rl_mpi_communicator_create: fortran_comm (" + std::to_string(fortran_comm) + ")") == 0);
  CHECK(message.find(needle) != std::string::npos);
  CHECK(communicator == untouched);
}

}  // namespace

TEST_CASE("a communicator from MPI_COMM_WORLD's and a split communicator's handles has their rank and size") {
  fp8rl_communicator* world = nullptr;
  REQUIRE(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &world) == FP8RL_OK);
  int32_t rank = -1, size = -1;
  CHECK(fp8rl_communicator_get_rank(world, &rank, &size) == FP8RL_OK);
  CHECK(rank == world_rank());
  CHECK(size == world_size());
  CHECK(fp8rl_communicator_destroy(world) == FP8RL_OK);

  // Ranks in reverse order: rank r of the world is rank size - 1 - r here.
  MPI_Comm reversed = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size() - world_rank(), &reversed) == MPI_SUCCESS);
  fp8rl_communicator* communicator = nullptr;
  REQUIRE(fp8rl_mpi_communicator_create(MPI_Comm_c2f(reversed), &communicator) == FP8RL_OK);
  MPI_Comm_free(&reversed);
  CHECK(fp8rl_communicator_get_rank(communicator, &rank, &size) == FP8RL_OK);
  CHECK(rank == world_size() - 1 - world_rank());
  CHECK(size == world_size());
  CHECK(fp8rl_communicator_destroy(communicator) == FP8RL_OK);
}

TEST_CASE("handles of no intracommunicator are refused, naming fortran_comm, and the job goes on") {
  check_refused(MPI_Comm_c2f(MPI_COMM_NULL), "is MPI_COMM_NULL");
  check_refused(int64_t{1} << 40, "outside MPI_Fint's range");
  check_refused(-(int64_t{1} << 40), "outside MPI_Fint's range");
  check_refused(123456, "is not a valid MPI communicator handle");

  MPI_Comm freed = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &freed) == MPI_SUCCESS);
  const int64_t freed_handle = MPI_Comm_c2f(freed);
  MPI_Comm_free(&freed);
  check_refused(freed_handle, "is not a valid MPI communicator handle");

  // Rank 0 against the others.
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  const bool first = world_rank() == 0;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, first ? 0 : 1, world_rank(), &local) == MPI_SUCCESS);
  REQUIRE(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, first ? 1 : 0, 7, &inter) == MPI_SUCCESS);
  check_refused(MPI_Comm_c2f(inter), "is an intercommunicator; expected an intracommunicator");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);

  // The check set MPI_ERRORS_RETURN on MPI_COMM_WORLD only while it ran.
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  REQUIRE(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler) == MPI_SUCCESS);
  CHECK(handler == MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&handler);
}

TEST_CASE("a NULL out_communicator is refused, naming it") {
  CHECK(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), nullptr) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(fp8rl_last_error_message()) == "fp8rl_mpi_communicator_create: out_communicator is NULL");
}
