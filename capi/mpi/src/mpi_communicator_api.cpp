// fp8rl_mpi_communicator_create: the host's communicator, from its Fortran
// handle, checked and handed to libfp8rl as host callbacks.
#include <limits>
#include <new>
#include <string>
#include <type_traits>

#include "fp8rl/fp8rl_mpi.h"
#include "mpi_collectives.h"
#include "mpi_error.h"

namespace fp8rl::mpi {
namespace {

// MPI raises errors about invalid handles on MPI_COMM_WORLD, whose default
// handler ends the job: while this lives they are returned instead, and the
// host's handler is restored after.
class WorldErrorsReturned {
 public:
  WorldErrorsReturned() {
    saved_ = MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler_) == MPI_SUCCESS;
    if (saved_) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~WorldErrorsReturned() {
    if (!saved_) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler_);
    MPI_Errhandler_free(&handler_);  // the reference MPI_Comm_get_errhandler gave
  }
  WorldErrorsReturned(const WorldErrorsReturned&) = delete;
  WorldErrorsReturned& operator=(const WorldErrorsReturned&) = delete;

 private:
  MPI_Errhandler handler_ = MPI_ERRHANDLER_NULL;
  bool saved_ = false;
};

Refusal invalid(const std::string& message) { return Refusal(FP8RL_ERROR_INVALID_ARGUMENT, message); }

// The intracommunicator fortran_comm names, or a Refusal saying why there is none.
MPI_Comm checked_communicator(int64_t fortran_comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized == 0)
    throw invalid("MPI is not initialized, so fortran_comm names no communicator: call MPI_Init or "
                  "MPI_Init_thread first (mpi4py does at import)");
  if (finalized != 0) throw invalid("MPI is already finalized, so fortran_comm names no communicator");

  const std::string named = "fortran_comm (" + std::to_string(fortran_comm) + ")";
  using Fint = std::numeric_limits<MPI_Fint>;
  if (fortran_comm < Fint::min() || fortran_comm > Fint::max())
    throw invalid(named + " is outside MPI_Fint's range [" + std::to_string(Fint::min()) + ", " +
                  std::to_string(Fint::max()) + "]: not a handle from MPI_Comm_c2f");
  const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm));
  if (comm == MPI_COMM_NULL) throw invalid(named + " is MPI_COMM_NULL");
  // Open MPI's handles are pointers, and MPI_Comm_f2c gives NULL for an index that names nothing
  // (a freed communicator's included). MPICH's are ints that MPI_Comm_f2c passes through: MPI
  // itself must tell, below.
  if constexpr (std::is_pointer_v<MPI_Comm>) {
    if (comm == nullptr) throw invalid(named + " is not a valid MPI communicator handle");
  }
  int inter = 0;
  int code = MPI_SUCCESS;
  {
    const WorldErrorsReturned returned;
    code = MPI_Comm_test_inter(comm, &inter);
  }
  if (code != MPI_SUCCESS)
    throw invalid(named + " is not a valid MPI communicator handle: MPI_Comm_test_inter failed: " +
                  error_text(code));
  if (inter != 0)
    throw invalid(named + " is an intercommunicator; expected an intracommunicator (e.g. MPI_COMM_WORLD or one "
                          "from MPI_Comm_split)");
  return comm;
}

fp8rl_status report(fp8rl_status status, const char* message) {
  try {
    return fp8rl_report_error(status, (std::string("fp8rl_mpi_communicator_create: ") + message).c_str());
  } catch (...) {
    return fp8rl_report_error(status, message);
  }
}

}  // namespace
}  // namespace fp8rl::mpi

extern "C" FP8RL_MPI_API fp8rl_status fp8rl_mpi_communicator_create(int64_t fortran_comm,
                                                                    fp8rl_communicator** out_communicator) {
  using namespace fp8rl::mpi;
  try {
    if (out_communicator == nullptr) throw invalid("out_communicator is NULL");
    fp8rl_collective_callbacks callbacks = make_mpi_callbacks(checked_communicator(fortran_comm), max_mpi_count);
    const fp8rl_status status = fp8rl_communicator_create_from_callbacks(&callbacks, out_communicator);
    // libfp8rl refused the callbacks (and said why): the duplicate is still ours to free.
    if (status != FP8RL_OK) callbacks.destroy(callbacks.user_data);
    return status;
  } catch (const Refusal& refusal) {
    return report(refusal.status(), refusal.what());
  } catch (const std::bad_alloc&) {
    return report(FP8RL_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (...) {
    return report(FP8RL_ERROR_INTERNAL, "internal error: unknown exception");
  }
}
