#include "core/dist/nccl_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "core/dist/nccl_library.h"
#include "kernels/cuda/cuda_backend_impl.h"
#include "kernels/cuda/cuda_check.h"

namespace fp8rl::dist {
namespace {

using Clock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == std::tuple_size<NcclId>::value, "NcclId holds an ncclUniqueId");

ncclDataType_t nccl_type(ElementType type) {
  switch (type) {
    case ElementType::f32: return ncclFloat32;
    case ElementType::f64: return ncclFloat64;
    case ElementType::i64: return ncclInt64;
    case ElementType::u8: return ncclUint8;
  }
  fail(Status::internal, "unknown collective element type");
}

// Calls poll() until it returns true; false when the deadline passes first.
// A collective on small buffers completes in microseconds, so the first
// millisecond only yields; after that each round sleeps 100 us, so a long
// transfer or a hung peer does not keep a core busy.
template <class Poll>
bool poll_until(Clock::time_point deadline, Poll&& poll) {
  const Clock::time_point start = Clock::now();
  while (!poll()) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return false;
    if (now - start < std::chrono::milliseconds(1))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const NcclSetup& setup);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  BufferSpace space() const override { return BufferSpace::device; }
  std::string description() const override {
    return "NCCL " + nccl_version_text(nccl_.version) + ", rank " + std::to_string(rank_) + " of " +
           std::to_string(size_) + " on CUDA device " + std::to_string(device_);
  }
  // The context's CUDA backend: collectives go on its stream. A later context
  // rebinds the communicator to its own backend.
  void bind_backend(Backend& backend) override;

  void all_reduce_sum(void* data, int64_t count, ElementType type) override;
  void reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, ElementType type) override;
  void all_gather(void* data, const std::vector<int64_t>& counts, ElementType type) override;
  void broadcast(void* data, int64_t count, ElementType type, int root) override;
  void barrier() override;

 private:
  // Enqueues NCCL calls on the bound stream (enqueue returns the first
  // failing ncclResult_t, or ncclSuccess / ncclInProgress), then waits until
  // the stream has run them.
  template <class Enqueue>
  void run(const char* collective, Enqueue&& enqueue);
  // The same for calls that must progress together (one per root), in one group.
  template <class Calls>
  void run_grouped(const char* collective, Calls&& calls);
  // Waits until a non-blocking NCCL call has finished its host part.
  void settle(const char* collective, Clock::time_point deadline);
  void wait_for_stream(const char* collective, Clock::time_point deadline);
  ncclResult_t state() const;
  Clock::time_point deadline() const;
  // Aborts the communicator, remembers why and throws.
  [[noreturn]] void break_with(const char* collective, const std::string& why, Status status = Status::distributed);
  std::string nccl_reason(ncclResult_t result) const;
  std::string timed_out(const char* waiting_for) const;
  void* at(void* data, int64_t offset, ElementType type) const {
    return static_cast<uint8_t*>(data) + static_cast<size_t>(offset) * element_size(type);
  }

  const NcclLibrary& nccl_;
  int rank_, size_, device_;
  double timeout_seconds_;
  ncclComm_t comm_ = nullptr;       // null once aborted
  cudaStream_t stream_ = nullptr;   // the bound backend's
  void* barrier_value_ = nullptr;   // one device byte the barrier sums (the sum is never read)
  std::string broken_;              // why the communicator is unusable; empty while usable
};

