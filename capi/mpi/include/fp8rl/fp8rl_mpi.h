/**
 * @file fp8rl_mpi.h
 * @brief libfp8rl_mpi: an fp8rl communicator over an MPI communicator the host already has.
 *
 * A companion library, so that libfp8rl itself loads on machines without MPI:
 * libfp8rl_mpi is built against the host's MPI (MPI_Comm is a pointer in
 * Open MPI and an int in MPICH, so no one binary serves both) and links
 * libfp8rl and libmpi. The communicator crosses this header as its Fortran
 * handle (MPI_Fint, from MPI_Comm_c2f()), the one form of a communicator
 * every MPI implementation and binding can hand over: mpi4py's
 * `comm.py2f()`, rsmpi's `RSMPI_Comm_c2f(comm.as_raw())`, MPI.jl's
 * `MPI_Comm_c2f` through `ccall`. The header does not include mpi.h.
 *
 * @code
 * MPI_Init(&argc, &argv);
 * fp8rl_communicator* communicator = NULL;
 * if (fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &communicator) != FP8RL_OK) {
 *   fprintf(stderr, "fp8rl: %s\n", fp8rl_last_error_message());
 *   MPI_Abort(MPI_COMM_WORLD, 1);
 * }
 * fp8rl_context_options options;
 * fp8rl_context_options_init(&options);
 * options.communicator = communicator;
 * fp8rl_context* context = NULL;
 * fp8rl_context_create(&options, &context);
 * fp8rl_communicator_destroy(communicator);  // the context keeps its own reference
 * // ... policies and trainers on the context: every training call is collective ...
 * fp8rl_context_destroy(context);             // before MPI_Finalize
 * MPI_Finalize();
 * @endcode
 */
#ifndef FP8RL_FP8RL_MPI_H
#define FP8RL_FP8RL_MPI_H

#include <stdint.h>

#include "fp8rl/fp8rl.h"

/**
 * @def FP8RL_MPI_API
 * Marks a function of libfp8rl_mpi, as ::FP8RL_API does for libfp8rl: its
 * CMake target defines FP8RL_MPI_BUILDING_LIBRARY (export), its users do not
 * (import, on Windows); elsewhere default visibility out of a library built
 * with hidden visibility.
 */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(FP8RL_MPI_BUILDING_LIBRARY)
#define FP8RL_MPI_API __declspec(dllexport)
#else
#define FP8RL_MPI_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define FP8RL_MPI_API __attribute__((visibility("default")))
#else
#define FP8RL_MPI_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** @addtogroup distributed
 *  @{ */

/**
 * @brief Creates a communicator over a duplicate of an MPI communicator
 *        (host memory; libfp8rl_mpi).
 *
 * Collective over @p fortran_comm: every one of its processes calls it. The
 * library duplicates the communicator (MPI_Comm_dup), so that its
 * collectives never match the host's messages, sets MPI_ERRORS_RETURN on
 * the duplicate, and frees it when the last reference goes (the handle and
 * every context created with it destroyed); the caller may free its own
 * communicator at once. The rank and world size are those of
 * @p fortran_comm. The communicator's collectives are MPI_Allreduce (in
 * place), MPI_Reduce_scatter, MPI_Allgatherv (in place) and MPI_Bcast on the
 * duplicate, named "MPI" in messages; a failing one fails the training call
 * with ::FP8RL_ERROR_DISTRIBUTED, naming the collective, the MPI function
 * and MPI_Error_string()'s text.
 *
 * Counts: buffers of any size. A collective whose element count does not fit
 * MPI's int counts (2^31 - 1) is split into pieces that do: an all-reduce
 * or broadcast into consecutive pieces, a reduce-scatter or all-gather over
 * more than 2^31 - 1 elements in all into one MPI_Reduce or MPI_Bcast per
 * rank's part and piece (rank r's part rooted at rank r).
 *
 * A rank that dies: MPI itself defines no recovery. Launchers (mpirun,
 * srun) end the whole job when one process exits without MPI_Finalize, so
 * the other ranks are killed rather than left waiting in a collective.
 *
 * Destroy every context and communicator that uses the duplicate before
 * MPI_Finalize(). One whose last reference goes after MPI_Finalize() (e.g.
 * at a garbage-collected language's exit) leaves the duplicate to MPI's own
 * finalization.
 *
 * @param fortran_comm The Fortran handle of an MPI intracommunicator:
 *        MPI_Comm_c2f(comm) (an MPI_Fint, widened to 64 bits). The handle is
 *        checked: MPI_COMM_NULL, a handle of no communicator and an
 *        intercommunicator are refused.
 * @param[out] out_communicator Receives the new communicator; the caller
 *        releases it with fp8rl_communicator_destroy() (from libfp8rl).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p out_communicator is NULL, MPI is
 *         not initialized or already finalized (MPI_Init() first), or
 *         @p fortran_comm is out of MPI_Fint's range, MPI_COMM_NULL, not a
 *         valid communicator handle or an intercommunicator; the message names
 *         the argument and the cause. Nothing is created then.
 * @retval FP8RL_ERROR_DISTRIBUTED if MPI fails to duplicate the communicator.
 * Thread safety: MPI's. Call it from a thread that may make MPI calls (the
 * thread level MPI was initialized with), while no other thread makes MPI
 * calls: to report an invalid handle rather than abort, it sets
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD for the duration of the check and then
 * restores the handler the host had. The training calls of a context with
 * this communicator make MPI calls on the calling thread; one context at a
 * time may use the communicator (collectives on one communicator do not
 * interleave).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() (libfp8rl) then says why.
 */
FP8RL_MPI_API fp8rl_status fp8rl_mpi_communicator_create(int64_t fortran_comm, fp8rl_communicator** out_communicator);

/** @} */

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FP8RL_FP8RL_MPI_H
