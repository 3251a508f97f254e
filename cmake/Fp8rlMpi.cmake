# MPI: libfp8rl_mpi (capi/mpi) and the tests that run real mpirun jobs
# (tests/mpi). FP8RL_MPI defaults to ON where MPI's C bindings are found; OFF
# builds nothing MPI-related (libfp8rl itself never links MPI either way).
if(NOT DEFINED FP8RL_MPI OR FP8RL_MPI)
  find_package(MPI COMPONENTS C QUIET)
endif()
option(FP8RL_MPI "Build libfp8rl_mpi (the MPI communicator) and the MPI tests" ${MPI_C_FOUND})
if(FP8RL_MPI AND NOT MPI_C_FOUND)
  message(FATAL_ERROR "FP8RL_MPI is ON but no MPI C library was found (install Open MPI or MPICH, or -DFP8RL_MPI=OFF)")
endif()
if(NOT FP8RL_MPI)
  message(STATUS "fp8rl: FP8RL_MPI is OFF: libfp8rl_mpi and the MPI tests are not built")
  return()
endif()
message(STATUS "fp8rl: libfp8rl_mpi against MPI ${MPI_C_VERSION} (${MPI_C_LIB_NAMES}), launcher ${MPIEXEC_EXECUTABLE}")

# MPI's C API for C++ sources: Open MPI's and MPICH's mpi.h would otherwise
# pull in the deprecated C++ bindings, which need libraries we do not link.
add_library(fp8rl_mpi_c INTERFACE)
target_link_libraries(fp8rl_mpi_c INTERFACE MPI::MPI_C)
target_compile_definitions(fp8rl_mpi_c INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)

# Open MPI's launcher refuses to start more ranks than cores, and to run as
# root, unless told; MPICH's (hydra) knows neither flag and needs neither.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _fp8rl_mpiexec_version ERROR_QUIET)
set(FP8RL_MPIEXEC_FLAGS "")
if(_fp8rl_mpiexec_version MATCHES "Open MPI|OpenRTE")
  list(APPEND FP8RL_MPIEXEC_FLAGS --oversubscribe)
  execute_process(COMMAND id -u OUTPUT_VARIABLE _fp8rl_uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_fp8rl_uid STREQUAL "0")
    list(APPEND FP8RL_MPIEXEC_FLAGS --allow-run-as-root)
  endif()
endif()

# What every MPI test runs with: under the sanitizers, Open MPI's own leaks
# are suppressed (tests/mpi/lsan_openmpi.supp says how).
set(FP8RL_MPI_TEST_ENVIRONMENT "")
if(FP8RL_SANITIZE)
  set(FP8RL_MPI_TEST_ENVIRONMENT
      "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/mpi/lsan_openmpi.supp:fast_unwind_on_malloc=0"
      "OMPI_MCA_mca_base_component_disable_dlclose=1")
endif()

# fp8rl_mpi_command(<out-var> RANKS n COMMAND ...): the command line that runs
# COMMAND as an MPI job of n ranks on this machine.
function(fp8rl_mpi_command out)
  cmake_parse_arguments(ARG "" "RANKS" "COMMAND" ${ARGN})
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_RANKS} ${FP8RL_MPIEXEC_FLAGS} ${MPIEXEC_PREFLAGS}
      ${ARG_COMMAND} ${MPIEXEC_POSTFLAGS} PARENT_SCOPE)
endfunction()

# fp8rl_add_mpi_test(NAME name RANKS n COMMAND ... [TIMEOUT seconds] [ENVIRONMENT ...]):
# a ctest running COMMAND as an MPI job of n ranks, labelled cpu;mpi. A job
# whose rank fails is ended by the launcher; TIMEOUT (default 300) bounds one
# that hangs. Exit code 77 is a skip.
function(fp8rl_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;RANKS;TIMEOUT" "COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  fp8rl_mpi_command(_command RANKS ${ARG_RANKS} COMMAND ${ARG_COMMAND})
  add_test(NAME ${ARG_NAME} COMMAND ${_command})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "cpu;mpi" TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77
                       PROCESSORS ${ARG_RANKS})
  if(ARG_ENVIRONMENT)
    set_tests_properties(${ARG_NAME} PROPERTIES ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
endfunction()
