// libfp8rl_mpi's collectives in a real MPI job (2 or 3 ranks): every callback
// against results written down from the inputs' formula, for every element
// type, with counts that include zeros, in one MPI call and split into pieces
// of two elements (the path of counts beyond MPI's int); the refusals, which
// name the collective and the argument; and the library's own duplicate of
// the communicator.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "mpi/mpi_test_support.h"
#include "mpi_collectives.h"

namespace {

using mpi_test::world_rank;
using mpi_test::world_size;

// Rank r's element i is a * (r + 1) + b * i: exact in every type (bytes wrap
// modulo 256), different for each rank and index, so a misplaced or missing
// element shows.
template <class T>
struct Typed;
template <>
struct Typed<float> {
  static constexpr fp8rl_element_type type = FP8RL_ELEMENT_F32;
  static constexpr float a = 0.5f, b = 3.0f;
};
template <>
struct Typed<double> {
  static constexpr fp8rl_element_type type = FP8RL_ELEMENT_F64;
  static constexpr double a = 0.25, b = 1e6;
};
template <>
struct Typed<int64_t> {
  static constexpr fp8rl_element_type type = FP8RL_ELEMENT_I64;
  static constexpr int64_t a = int64_t{1} << 40, b = 7;  // beyond double's 2^53 once summed: no float path
};
template <>
struct Typed<uint8_t> {
  static constexpr fp8rl_element_type type = FP8RL_ELEMENT_U8;
  static constexpr int a = 37, b = 11;
};

template <class T>
T value(int rank, int64_t i) {
  return static_cast<T>(Typed<T>::a * static_cast<T>(rank + 1) + Typed<T>::b * static_cast<T>(i));
}

// The sum over ranks 0..n-1 of value(r, i): a * n(n + 1) / 2 + n * b * i.
template <class T>
T expected_sum(int n, int64_t i) {
  return static_cast<T>(Typed<T>::a * static_cast<T>(n * (n + 1) / 2) + static_cast<T>(n) * Typed<T>::b * static_cast<T>(i));
}

// What a part that is not yet received holds.
template <class T>
T stale() {
  return static_cast<T>(99);
}

// Elements per MPI call: MPI's whole range, and pieces of two.
const int64_t pieces[] = {fp8rl::mpi::max_mpi_count, 2};

// Callbacks over a duplicate of `comm`, destroyed (the duplicate freed) at scope exit.
class Callbacks {
 public:
  explicit Callbacks(int64_t piece, MPI_Comm comm = MPI_COMM_WORLD)
      : c_(fp8rl::mpi::make_mpi_callbacks(comm, piece)) {}
  ~Callbacks() { c_.destroy(c_.user_data); }
  Callbacks(const Callbacks&) = delete;
  Callbacks& operator=(const Callbacks&) = delete;
  const fp8rl_collective_callbacks* operator->() const { return &c_; }
  void* user_data() const { return c_.user_data; }
  std::string error() const { return c_.error_message(c_.user_data); }

 private:
  fp8rl_collective_callbacks c_;
};

// Per-rank part sizes: zeros among them, an all-zero set, and parts longer than a piece.
std::vector<std::vector<int64_t>> count_sets(int size) {
  std::vector<std::vector<int64_t>> sets(3, std::vector<int64_t>(static_cast<size_t>(size)));
  for (int r = 0; r < size; ++r) {
    sets[0][static_cast<size_t>(r)] = (3 * r + 2) % 5;  // 2, 0, 3
    sets[1][static_cast<size_t>(r)] = 0;
    sets[2][static_cast<size_t>(r)] = 5 + r;
  }
  return sets;
}

int64_t owner_of(const std::vector<int64_t>& counts, int64_t element) {
  int64_t end = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    end += counts[r];
    if (element < end) return static_cast<int64_t>(r);
  }
  return -1;
}

}  // namespace

