// Ranks as threads of one process: a host transport for tests of the
// data-parallel trainer without launching processes (the MPI suites run the
// same trainer across real processes). Every collective is: post this rank's
// buffer, wait for all, read the others' buffers, wait for all again. Sums
// run in rank order, so every rank computes the same bits.
#pragma once

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/dist/communicator.h"
#include "kernels/error.h"

namespace fp8rl::test {

class ThreadHub {
 public:
  explicit ThreadHub(int size) : size_(size), posted_(static_cast<size_t>(size)) {}
  int size() const { return size_; }
  void post(int rank, void* data) { posted_[static_cast<size_t>(rank)] = data; }
  void* posted(int rank) const { return posted_[static_cast<size_t>(rank)]; }
  // Returns when every rank has called it (a generation-counting barrier).
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      ready_.notify_all();
    } else {
      ready_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  int size_;
  std::vector<void*> posted_;
  std::mutex mutex_;
  std::condition_variable ready_;
  int arrived_ = 0;
  long generation_ = 0;
};

// memcpy, except that an empty part may have a null buffer (which memcpy may not be given).
inline void copy_bytes(void* to, const void* from, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

class ThreadCommunicator final : public dist::Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  dist::BufferSpace space() const override { return dist::BufferSpace::host; }
  std::string description() const override { return "threads, rank " + std::to_string(rank_); }

  void all_reduce_sum(void* data, int64_t count, dist::ElementType type) override {
    std::vector<uint8_t> result(static_cast<size_t>(count) * dist::element_size(type));
    exchange(data, [&] { sum_part(result.data(), 0, count, type); });
    copy_bytes(data, result.data(), result.size());  // every rank has read every buffer
  }
  void reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    const std::vector<int64_t> offsets = dist::part_offsets(counts);
    const int64_t mine = counts[static_cast<size_t>(rank_)];
    std::vector<uint8_t> result(static_cast<size_t>(mine) * dist::element_size(type));
    exchange(data, [&] { sum_part(result.data(), offsets[static_cast<size_t>(rank_)], mine, type); });
    copy_bytes(static_cast<uint8_t*>(data) + offsets[static_cast<size_t>(rank_)] * dist::element_size(type),
                result.data(), result.size());
  }
  void all_gather(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    const std::vector<int64_t> offsets = dist::part_offsets(counts);
    const size_t element = dist::element_size(type);
    exchange(data, [&] {
      for (int r = 0; r < size(); ++r) {
        if (r == rank_) continue;
        const size_t at = static_cast<size_t>(offsets[static_cast<size_t>(r)]) * element;
        copy_bytes(static_cast<uint8_t*>(data) + at, static_cast<const uint8_t*>(hub_->posted(r)) + at,
                    static_cast<size_t>(counts[static_cast<size_t>(r)]) * element);
      }
    });
  }
  void broadcast(void* data, int64_t count, dist::ElementType type, int root) override {
    exchange(data, [&] {
      if (rank_ != root)
        copy_bytes(data, hub_->posted(root), static_cast<size_t>(count) * dist::element_size(type));
    });
  }
  void barrier() override { hub_->wait(); }

 private:
  // Posts data, waits for all, reads, waits for all (nobody's buffer changes while read).
  template <class Read>
  void exchange(void* data, Read&& read) {
    hub_->post(rank_, data);
    hub_->wait();
    read();
    hub_->wait();
  }
  // out[i] = sum over ranks r (in order) of rank r's element [first + i].
  void sum_part(void* out, int64_t first, int64_t count, dist::ElementType type) const {
    switch (type) {
      case dist::ElementType::f32: return sum_as<float>(out, first, count);
      case dist::ElementType::f64: return sum_as<double>(out, first, count);
      case dist::ElementType::i64: return sum_as<int64_t>(out, first, count);
      case dist::ElementType::u8: fail(Status::internal, "thread communicator: bytes are never summed");
    }
  }
  template <class T>
  void sum_as(void* out, int64_t first, int64_t count) const {
    T* result = static_cast<T*>(out);
    for (int64_t i = 0; i < count; ++i) {
      T total = 0;
      for (int r = 0; r < size(); ++r) total += static_cast<const T*>(hub_->posted(r))[first + i];
      result[i] = total;
    }
  }

  std::shared_ptr<ThreadHub> hub_;
  int rank_;
};

}  // namespace fp8rl::test
