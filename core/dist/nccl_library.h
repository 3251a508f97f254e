// libnccl.so.2, opened at run time (dlopen) rather than linked: libfp8rl.so
// then loads, and runs on the CPU or a single GPU, on machines without NCCL,
// and a host that already loaded NCCL (PyTorch does) shares that copy, since
// dlopen finds a loaded library by its soname. nccl.h supplies the types and
// signatures only; nothing links against it. CUDA builds only.
#pragma once

#include <nccl.h>

#include <string>

namespace fp8rl::dist {

// The NCCL functions the communicator calls, resolved from one library.
struct NcclLibrary {
  int version = 0;  // ncclGetVersion: 22809 is 2.28.9
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetLastError) get_last_error = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclCommFinalize) comm_finalize = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
};

// Opens libnccl.so.2 on first use and keeps it for the life of the process
// (never closed: NCCL's own threads may outlive any one communicator).
// Thread-safe. Throws Error(backend_unavailable) "cannot load libnccl.so.2:
// <dlerror>", or naming a missing function or a version older than 2.14 (the
// first with non-blocking communicators); a failed load is tried again on the
// next call, so a host may load NCCL itself and retry.
const NcclLibrary& nccl_library();

// "2.28.9" from a version code.
std::string nccl_version_text(int code);

}  // namespace fp8rl::dist