TEST_CASE_TEMPLATE("all_reduce_sum: each element's sum over the ranks, whole and in pieces", T, float, double, int64_t) {
  for (const int64_t piece : pieces) {
    for (const int64_t count : {0, 1, 5}) {
      CAPTURE(world_rank());
      CAPTURE(piece);
      CAPTURE(count);
      const Callbacks c(piece);
      CHECK(c->world_size == world_size());
      CHECK(c->rank == world_rank());
      std::vector<T> data(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = value<T>(world_rank(), i);
      CHECK(c->all_reduce_sum(data.data(), count, Typed<T>::type, c.user_data()) == 0);
      for (int64_t i = 0; i < count; ++i) CHECK(data[static_cast<size_t>(i)] == expected_sum<T>(world_size(), i));
    }
  }
}

TEST_CASE_TEMPLATE("reduce_scatter_sum: each rank's part summed over the ranks, in place at its offset", T, float,
                   double, int64_t) {
  const int rank = world_rank();
  for (const int64_t piece : pieces) {
    for (const std::vector<int64_t>& counts : count_sets(world_size())) {
      CAPTURE(rank);
      CAPTURE(piece);
      CAPTURE(counts[0]);
      const Callbacks c(piece);
      int64_t total = 0, begin = 0;
      for (int r = 0; r < world_size(); ++r) {
        if (r == rank) begin = total;
        total += counts[static_cast<size_t>(r)];
      }
      std::vector<T> data(static_cast<size_t>(total));
      for (int64_t j = 0; j < total; ++j) data[static_cast<size_t>(j)] = value<T>(rank, j);
      CHECK(c->reduce_scatter_sum(data.data(), counts.data(), Typed<T>::type, c.user_data()) == 0);
      for (int64_t j = begin; j < begin + counts[static_cast<size_t>(rank)]; ++j)
        CHECK(data[static_cast<size_t>(j)] == expected_sum<T>(world_size(), j));
    }
  }
}

TEST_CASE_TEMPLATE("all_gather: every rank receives every rank's part", T, float, double, int64_t, uint8_t) {
  const int rank = world_rank();
  for (const int64_t piece : pieces) {
    for (const std::vector<int64_t>& counts : count_sets(world_size())) {
      CAPTURE(rank);
      CAPTURE(piece);
      CAPTURE(counts[0]);
      const Callbacks c(piece);
      int64_t total = 0;
      for (const int64_t count : counts) total += count;
      std::vector<T> data(static_cast<size_t>(total));
      for (int64_t j = 0; j < total; ++j)
        data[static_cast<size_t>(j)] = owner_of(counts, j) == rank ? value<T>(rank, j) : stale<T>();
      CHECK(c->all_gather(data.data(), counts.data(), Typed<T>::type, c.user_data()) == 0);
      for (int64_t j = 0; j < total; ++j)
        CHECK(data[static_cast<size_t>(j)] == value<T>(static_cast<int>(owner_of(counts, j)), j));
    }
  }
}

TEST_CASE_TEMPLATE("broadcast: every rank receives the root's data, from each root", T, float, double, int64_t,
                   uint8_t) {
  const int rank = world_rank();
  for (const int64_t piece : pieces) {
    for (int root = 0; root < world_size(); ++root) {
      for (const int64_t count : {0, 1, 7}) {
        CAPTURE(rank);
        CAPTURE(piece);
        CAPTURE(root);
        CAPTURE(count);
        const Callbacks c(piece);
        std::vector<T> data(static_cast<size_t>(count), stale<T>());
        if (rank == root)
          for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = value<T>(root, i);
        CHECK(c->broadcast(data.data(), count, Typed<T>::type, root, c.user_data()) == 0);
        for (int64_t i = 0; i < count; ++i) CHECK(data[static_cast<size_t>(i)] == value<T>(root, i));
      }
    }
  }
}

TEST_CASE("barrier: returns on no rank before the last rank has called it") {
  const Callbacks c(fp8rl::mpi::max_mpi_count);
  const bool last = world_rank() == world_size() - 1;
  const double start = MPI_Wtime();
  if (last) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(c->barrier(c.user_data()) == 0);
  CHECK(MPI_Wtime() - start >= 0.29);
}

TEST_CASE("refused calls return non-zero, error_message names the collective and the argument, and the "
          "communicator stays usable") {
  const Callbacks c(fp8rl::mpi::max_mpi_count);
  double one = 1.0;
  uint8_t bytes[2] = {1, 2};
  const int64_t bad_counts[3] = {1, -2, 1};
  struct Refusal {
    std::function<int()> call;
    std::string expected;
  };
  const std::vector<Refusal> refusals = {
      {[&] { return c->all_reduce_sum(bytes, 2, FP8RL_ELEMENT_U8, c.user_data()); },
       "all_reduce_sum: element type U8 (bytes) is never summed"},
      {[&] { return c->all_reduce_sum(&one, -1, FP8RL_ELEMENT_F64, c.user_data()); }, "all_reduce_sum: count is -1"},
      {[&] { return c->reduce_scatter_sum(bytes, bad_counts, FP8RL_ELEMENT_U8, c.user_data()); },
       "reduce_scatter_sum: element type U8 (bytes) is never summed"},
      {[&] { return c->reduce_scatter_sum(&one, nullptr, FP8RL_ELEMENT_F64, c.user_data()); },
       "reduce_scatter_sum: counts is NULL"},
      {[&] { return c->all_gather(&one, bad_counts, FP8RL_ELEMENT_F64, c.user_data()); },
       "all_gather: counts[1] is -2"},
      {[&] { return c->all_gather(&one, bad_counts, static_cast<fp8rl_element_type>(42), c.user_data()); },
       "all_gather: element type 42 is none of F32, F64, I64, U8"},
      {[&] { return c->broadcast(&one, 1, FP8RL_ELEMENT_F64, world_size(), c.user_data()); },
       "broadcast: root is " + std::to_string(world_size()) + "; expected 0 to " + std::to_string(world_size() - 1)},
      {[&] { return c->broadcast(&one, -3, FP8RL_ELEMENT_F64, 0, c.user_data()); }, "broadcast: count is -3"},
  };
  for (const Refusal& refusal : refusals) {
    CAPTURE(refusal.expected);
    CHECK(refusal.call() != 0);
    CHECK(c.error() == refusal.expected);
  }
  // Refused before any MPI call on every rank alike, so the ranks are still in step.
  CHECK(c->all_reduce_sum(&one, 1, FP8RL_ELEMENT_F64, c.user_data()) == 0);
  CHECK(one == static_cast<double>(world_size()));
}

TEST_CASE("the callbacks run on their own duplicate: the caller may free its communicator at once") {
  const int rank = world_rank();
  const int color = rank % 2;
  MPI_Comm half = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half) == MPI_SUCCESS);
  const Callbacks c(fp8rl::mpi::max_mpi_count, half);
  REQUIRE(MPI_Comm_free(&half) == MPI_SUCCESS);
  // The ranks of one color, in world order: 0, 2 (and 1 alone).
  CHECK(c->rank == rank / 2);
  CHECK(c->world_size == (world_size() - color + 1) / 2);
  int64_t world_ranks = rank;
  CHECK(c->all_reduce_sum(&world_ranks, 1, FP8RL_ELEMENT_I64, c.user_data()) == 0);
  int64_t expected = 0;
  for (int r = color; r < world_size(); r += 2) expected += r;
  CHECK(world_ranks == expected);
}
