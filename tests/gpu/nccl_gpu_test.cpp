// The NCCL communicator on GPUs. On one GPU: a group of one runs every
// collective on device buffers, trains to the same weights as no
// communicator, and a group whose second rank never joins fails within its
// timeout. With two or more GPUs (one rank per GPU, ranks as threads): the
// collectives against sums and layouts worked out by hand, a data-parallel
// training step after which every rank holds the same compute weights, and a
// rank that skips a collective makes the other fail within its timeout,
// naming the collective, and leaves its communicator unusable.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <tuple>
#include <vector>

#include "core/dist/nccl_communicator.h"
#include "core/policy/fingerprint.h"
#include "dist/dist_test_support.h"
#include "kernels/cuda/cuda_backend.h"

namespace fp8rl::test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

dist::NcclSetup setup(const dist::NcclId& id, int rank, int world, double timeout) {
  dist::NcclSetup s;
  s.id = id;
  s.rank = rank;
  s.world_size = world;
  s.cuda_device = rank;
  s.timeout_seconds = timeout;
  return s;
}

// `world` ranks, rank r on GPU r, created together (each blocks until all
// have joined) and destroyed together, as separate processes would be (a
// rank's teardown may wait for its peers').
class Group {
 public:
  explicit Group(int world, double timeout = 60.0) : ranks_(static_cast<size_t>(world)) {
    const dist::NcclId id = dist::nccl_unique_id();
    run_threads(world, [&](int rank) {
      ranks_[static_cast<size_t>(rank)] = dist::make_nccl_communicator(setup(id, rank, world, timeout));
    });
  }
  ~Group() {
    run_threads(static_cast<int>(ranks_.size()), [&](int rank) { ranks_[static_cast<size_t>(rank)].reset(); });
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  const std::shared_ptr<dist::Communicator>& operator[](int rank) const { return ranks_[static_cast<size_t>(rank)]; }

 private:
  std::vector<std::shared_ptr<dist::Communicator>> ranks_;
};

BackendRequest gpu_request(int device) { return BackendRequest{BackendChoice::cuda, 1, device}; }

// A device array of one backend with host round trips.
template <class T>
class DeviceVector {
 public:
  DeviceVector(Backend& backend, const std::vector<T>& host)
      : backend_(backend), count_(host.size()), data_(backend.allocate(bytes())) {
    backend_.upload(data_, host.data(), bytes());
  }
  ~DeviceVector() { backend_.deallocate(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  void* data() const { return data_; }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    backend_.download(out.data(), data_, bytes());
    return out;
  }

 private:
  size_t bytes() const { return count_ * sizeof(T); }
  Backend& backend_;
  size_t count_;
  void* data_;
};

// The status and message of the Error f throws.
std::pair<Status, std::string> thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& error) {
    return {error.status(), error.what()};
  }
  return {Status::ok, ""};
}

// Rank r's weights after `iterations` RL iterations on its share of the
// global prompts, starting from its own weights (the trainer broadcasts rank 0's).
uint64_t train_rank(Context& context, int rank, int world, int iterations, model::ModelParams* params_out = nullptr) {
  const model::ModelConfig config = tiny_qwen2();
  policy::Policy policy(context, tiny_params(config, 11 + static_cast<uint64_t>(rank)), all_recipes()[4].recipe);
  train::Trainer trainer(policy, dp_options());
  const FlatSequences prompts = rank_share(global_prompts(config), rank, world);
  for (int i = 0; i < iterations; ++i) {
    const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
    trainer.iterate(batch.view());
  }
  if (params_out != nullptr) *params_out = policy.params();
  return policy::fingerprint(policy);
}

bool several_gpus() {
  if (cuda_device_count() >= 2) return true;
  MESSAGE("skipped: needs two CUDA devices, found ", cuda_device_count());
  return false;
}

}  // namespace

