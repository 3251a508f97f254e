// A persistent pool of worker threads owned by one CPU backend.
//
// Work is split statically: part p of n always covers the same index range,
// so which thread computes what is a pure function of (count, size()). The
// kernels never let that choice change a result; the static split keeps
// per-thread scratch and cache reuse simple.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fp8rl::cpu {

struct IndexRange {
  int64_t begin;
  int64_t end;
};

// Part `part` of [0, count) split into `parts` contiguous ranges whose sizes
// differ by at most one.
IndexRange static_partition(int64_t count, int parts, int part);

class ThreadPool {
 public:
  // num_threads >= 1 counts the calling thread: a pool of n starts n - 1
  // workers, and a pool of 1 runs everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(part) for every part in [0, size()) at once, part 0 on the
  // calling thread, and returns when all are done. If parts throw, the
  // exception of the lowest such part is rethrown here. Concurrent callers
  // take turns; a call from inside fn runs its parts inline, one after another.
  // The caller's floating-point environment (rounding, FTZ/DAZ) is installed
  // in the workers for the job, so every part computes under the same rules.
  void run(const std::function<void(int part)>& fn);

  // fn(begin, end) over the static partition of [0, count); empty parts are
  // skipped. Exceptions as in run().
  void parallel_for(int64_t count, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop(int part);
  void stop_workers();
  uint64_t wait_for_job(uint64_t seen);
  void wait_until_done();
  bool is_pool_thread() const;
  void run_inline(const std::function<void(int part)>& fn);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time
  // A job is published by bumping generation_ (under mutex_, for the
  // sleepers) after job_ and friends are written; workers spin on it for a
  // short while before sleeping, because small GEMMs come in quick
  // succession and a futex wake-up costs as much as one of them.
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still busy with the current job
  std::atomic<bool> stopping_{false};
  const std::function<void(int)>* job_ = nullptr;
  const void* job_fenv_ = nullptr;  // the caller's fenv_t, for the workers
  std::atomic<std::thread::id> job_caller_{};
  std::vector<std::exception_ptr> errors_;  // [size()], slot p written only by part p
};

}  // namespace fp8rl::cpu
