#include "callback_communicator.h"

#include <string>
#include <vector>

#include "kernels/error.h"

namespace fp8rl::capi {
namespace {

fp8rl_element_type c_type(dist::ElementType type) {
  switch (type) {
    case dist::ElementType::f32: return FP8RL_ELEMENT_F32;
    case dist::ElementType::f64: return FP8RL_ELEMENT_F64;
    case dist::ElementType::i64: return FP8RL_ELEMENT_I64;
    case dist::ElementType::u8: return FP8RL_ELEMENT_U8;
  }
  fail(Status::internal, "unknown collective element type");
}

class CallbackCommunicator final : public dist::Communicator {
 public:
  explicit CallbackCommunicator(const fp8rl_collective_callbacks& c)
      : c_(c), name_(c.name != nullptr && *c.name != '\0' ? c.name : "host callbacks") {}
  ~CallbackCommunicator() override {
    if (c_.destroy != nullptr) c_.destroy(c_.user_data);
  }

  int rank() const override { return c_.rank; }
  int size() const override { return c_.world_size; }
  dist::BufferSpace space() const override { return dist::BufferSpace::host; }
  std::string description() const override {
    return name_ + ", rank " + std::to_string(c_.rank) + " of " + std::to_string(c_.world_size);
  }

  void all_reduce_sum(void* data, int64_t count, dist::ElementType type) override {
    check("all_reduce_sum", c_.all_reduce_sum(data, count, c_type(type), c_.user_data));
  }
  void reduce_scatter_sum(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    if (c_.reduce_scatter_sum == nullptr) {
      int64_t count = 0;
      for (int64_t part : counts) count += part;
      all_reduce_sum(data, count, type);  // every part summed: the own part included
      return;
    }
    check("reduce_scatter_sum", c_.reduce_scatter_sum(data, counts.data(), c_type(type), c_.user_data));
  }
  void all_gather(void* data, const std::vector<int64_t>& counts, dist::ElementType type) override {
    check("all_gather", c_.all_gather(data, counts.data(), c_type(type), c_.user_data));
  }
  void broadcast(void* data, int64_t count, dist::ElementType type, int root) override {
    check("broadcast", c_.broadcast(data, count, c_type(type), root, c_.user_data));
  }
  void barrier() override {
    if (c_.barrier != nullptr) {
      check("barrier", c_.barrier(c_.user_data));
      return;
    }
    int64_t one = 1;
    all_reduce_sum(&one, 1, dist::ElementType::i64);
  }

 private:
  void check(const char* collective, int result) const {
    if (result == 0) return;
    std::string why;
    if (c_.error_message != nullptr) {
      const char* text = c_.error_message(c_.user_data);
      if (text != nullptr && *text != '\0') why = std::string(": ") + text;
    }
    fail(Status::distributed, name_ + " " + collective + " failed on rank " + std::to_string(c_.rank) + " of " +
                                  std::to_string(c_.world_size) + " (returned " + std::to_string(result) + ")" + why);
  }

  fp8rl_collective_callbacks c_;
  std::string name_;
};

}  // namespace

std::shared_ptr<dist::Communicator> make_callback_communicator(const fp8rl_collective_callbacks& c) {
  require(c.world_size >= 1, "callbacks->world_size is " + std::to_string(c.world_size) + "; expected >= 1");
  require(c.rank >= 0 && c.rank < c.world_size, "callbacks->rank is " + std::to_string(c.rank) +
                                                    "; expected 0 to world_size - 1 = " +
                                                    std::to_string(c.world_size - 1));
  require(c.all_reduce_sum != nullptr, "callbacks->all_reduce_sum is NULL");
  require(c.all_gather != nullptr, "callbacks->all_gather is NULL");
  require(c.broadcast != nullptr, "callbacks->broadcast is NULL");
  return std::make_shared<CallbackCommunicator>(c);
}

}  // namespace fp8rl::capi
