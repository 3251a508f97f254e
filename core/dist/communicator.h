// The collectives data parallelism needs, behind one interface the core uses
// without knowing the transport: MPI over host memory (libfp8rl_mpi.so, through
// host callbacks), NCCL over device memory (core/dist/nccl_communicator.h), a
// host's own callbacks (torch.distributed, Ray), or the single process.
//
// Every collective is in place over one buffer that is laid out alike on
// every rank. The parts of a varying-count collective are consecutive: rank
// r's part starts at the sum of counts[0..r) elements. Collectives are called
// by every rank in the same order with the same counts; a communicator fails
// (fp8rl::Error, Status::distributed) rather than hang when it can tell a peer
// is gone, naming the collective and the rank.
//
// Thread safety: none; a context serializes its calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fp8rl {
class Backend;
}

namespace fp8rl::dist {

enum class ElementType : uint8_t { f32 = 0, f64 = 1, i64 = 2, u8 = 3 };
size_t element_size(ElementType type);
const char* element_name(ElementType type);

// Where the buffers given to a communicator's collectives must live.
enum class BufferSpace : uint8_t { host, device };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual BufferSpace space() const = 0;
  // "MPI, rank 1 of 2", for logs and the context's description.
  virtual std::string description() const = 0;
  // Called by each context that uses the communicator, before its first
  // collective: a device transport runs on that backend's stream.
  virtual void bind_backend(Backend& backend) { (void)backend; }

  // data[count] = its sum over the ranks.
  virtual void all_reduce_sum(void* data, int64_t count, ElementType type) = 0;
  // data [sum(counts)]: rank r's part = that part's sum over the ranks; the
  // rest of data is unspecified afterwards. counts has size() entries.
  virtual void reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, ElementType type) = 0;
  // data [sum(counts)]: every rank receives every rank's part.
  virtual void all_gather(void* data, const std::vector<int64_t>& counts, ElementType type) = 0;
  // data[count] = root's.
  virtual void broadcast(void* data, int64_t count, ElementType type, int root) = 0;
  virtual void barrier() = 0;
};

// The one-process communicator: rank 0 of 1, every collective a no-op.
std::shared_ptr<Communicator> make_single_process();

// Refuses (Error(unsupported)) a communicator that cannot reach the backend's
// memory: a device transport (NCCL) on the CPU backend. A host transport on
// a device backend is fine: Collectives stages through host memory.
void require_reachable(const Communicator& communicator, const Backend& backend);

// Offsets of the consecutive parts: [size + 1], starting at 0.
std::vector<int64_t> part_offsets(const std::vector<int64_t>& counts);

}  // namespace fp8rl::dist
