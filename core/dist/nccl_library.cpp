#include "core/dist/nccl_library.h"

#include <dlfcn.h>

#include "kernels/error.h"

namespace fp8rl::dist {
namespace {

constexpr const char* kSoname = "libnccl.so.2";
// ncclCommInitRankConfig with config.blocking = 0 (polled initialization and
// collectives, the basis of the timeouts) and ncclCommFinalize arrived in 2.14.
constexpr int kMinimumVersion = NCCL_VERSION(2, 14, 0);

[[noreturn]] void unavailable(const std::string& why) { fail(Status::backend_unavailable, why); }

template <class Function>
void resolve(void* handle, const char* name, Function& out) {
  (void)dlerror();  // clear a stale message
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* why = dlerror();
    unavailable(std::string(kSoname) + " has no " + name + " (" + (why != nullptr ? why : "not found") +
                "); fp8rl needs NCCL " + nccl_version_text(kMinimumVersion) + " or newer");
  }
  out = reinterpret_cast<Function>(symbol);
}

NcclLibrary load() {
  // RTLD_LOCAL: NCCL's symbols stay out of the global namespace, so they
  // cannot interpose on another copy a host links.
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    unavailable(std::string("cannot load ") + kSoname + ": " + (why != nullptr ? why : "unknown error"));
  }
  NcclLibrary nccl;
  decltype(&ncclGetVersion) get_version = nullptr;
  resolve(handle, "ncclGetVersion", get_version);
  if (get_version(&nccl.version) != ncclSuccess || nccl.version < kMinimumVersion)
    unavailable(std::string(kSoname) + " is NCCL " + nccl_version_text(nccl.version) + "; fp8rl needs " +
                nccl_version_text(kMinimumVersion) + " or newer (non-blocking communicators)");
  resolve(handle, "ncclGetErrorString", nccl.get_error_string);
  resolve(handle, "ncclGetLastError", nccl.get_last_error);
  resolve(handle, "ncclGetUniqueId", nccl.get_unique_id);
  resolve(handle, "ncclCommInitRankConfig", nccl.comm_init_rank_config);
  resolve(handle, "ncclCommGetAsyncError", nccl.comm_get_async_error);
  resolve(handle, "ncclCommFinalize", nccl.comm_finalize);
  resolve(handle, "ncclCommDestroy", nccl.comm_destroy);
  resolve(handle, "ncclCommAbort", nccl.comm_abort);
  resolve(handle, "ncclGroupStart", nccl.group_start);
  resolve(handle, "ncclGroupEnd", nccl.group_end);
  resolve(handle, "ncclAllReduce", nccl.all_reduce);
  resolve(handle, "ncclReduce", nccl.reduce);
  resolve(handle, "ncclBroadcast", nccl.broadcast);
  return nccl;
}

}  // namespace

const NcclLibrary& nccl_library() {
  // A static whose initializer throws is initialized again by the next call.
  static const NcclLibrary library = load();
  return library;
}

std::string nccl_version_text(int code) {
  // NCCL_VERSION: X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z since 2.9.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace fp8rl::dist