NcclCommunicator::NcclCommunicator(const NcclSetup& setup)
    : nccl_(nccl_library()),
      rank_(setup.rank),
      size_(setup.world_size),
      device_(setup.cuda_device),
      // Longer waits are as good as forever and would overflow the clock.
      timeout_seconds_(std::min(setup.timeout_seconds, 1e7)) {
  const int devices = cuda_device_count();
  if (device_ >= devices)
    fail(Status::backend_unavailable, "NCCL communicator: CUDA device " + std::to_string(device_) +
                                          " does not exist (" + std::to_string(devices) + " CUDA devices visible)");
  // NCCL attaches the communicator to the current device.
  cuda::check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  cuda::check_cuda(cudaMalloc(&barrier_value_, 1), "cudaMalloc (NCCL barrier)");
  ncclUniqueId id;
  std::memcpy(id.internal, setup.id.data(), sizeof id.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const Clock::time_point until = deadline();
  const ncclResult_t result = nccl_.comm_init_rank_config(&comm_, size_, id, rank_, &config);
  try {
    if (result != ncclSuccess && result != ncclInProgress) break_with("init", nccl_reason(result));
    settle("init", until);
  } catch (...) {
    (void)cudaFree(barrier_value_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  (void)cudaSetDevice(device_);
  if (comm_ != nullptr) {
    // ncclCommDestroy may wait for peers indefinitely; ncclCommFinalize,
    // non-blocking here, flushes outstanding work and can be polled, so a
    // peer that is gone costs one timeout and an abort, not a hang.
    ncclResult_t now = nccl_.comm_finalize(comm_);
    if (now == ncclSuccess || now == ncclInProgress)
      (void)poll_until(deadline(), [&] { return (now = state()) != ncclInProgress; });
    if (now == ncclSuccess)
      (void)nccl_.comm_destroy(comm_);
    else
      (void)nccl_.comm_abort(comm_);
  }
  (void)cudaFree(barrier_value_);
}

void NcclCommunicator::bind_backend(Backend& backend) {
  auto* cuda_backend = dynamic_cast<cuda::CudaBackend*>(&backend);
  if (cuda_backend == nullptr)
    fail(Status::unsupported, description() + " needs the CUDA backend; the context runs on " + backend.description());
  if (cuda_backend->device() != device_)
    fail(Status::invalid_argument, description() + " cannot serve a context on CUDA device " +
                                       std::to_string(cuda_backend->device()) +
                                       ": create the context on the communicator's device");
  stream_ = cuda_backend->stream();
}

Clock::time_point NcclCommunicator::deadline() const {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds_));
}

ncclResult_t NcclCommunicator::state() const {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t result = nccl_.comm_get_async_error(comm_, &async);
  return result != ncclSuccess ? result : async;
}

std::string NcclCommunicator::nccl_reason(ncclResult_t result) const {
  std::string reason = nccl_.get_error_string(result);
  const char* detail = nccl_.get_last_error(comm_);
  if (detail != nullptr && *detail != '\0') reason += " (" + std::string(detail) + ")";
  return reason;
}

std::string NcclCommunicator::timed_out(const char* waiting_for) const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds_);
  return std::string("timed out after ") + seconds + " s waiting for " + waiting_for;
}

void NcclCommunicator::break_with(const char* collective, const std::string& why, Status status) {
  broken_ = "NCCL " + std::string(collective) + " failed on rank " + std::to_string(rank_) + " of " +
            std::to_string(size_) + " (CUDA device " + std::to_string(device_) + "): " + why +
            "; the communicator is aborted: create a new one on every rank";
  if (comm_ != nullptr) {
    (void)nccl_.comm_abort(comm_);
    comm_ = nullptr;
  }
  fail(status, broken_);
}

void NcclCommunicator::settle(const char* collective, Clock::time_point until) {
  ncclResult_t now = ncclInProgress;
  if (!poll_until(until, [&] { return (now = state()) != ncclInProgress; }))
    break_with(collective, timed_out("the other ranks (one is gone, has not joined, or called another collective)"));
  if (now != ncclSuccess) break_with(collective, nccl_reason(now));
}

void NcclCommunicator::wait_for_stream(const char* collective, Clock::time_point until) {
  const bool done = poll_until(until, [&] {
    const cudaError_t query = cudaStreamQuery(stream_);
    if (query == cudaSuccess) return true;
    if (query != cudaErrorNotReady) {
      (void)cudaGetLastError();
      break_with(collective, std::string("the stream failed: ") + cudaGetErrorName(query) + " (" +
                                 cudaGetErrorString(query) + ")",
                 Status::cuda_error);
    }
    const ncclResult_t now = state();
    if (now != ncclSuccess && now != ncclInProgress) break_with(collective, nccl_reason(now));
    return false;
  });
  if (!done)
    break_with(collective, timed_out("the transfer (a rank is gone, or the ranks called different collectives)"));
}

