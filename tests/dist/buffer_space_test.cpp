// Where a communicator's buffers live against where the context computes: a
// context refuses, when it is created, a GPU-memory communicator (NCCL) on
// the CPU backend; a host-memory communicator (MPI, callbacks) under a device
// backend sees host copies only (Collectives stages them) and trains to the
// CPU backend's bits. The device is the CPU-backed stand-in of tests/core.
#include <doctest/doctest.h>

#include "core/policy/fingerprint.h"
#include "dist/dist_test_support.h"
#include "tests/core/fake_device_backend.h"

namespace fp8rl::test {
namespace {

// Claims GPU memory; its collectives are never reached.
class DeviceMemoryCommunicator final : public dist::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  dist::BufferSpace space() const override { return dist::BufferSpace::device; }
  std::string description() const override { return "GPU stand-in, rank 0 of 2"; }
  void bind_backend(Backend&) override { ++binds; }
  void all_reduce_sum(void*, int64_t, dist::ElementType) override { unreached(); }
  void reduce_scatter_sum(void*, const std::vector<int64_t>&, dist::ElementType) override { unreached(); }
  void all_gather(void*, const std::vector<int64_t>&, dist::ElementType) override { unreached(); }
  void broadcast(void*, int64_t, dist::ElementType, int) override { unreached(); }
  void barrier() override { unreached(); }
  int binds = 0;

 private:
  [[noreturn]] static void unreached() { fail(Status::internal, "not part of this test"); }
};

// A host transport that fails on any pointer into its rank's device memory.
class HostOnly final : public dist::Communicator {
 public:
  HostOnly(std::shared_ptr<dist::Communicator> inner, const FakeDeviceBackend& device)
      : inner_(std::move(inner)), device_(device) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  dist::BufferSpace space() const override { return dist::BufferSpace::host; }
  std::string description() const override { return inner_->description(); }
  void all_reduce_sum(void* data, int64_t count, dist::ElementType type) override {
    inner_->all_reduce_sum(host(data), count, type);
  }
  void reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    inner_->reduce_scatter_sum(host(data), counts, type);
  }
  void all_gather(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    inner_->all_gather(host(data), counts, type);
  }
  void broadcast(void* data, int64_t count, dist::ElementType type, int root) override {
    inner_->broadcast(host(data), count, type, root);
  }
  void barrier() override { inner_->barrier(); }

 private:
  void* host(void* data) const {
    if (device_.is_device(data)) fail(Status::internal, "a host communicator got device memory");
    return data;
  }
  std::shared_ptr<dist::Communicator> inner_;
  const FakeDeviceBackend& device_;
};

// Fingerprints of two ranks after one RL iteration, on the fake device or on the CPU.
std::vector<uint64_t> train_two_ranks(bool on_device) {
  const model::ModelConfig config = tiny_qwen2();
  auto hub = std::make_shared<ThreadHub>(2);
  std::vector<uint64_t> prints(2);
  run_threads(2, [&](int rank) {
    auto threads = std::make_shared<ThreadCommunicator>(hub, rank);
    auto device = std::make_unique<FakeDeviceBackend>();
    const FakeDeviceBackend& device_view = *device;
    std::unique_ptr<Context> context =
        on_device ? std::make_unique<Context>(std::move(device), Logger(), 2, std::make_shared<HostOnly>(threads, device_view))
                  : std::make_unique<Context>(cpu_request(2), Logger(), threads);
    policy::Policy policy(*context, tiny_params(config, 11), all_recipes()[4].recipe);
    train::Trainer trainer(policy, dp_options());
    const FlatSequences prompts = rank_share(global_prompts(config), rank, 2);
    const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(prompts.view().count), test_sampling(6));
    trainer.iterate(batch.view());
    prints[static_cast<size_t>(rank)] = policy::fingerprint(policy);
  });
  return prints;
}

}  // namespace

TEST_CASE("buffer space: a context refuses a GPU-memory communicator on the CPU backend when it is created") {
  auto communicator = std::make_shared<DeviceMemoryCommunicator>();
  try {
    Context context(cpu_request(1), Logger(), communicator);
    FAIL("the context was created");
  } catch (const Error& error) {
    CHECK(error.status() == Status::unsupported);
    CHECK(std::string(error.what()).find("GPU stand-in, rank 0 of 2 works on GPU memory") != std::string::npos);
  }
  CHECK(communicator->binds == 0);
  Context on_device(std::make_unique<FakeDeviceBackend>(), Logger(), 2, communicator);
  CHECK(communicator->binds == 1);
}

TEST_CASE("buffer space: a host communicator under a device backend gets host copies and trains to the CPU bits") {
  const std::vector<uint64_t> device = train_two_ranks(true);
  const std::vector<uint64_t> cpu = train_two_ranks(false);
  CHECK(device[0] == device[1]);
  CHECK(device == cpu);
}

}  // namespace fp8rl::test