TEST_CASE("nccl: a group of one runs every collective in place on device buffers") {
  const Group group(1);
  dist::Communicator& nccl = *group[0];
  CHECK(nccl.rank() == 0);
  CHECK(nccl.size() == 1);
  CHECK(nccl.space() == dist::BufferSpace::device);
  CHECK(nccl.description().find("NCCL ") == 0);
  CHECK(nccl.description().find("rank 0 of 1 on CUDA device 0") != std::string::npos);

  const std::unique_ptr<Backend> gpu = make_cuda_backend(0);
  nccl.bind_backend(*gpu);
  // A sum over one rank is the rank's own values: each type must survive
  // bit for bit (an f64 read as f32 or an i64 as f64 would not).
  DeviceVector<float> f32(*gpu, {1.5f, -2.25f, 3.0e38f});
  DeviceVector<double> f64(*gpu, {1.0e300, -0.1, 5e-324});
  DeviceVector<int64_t> i64(*gpu, {(int64_t{1} << 62) + 1, -7, 0});
  nccl.all_reduce_sum(f32.data(), 3, dist::ElementType::f32);
  nccl.all_reduce_sum(f64.data(), 3, dist::ElementType::f64);
  nccl.all_reduce_sum(i64.data(), 3, dist::ElementType::i64);
  CHECK(f32.host() == std::vector<float>{1.5f, -2.25f, 3.0e38f});
  CHECK(f64.host() == std::vector<double>{1.0e300, -0.1, 5e-324});
  CHECK(i64.host() == std::vector<int64_t>{(int64_t{1} << 62) + 1, -7, 0});

  DeviceVector<float> parts(*gpu, {1, 2, 3, 4, 5});
  nccl.reduce_scatter_sum(parts.data(), {5}, dist::ElementType::f32);
  CHECK(parts.host() == std::vector<float>{1, 2, 3, 4, 5});
  DeviceVector<uint8_t> bytes(*gpu, {9, 8, 7, 6, 5, 4, 3});
  nccl.all_gather(bytes.data(), {7}, dist::ElementType::u8);
  nccl.broadcast(bytes.data(), 7, dist::ElementType::u8, 0);
  CHECK(bytes.host() == std::vector<uint8_t>{9, 8, 7, 6, 5, 4, 3});
  nccl.all_gather(bytes.data(), {0}, dist::ElementType::u8);  // empty parts are skipped alike on every rank
  nccl.barrier();

  // Stream order: a backend operation queued before the collective is in its input.
  gpu->zero_fill(f32.data(), 3 * sizeof(float));
  nccl.all_reduce_sum(f32.data(), 3, dist::ElementType::f32);
  CHECK(f32.host() == std::vector<float>{0, 0, 0});
}

TEST_CASE("nccl: a context refuses a communicator on another GPU, and the CPU backend") {
  const Group group(1);
  const auto [cpu_status, cpu_message] = thrown([&] { Context context(cpu_request(1), Logger(), group[0]); });
  CHECK(cpu_status == Status::unsupported);
  CHECK(cpu_message.find("works on GPU memory") != std::string::npos);
  if (cuda_device_count() >= 2) {
    const auto [status, message] = thrown([&] { Context context(gpu_request(1), Logger(), group[0]); });
    CHECK(status == Status::invalid_argument);
    CHECK(message.find("CUDA device 1") != std::string::npos);
  }
}

TEST_CASE("nccl: a training step through a group of one gives the weights of no communicator") {
  model::ModelParams alone, through_nccl;
  uint64_t alone_print = 0, nccl_print = 0;
  {
    Context context(gpu_request(0), Logger());
    alone_print = train_rank(context, 0, 1, 2, &alone);
  }
  {
    const Group group(1);
    Context context(gpu_request(0), Logger(), group[0]);
    CHECK(context.world_size() == 1);
    nccl_print = train_rank(context, 0, 1, 2, &through_nccl);
  }
  CHECK(nccl_print == alone_print);
  CHECK(same_weights(through_nccl, alone));
  CHECK(!same_weights(alone, tiny_params(tiny_qwen2(), 11)));  // the step changed the weights
}

TEST_CASE("nccl: a group whose second rank never joins fails within its timeout, naming init") {
  const double timeout = 2.0;
  const Clock::time_point start = Clock::now();
  const auto [status, message] =
      thrown([&] { dist::make_nccl_communicator(setup(dist::nccl_unique_id(), 0, 2, timeout)); });
  const double elapsed = seconds_since(start);
  MESSAGE(message, " (after ", elapsed, " s)");
  CHECK(status == Status::distributed);
  CHECK(message.find("NCCL init failed on rank 0 of 2") != std::string::npos);
  CHECK(message.find("timed out after 2 s") != std::string::npos);
  CHECK(elapsed >= timeout);
  CHECK(elapsed < timeout + 30.0);  // the abort included
}

