#include "core/dist/communicator.h"

#include "kernels/backend.h"
#include "kernels/error.h"

namespace fp8rl::dist {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  BufferSpace space() const override { return BufferSpace::host; }
  std::string description() const override { return "single process"; }
  void all_reduce_sum(void*, int64_t, ElementType) override {}
  void reduce_scatter_sum(void*, const std::vector<int64_t>&, ElementType) override {}
  void all_gather(void*, const std::vector<int64_t>&, ElementType) override {}
  void broadcast(void*, int64_t, ElementType, int) override {}
  void barrier() override {}
};

}  // namespace

size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::f32: return 4;
    case ElementType::f64: return 8;
    case ElementType::i64: return 8;
    case ElementType::u8: return 1;
  }
  fail(Status::internal, "unknown collective element type");
}

const char* element_name(ElementType type) {
  switch (type) {
    case ElementType::f32: return "f32";
    case ElementType::f64: return "f64";
    case ElementType::i64: return "i64";
    case ElementType::u8: return "u8";
  }
  return "unknown";
}

std::shared_ptr<Communicator> make_single_process() { return std::make_shared<SingleProcess>(); }

void require_reachable(const Communicator& communicator, const Backend& backend) {
  if (communicator.space() == BufferSpace::device && backend.kind() != BackendKind::cuda)
    fail(Status::unsupported, "communicator " + communicator.description() +
                                  " works on GPU memory; the context runs on the CPU backend");
}

std::vector<int64_t> part_offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets{0};
  for (int64_t count : counts) offsets.push_back(offsets.back() + count);
  return offsets;
}

}  // namespace fp8rl::dist
