#include <doctest/doctest.h>

#include <atomic>
#include <cfenv>
#include <ostream>  // doctest prints std::thread::id
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace fp8rl::cpu {
namespace {

TEST_CASE("static_partition covers the range in contiguous, balanced parts") {
  for (int64_t count : {0, 1, 5, 64, 1001})
    for (int parts : {1, 2, 3, 7}) {
      int64_t next = 0, smallest = count, largest = 0;
      for (int part = 0; part < parts; ++part) {
        const IndexRange range = static_partition(count, parts, part);
        CHECK(range.begin == next);
        next = range.end;
        smallest = std::min(smallest, range.end - range.begin);
        largest = std::max(largest, range.end - range.begin);
      }
      CHECK(next == count);
      CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("parallel_for visits every index once") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t count : {0, 1, 3, 50}) {
      std::vector<std::atomic<int>> visits(static_cast<size_t>(count));
      pool.parallel_for(count, [&](int64_t begin, int64_t end) {
        CHECK(begin < end);  // empty parts are skipped
        for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)]++;
      });
      for (const std::atomic<int>& v : visits) CHECK(v.load() == 1);
    }
  }
}

TEST_CASE("a pool of one runs inline on the calling thread") {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id seen;
  pool.parallel_for(10, [&](int64_t, int64_t) { seen = std::this_thread::get_id(); });
  CHECK(seen == caller);
}

TEST_CASE("run gives every part its own call, part 0 on the caller") {
  ThreadPool pool(4);
  std::vector<std::thread::id> ids(4);
  pool.run([&](int part) { ids[static_cast<size_t>(part)] = std::this_thread::get_id(); });
  CHECK(ids[0] == std::this_thread::get_id());
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) CHECK(ids[static_cast<size_t>(i)] != ids[static_cast<size_t>(j)]);
}

TEST_CASE("exceptions in workers reach the caller, lowest part first") {
  ThreadPool pool(3);
  try {
    pool.run([](int part) {
      if (part >= 1) throw std::runtime_error("part " + std::to_string(part));
    });
    FAIL("no exception");
  } catch (const std::runtime_error& error) {
    CHECK(std::string(error.what()) == "part 1");
  }
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  pool.parallel_for(100, [&](int64_t begin, int64_t end) { sum += static_cast<int>(end - begin); });
  CHECK(sum.load() == 100);
}

TEST_CASE("a nested call runs inline instead of deadlocking") {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run(
      [&](int) { pool.parallel_for(4, [&](int64_t begin, int64_t end) { inner += static_cast<int>(end - begin); }); });
  CHECK(inner.load() == 8);
}

TEST_CASE("workers compute under the caller's rounding mode") {
  ThreadPool pool(3);
  const int saved = std::fegetround();
  std::fesetround(FE_UPWARD);
  std::vector<int> modes(3);
  pool.run([&](int part) { modes[static_cast<size_t>(part)] = std::fegetround(); });
  std::fesetround(saved);
  for (int mode : modes) CHECK(mode == FE_UPWARD);
}

TEST_CASE("ThreadPool rejects fewer than one thread") { CHECK_THROWS(ThreadPool(0)); }

}  // namespace
}  // namespace fp8rl::cpu
