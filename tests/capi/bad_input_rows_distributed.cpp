// Rows of the bad-input table: the NCCL communicator functions. Their
// arguments are checked before the build or the machine is asked whether
// NCCL is there, so the rows hold in every build.
#include <cmath>
#include <limits>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {

void distributed_functions(Table& t, World& w) {
  Outs& o = w.outs;
  t.invalid("fp8rl_nccl_unique_id", "out_id NULL", "out_id", [] { return fp8rl_nccl_unique_id(nullptr); });

  const std::string f = "fp8rl_communicator_create_nccl";
  static const uint8_t id[128] = {};  // never reaches NCCL: every row is refused first
  const auto create = [&o](int32_t rank, int32_t world, int32_t device, double timeout) {
    return [&o, rank, world, device, timeout] {
      return fp8rl_communicator_create_nccl(id, rank, world, device, timeout, &o.communicator);
    };
  };
  t.invalid(f, "id NULL", "id", [&o] { return fp8rl_communicator_create_nccl(nullptr, 0, 1, 0, 10.0, &o.communicator); });
  t.invalid(f, "out NULL", "out_communicator", [] { return fp8rl_communicator_create_nccl(id, 0, 1, 0, 10.0, nullptr); });
  for (const int32_t world : {0, -1, std::numeric_limits<int32_t>::min()})
    t.invalid(f, "world_size " + std::to_string(world), "world_size", create(0, world, 0, 10.0));
  for (const int32_t rank : {-1, 2, std::numeric_limits<int32_t>::max()})
    t.invalid(f, "rank " + std::to_string(rank) + " of 2", "rank", create(rank, 2, 0, 10.0));
  t.invalid(f, "cuda_device -1", "cuda_device", create(0, 1, -1, 10.0));
  for (const double timeout : {0.0, -1.0, kNaN64, kInf64, -kInf64})
    t.invalid(f, "timeout_seconds " + std::to_string(timeout), "timeout_seconds", create(0, 1, 0, timeout));
}

}  // namespace capi_test::bad_input
