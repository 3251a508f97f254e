#include "thread_pool.h"

#include <cfenv>
#include <chrono>
#include <string>
#include <system_error>
#include <utility>

#include "../error.h"

namespace fp8rl::cpu {
namespace {

// How long an idle thread polls before it blocks: long enough to bridge the
// gap between the kernels of one layer, short enough not to hog a shared core.
constexpr std::chrono::microseconds kSpin{100};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() until it holds or kSpin has passed; returns ready().
template <class Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int polls = 0;; ++polls) {
    if (ready()) return true;
    cpu_relax();
    if (polls % 64 == 63 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

}  // namespace

IndexRange static_partition(int64_t count, int parts, int part) {
  // The first count % parts parts get one extra index; no count * part overflow.
  const int64_t base = count / parts, extra = count % parts;
  const int64_t begin = base * part + (part < extra ? part : extra);
  return IndexRange{begin, begin + base + (part < extra ? 1 : 0)};
}

ThreadPool::ThreadPool(int num_threads) {
  require(num_threads >= 1, "ThreadPool: num_threads must be at least 1");
  errors_.resize(static_cast<size_t>(num_threads));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  try {
    for (int part = 1; part < num_threads; ++part) workers_.emplace_back([this, part] { worker_loop(part); });
  } catch (const std::system_error& error) {
    stop_workers();  // joinable threads must not outlive a failed constructor
    fail(Status::internal, std::string("ThreadPool: cannot start worker threads: ") + error.what());
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

bool ThreadPool::is_pool_thread() const {
  const std::thread::id self = std::this_thread::get_id();
  for (const std::thread& worker : workers_)
    if (worker.get_id() == self) return true;
  return false;
}

void ThreadPool::run_inline(const std::function<void(int part)>& fn) {
  std::exception_ptr first;
  for (int part = 0; part < size(); ++part) {
    try {
      fn(part);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// Returns the new generation, or `seen` when the pool is stopping.
uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  auto ready = [&] { return stopping_.load() || generation_.load(std::memory_order_acquire) != seen; };
  if (!spin_until(ready)) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ready_.wait(lock, ready);
  }
  return stopping_.load() ? seen : generation_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop(int part) {
  uint64_t seen = 0;
  for (;;) {
    const uint64_t generation = wait_for_job(seen);
    if (generation == seen) return;
    seen = generation;
    std::exception_ptr error;
    try {
      std::fesetenv(static_cast<const std::fenv_t*>(job_fenv_));
      (*job_)(part);
    } catch (...) {
      error = std::current_exception();
    }
    // Moved, not copied: a worker still holding a reference after its
    // fetch_sub may drop the last one once the caller is done with the
    // exception, destroying it on this thread through a refcount TSan cannot
    // see (uninstrumented libstdc++), which it reports as a race.
    errors_[static_cast<size_t>(part)] = std::move(error);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // orders the wake-up after the caller's check
      work_done_.notify_one();
    }
  }
}

void ThreadPool::wait_until_done() {
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, done);
}

void ThreadPool::run(const std::function<void(int part)>& fn) {
  // Nested calls (from a worker, or from part 0 on the caller) would wait on
  // themselves: run them inline instead.
  if (workers_.empty() || job_caller_.load() == std::this_thread::get_id() || is_pool_thread()) return run_inline(fn);

  std::lock_guard<std::mutex> call_lock(call_mutex_);
  std::fenv_t caller_fenv;
  std::fegetenv(&caller_fenv);
  job_ = &fn;
  job_fenv_ = &caller_fenv;
  job_caller_ = std::this_thread::get_id();
  for (std::exception_ptr& error : errors_) error = nullptr;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_all();

  std::exception_ptr own_error;
  try {
    fn(0);
  } catch (...) {
    own_error = std::current_exception();
  }
  wait_until_done();
  job_caller_ = std::thread::id();
  if (own_error) std::rethrow_exception(own_error);
  for (const std::exception_ptr& error : errors_)
    if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_for(int64_t count, const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (count <= 0) return;
  const int parts = size();
  run([&](int part) {
    const IndexRange range = static_partition(count, parts, part);
    if (range.begin < range.end) fn(range.begin, range.end);
  });
}

}  // namespace fp8rl::cpu