template <class Enqueue>
void NcclCommunicator::run(const char* collective, Enqueue&& enqueue) {
  if (!broken_.empty()) fail(Status::distributed, broken_);
  require(stream_ != nullptr, description() + ": " + collective + " before a context bound the communicator");
  cuda::check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  const Clock::time_point until = deadline();
  const ncclResult_t issued = enqueue();
  if (issued != ncclSuccess && issued != ncclInProgress) break_with(collective, nccl_reason(issued));
  settle(collective, until);
  wait_for_stream(collective, until);
}

template <class Calls>
void NcclCommunicator::run_grouped(const char* collective, Calls&& calls) {
  run(collective, [&] {
    const ncclResult_t started = nccl_.group_start();
    if (started != ncclSuccess) return started;
    const ncclResult_t issued = calls();
    // Closed even after a failed call: an open group would capture this
    // thread's next NCCL calls, on any communicator.
    const ncclResult_t ended = nccl_.group_end();
    return issued != ncclSuccess && issued != ncclInProgress ? issued : ended;
  });
}

void NcclCommunicator::all_reduce_sum(void* data, int64_t count, ElementType type) {
  run("all_reduce_sum", [&] {
    return nccl_.all_reduce(data, data, static_cast<size_t>(count), nccl_type(type), ncclSum, comm_, stream_);
  });
}

// ncclReduceScatter needs equal parts, and the arena's shards are not (they
// end on tensor block boundaries). Padding every part to the largest would
// need a staging copy of the whole buffer (the size of all gradients); one
// ncclReduce per part, in place and grouped so they progress together, needs
// no memory at the cost of up to N / (N - 1) times a ring reduce-scatter's
// traffic per rank (2x at two ranks, 1.14x at eight).
void NcclCommunicator::reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, ElementType type) {
  const std::vector<int64_t> offsets = part_offsets(counts);
  run_grouped("reduce_scatter_sum", [&] {
    for (int root = 0; root < size_; ++root) {
      const size_t r = static_cast<size_t>(root);
      if (counts[r] == 0) continue;  // every rank skips it: the counts agree
      void* part = at(data, offsets[r], type);
      const ncclResult_t result = nccl_.reduce(part, part, static_cast<size_t>(counts[r]), nccl_type(type), ncclSum,
                                               root, comm_, stream_);
      if (result != ncclSuccess && result != ncclInProgress) return result;
    }
    return ncclSuccess;
  });
}

// One in-place broadcast per part from its owner, grouped (NCCL's AllGather
// needs equal parts too).
void NcclCommunicator::all_gather(void* data, const std::vector<int64_t>& counts, ElementType type) {
  const std::vector<int64_t> offsets = part_offsets(counts);
  run_grouped("all_gather", [&] {
    for (int root = 0; root < size_; ++root) {
      const size_t r = static_cast<size_t>(root);
      if (counts[r] == 0) continue;
      void* part = at(data, offsets[r], type);
      const ncclResult_t result =
          nccl_.broadcast(part, part, static_cast<size_t>(counts[r]), nccl_type(type), root, comm_, stream_);
      if (result != ncclSuccess && result != ncclInProgress) return result;
    }
    return ncclSuccess;
  });
}

void NcclCommunicator::broadcast(void* data, int64_t count, ElementType type, int root) {
  run("broadcast", [&] {
    return nccl_.broadcast(data, data, static_cast<size_t>(count), nccl_type(type), root, comm_, stream_);
  });
}

// A one-value all-reduce: it completes on no rank before every rank joined.
void NcclCommunicator::barrier() {
  run("barrier", [&] { return nccl_.all_reduce(barrier_value_, barrier_value_, 1, ncclUint8, ncclSum, comm_, stream_); });
}

}  // namespace

NcclId nccl_unique_id() {
  const NcclLibrary& nccl = nccl_library();
  ncclUniqueId id;
  const ncclResult_t result = nccl.get_unique_id(&id);
  if (result != ncclSuccess)
    fail(Status::distributed, std::string("ncclGetUniqueId failed: ") + nccl.get_error_string(result) + " (" +
                                  nccl.get_last_error(nullptr) + ")");
  NcclId bytes;
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

std::shared_ptr<Communicator> make_nccl_communicator(const NcclSetup& setup) {
  return std::make_shared<NcclCommunicator>(setup);
}

}  // namespace fp8rl::dist
