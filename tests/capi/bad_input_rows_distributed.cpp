// The bad-input table's rows for communicators, ranks, fingerprints and the
// data-parallel trainer calls (bad_input_table.h says how each row is checked).
#include <cmath>
#include <limits>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {
namespace {

// Never called: every row fails before a collective runs.
int sum_nothing(void*, int64_t, fp8rl_element_type, void*) { return 0; }
int gather_nothing(void*, const int64_t*, fp8rl_element_type, void*) { return 0; }
int broadcast_nothing(void*, int64_t, fp8rl_element_type, int32_t, void*) { return 0; }

fp8rl_collective_callbacks valid_callbacks() {
  fp8rl_collective_callbacks c{};
  c.struct_size = sizeof c;
  c.rank = 0;
  c.world_size = 2;
  c.all_reduce_sum = sum_nothing;
  c.all_gather = gather_nothing;
  c.broadcast = broadcast_nothing;
  return c;
}

void communicator_rows(Table& t, Outs& o) {
  const std::string create = "fp8rl_communicator_create_from_callbacks";
  const auto call = [&o](const fp8rl_collective_callbacks& c) {
    return fp8rl_communicator_create_from_callbacks(&c, &o.communicator);
  };
  const fp8rl_collective_callbacks valid = valid_callbacks();
  t.invalid(create, "callbacks NULL", "callbacks",
            [&o] { return fp8rl_communicator_create_from_callbacks(nullptr, &o.communicator); });
  t.invalid(create, "out NULL", "out_communicator",
            [valid] { return fp8rl_communicator_create_from_callbacks(&valid, nullptr); });
  t.struct_sizes<fp8rl_collective_callbacks>(create, "callbacks", valid, call);
  struct Spoiled {
    const char* what;
    const char* names;
    void (*spoil)(fp8rl_collective_callbacks&);
  };
  const Spoiled spoiled[] = {
      {"all_reduce_sum NULL", "all_reduce_sum", [](fp8rl_collective_callbacks& c) { c.all_reduce_sum = nullptr; }},
      {"all_gather NULL", "all_gather", [](fp8rl_collective_callbacks& c) { c.all_gather = nullptr; }},
      {"broadcast NULL", "broadcast", [](fp8rl_collective_callbacks& c) { c.broadcast = nullptr; }},
      {"rank -1", "rank", [](fp8rl_collective_callbacks& c) { c.rank = -1; }},
      {"rank == world_size", "rank", [](fp8rl_collective_callbacks& c) { c.rank = c.world_size; }},
      {"world_size 0", "world_size", [](fp8rl_collective_callbacks& c) { c.world_size = 0; }},
      {"world_size -1", "world_size", [](fp8rl_collective_callbacks& c) { c.world_size = -1; }},
  };
  for (const Spoiled& s : spoiled) {
    fp8rl_collective_callbacks c = valid;
    s.spoil(c);
    t.invalid(create, s.what, s.names, [call, c] { return call(c); });
  }
  t.invalid("fp8rl_communicator_get_rank", "communicator NULL", "communicator",
            [&o] { return fp8rl_communicator_get_rank(nullptr, &o.rank, &o.world_size); });
}

// Checked before the build or the machine is asked whether NCCL is there,
// so the rows hold in every build.
void nccl_rows(Table& t, Outs& o) {
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

}  // namespace

void distributed_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_context* c = w.context.get();
  communicator_rows(t, o);
  nccl_rows(t, o);
  t.invalid("fp8rl_context_get_rank", "context NULL", "context",
            [&o] { return fp8rl_context_get_rank(nullptr, &o.rank); });
  t.invalid("fp8rl_context_get_rank", "out NULL", "out_rank", [c] { return fp8rl_context_get_rank(c, nullptr); });
  t.invalid("fp8rl_context_get_world_size", "context NULL", "context",
            [&o] { return fp8rl_context_get_world_size(nullptr, &o.world_size); });
  t.invalid("fp8rl_context_get_world_size", "out NULL", "out_world_size",
            [c] { return fp8rl_context_get_world_size(c, nullptr); });
  fp8rl_policy* p = w.policy.get();
  t.invalid("fp8rl_policy_fingerprint", "policy NULL", "policy",
            [&o] { return fp8rl_policy_fingerprint(nullptr, &o.fingerprint); });
  t.invalid("fp8rl_policy_fingerprint", "out NULL", "out_fingerprint",
            [p] { return fp8rl_policy_fingerprint(p, nullptr); });
  t.invalid("fp8rl_trainer_gather_weights", "trainer NULL", "trainer",
            [] { return fp8rl_trainer_gather_weights(nullptr); });
}

}  // namespace capi_test::bad_input
