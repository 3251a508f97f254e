// A communicator bound to a context's backend: the collectives the trainer
// calls on backend memory, whatever memory the transport reads. A host-memory
// transport (MPI, host callbacks) under a device backend goes through a host
// staging copy; a device transport (NCCL) or the CPU backend reads the
// buffers directly.
//
// Scalars (norms, counts, metrics) are combined by gathering every rank's
// values and folding them in rank order on every rank, not by a transport's
// all-reduce: the result is then bitwise the same on all ranks and for a
// fixed world size on every run, whatever algorithm the transport picks.
//
// Counts bytes and seconds spent in collectives for the step metrics.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dist/communicator.h"
#include "kernels/backend.h"
#include "kernels/error.h"

namespace fp8rl::dist {

class Collectives {
 public:
  Collectives(std::shared_ptr<Communicator> communicator, Backend& backend);

  int rank() const { return communicator_->rank(); }
  int size() const { return communicator_->size(); }
  bool distributed() const { return size() > 1; }
  Communicator& communicator() { return *communicator_; }

  // Backend memory, as Communicator's collectives.
  void reduce_scatter_sum(float* data, const std::vector<int64_t>& counts);
  void all_gather(void* data, const std::vector<int64_t>& counts, ElementType type);
  void broadcast(void* data, int64_t count, ElementType type, int root);

  // The same on host memory.
  void all_gather_host(void* host, const std::vector<int64_t>& counts, ElementType type);
  void broadcast_host(void* host, int64_t count, ElementType type, int root);

  // Host values: every rank's `values` (each rank passes the same count),
  // rank after rank: [size() * values.size()].
  std::vector<double> gather_host(const std::vector<double>& values);
  // Every rank's host bytes, of varying counts, rank after rank; the counts
  // are exchanged first. Returns [sum of counts] and fills counts_out.
  std::vector<uint8_t> gather_host_bytes(const std::vector<uint8_t>& mine, std::vector<int64_t>* counts_out = nullptr);
  // Sums in rank order (bitwise equal on every rank).
  double sum(double value);
  std::vector<double> sum(const std::vector<double>& values);
  int64_t sum(int64_t value);
  double min(double value);
  double max(double value);

  // Every rank learns whether any rank failed at a step that must succeed on
  // all or none (a refused batch, a checkpoint file): throws on every rank
  // the lowest failing rank's error, prefixed "rank r: ". `status` ok: this
  // rank succeeded.
  void agree_on_failure(Status status, const std::string& why);
  // Runs `step`, then agree_on_failure with what it threw (an fp8rl::Error).
  template <class Step>
  void on_every_rank(Step&& step) {
    Status status = Status::ok;
    std::string why;
    try {
      step();
    } catch (const Error& error) {
      status = error.status();
      why = error.what();
    }
    agree_on_failure(status, why);
  }

  // Since the last reset: bytes this rank sent into reductions and received
  // from gathers and broadcasts, and seconds in collectives.
  struct Traffic {
    int64_t bytes_reduced = 0, bytes_gathered = 0;
    double seconds = 0.0;
  };
  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

 private:
  bool staged() const;
  template <class Call>
  void on_backend_memory(void* data, size_t bytes, bool upload_back, Call&& call);

  std::shared_ptr<Communicator> communicator_;
  Backend& backend_;
  Traffic traffic_;
  std::vector<uint8_t> staging_;
};

}  // namespace fp8rl::dist