TEST_CASE("nccl: collectives over several GPUs against sums and layouts worked out by hand") {
  if (!several_gpus()) return;
  const int world = std::min(cuda_device_count(), 4);
  const Group group(world);
  // Parts of varying size, one empty: rank r's part has counts[r] elements.
  std::vector<int64_t> counts;
  for (int r = 0; r < world; ++r) counts.push_back(r == 1 ? 0 : 3 + r);
  const std::vector<int64_t> offsets = dist::part_offsets(counts);
  const size_t total = static_cast<size_t>(offsets.back());
  run_threads(world, [&](int rank) {
    dist::Communicator& nccl = *group[rank];
    const std::unique_ptr<Backend> gpu = make_cuda_backend(rank);
    nccl.bind_backend(*gpu);
    const double n = world, r = rank;

    // all_reduce: element i on rank r is r + i / 2, so the sum is n(n-1)/2 + n i / 2.
    std::vector<float> values(6);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(r + 0.5 * static_cast<double>(i));
    DeviceVector<float> f32(*gpu, values);
    nccl.all_reduce_sum(f32.data(), 6, dist::ElementType::f32);
    const std::vector<float> sums = f32.host();
    for (size_t i = 0; i < sums.size(); ++i)
      CHECK(sums[i] == static_cast<float>(n * (n - 1) / 2 + n * 0.5 * static_cast<double>(i)));
    DeviceVector<int64_t> i64(*gpu, {(int64_t{1} << 40) * (rank + 1), -rank});
    nccl.all_reduce_sum(i64.data(), 2, dist::ElementType::i64);
    CHECK(i64.host() == std::vector<int64_t>{(int64_t{1} << 40) * world * (world + 1) / 2, -world * (world - 1) / 2});
    DeviceVector<double> f64(*gpu, {1e300 * (r + 1)});
    nccl.all_reduce_sum(f64.data(), 1, dist::ElementType::f64);
    CHECK(f64.host()[0] == doctest::Approx(1e300 * n * (n + 1) / 2).epsilon(1e-15));

    // reduce_scatter: element j of the buffer is 10 r + j on rank r; this
    // rank's part holds the sums 10 n(n-1)/2 + n j.
    std::vector<float> buffer(total);
    for (size_t j = 0; j < total; ++j) buffer[j] = static_cast<float>(10 * r + static_cast<double>(j));
    DeviceVector<float> scattered(*gpu, buffer);
    nccl.reduce_scatter_sum(scattered.data(), counts, dist::ElementType::f32);
    const std::vector<float> reduced = scattered.host();
    for (int64_t j = offsets[rank]; j < offsets[rank + 1]; ++j)
      CHECK(reduced[static_cast<size_t>(j)] == static_cast<float>(10 * n * (n - 1) / 2 + n * static_cast<double>(j)));

    // all_gather: each rank fills its own part with 100 + 10 owner + k and
    // the rest with 0xEE; afterwards every part is its owner's.
    std::vector<uint8_t> mine(total, 0xEE), expected(total);
    for (int owner = 0; owner < world; ++owner)
      for (int64_t k = 0; k < counts[owner]; ++k) {
        const auto value = static_cast<uint8_t>(100 + 10 * owner + k);
        expected[static_cast<size_t>(offsets[owner] + k)] = value;
        if (owner == rank) mine[static_cast<size_t>(offsets[owner] + k)] = value;
      }
    DeviceVector<uint8_t> gathered(*gpu, mine);
    nccl.all_gather(gathered.data(), counts, dist::ElementType::u8);
    CHECK(gathered.host() == expected);

    // broadcast from the last rank.
    DeviceVector<double> root(*gpu, {r, -r, 0.25});
    nccl.broadcast(root.data(), 3, dist::ElementType::f64, world - 1);
    CHECK(root.host() == std::vector<double>{n - 1, -(n - 1), 0.25});
    nccl.barrier();
  });
}

TEST_CASE("nccl: a data-parallel step over several GPUs leaves every rank with the same compute weights") {
  if (!several_gpus()) return;
  const int world = std::min(cuda_device_count(), 4);
  const Group group(world);
  std::vector<uint64_t> prints(static_cast<size_t>(world));
  run_threads(world, [&](int rank) {
    Context context(gpu_request(rank), Logger(), group[rank]);
    prints[static_cast<size_t>(rank)] = train_rank(context, rank, world, 2);
  });
  for (uint64_t print : prints) CHECK(print == prints[0]);
  Context single(gpu_request(0), Logger());
  policy::Policy untrained(single, tiny_params(tiny_qwen2(), 11), all_recipes()[4].recipe);
  CHECK(prints[0] != policy::fingerprint(untrained));
}

TEST_CASE("nccl: a rank that skips a collective makes the other fail within its timeout, naming it") {
  if (!several_gpus()) return;
  const double timeout = 2.0;
  const Group group(2, timeout);
  std::promise<void> rank0_done;
  const std::shared_future<void> done = rank0_done.get_future().share();
  // Rank 1 waits for rank 0 however rank 0 leaves.
  struct Release {
    std::promise<void>& promise;
    ~Release() { promise.set_value(); }
  };
  std::string first, second;
  double elapsed = 0.0, again = 0.0;
  run_threads(2, [&](int rank) {
    if (rank == 1) {  // stays alive, but never joins the all-reduce
      done.wait();
      return;
    }
    const Release release{rank0_done};
    const std::unique_ptr<Backend> gpu = make_cuda_backend(0);
    dist::Communicator& nccl = *group[0];
    nccl.bind_backend(*gpu);
    DeviceVector<float> data(*gpu, {1, 2, 3});
    Clock::time_point start = Clock::now();
    Status status = Status::ok;
    std::tie(status, first) = thrown([&] { nccl.all_reduce_sum(data.data(), 3, dist::ElementType::f32); });
    elapsed = seconds_since(start);
    CHECK(status == Status::distributed);
    start = Clock::now();
    std::tie(status, second) = thrown([&] { nccl.barrier(); });
    again = seconds_since(start);
    CHECK(status == Status::distributed);
  });
  MESSAGE(first, " (after ", elapsed, " s)");
  CHECK(first.find("NCCL all_reduce_sum failed on rank 0 of 2") != std::string::npos);
  CHECK(first.find("timed out after 2 s") != std::string::npos);
  CHECK(elapsed >= timeout);
  CHECK(elapsed < timeout + 30.0);
  CHECK(second == first);  // unusable from then on, failing at once
  CHECK(again < 0.5);
}

}  // namespace fp8rl::test
