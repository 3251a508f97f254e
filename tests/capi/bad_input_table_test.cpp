// The bad-input table of issue 16: what it covers and how each row is
// checked is in bad_input_table.h; the rows are in bad_input_rows_*.cpp.
#include <cstring>
#include <string>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {

TEST_CASE("bad input table: every public function refuses each bad argument, names it, writes and changes nothing") {
  World world;
  Table table(world);
  init_functions(table);
  context_functions(table, world);
  model_functions(table, world);
  policy_functions(table, world);
  rollout_functions(table, world);
  mismatch_functions(table, world);
  trainer_functions(table, world);
  numerics_functions(table, world);
  distributed_functions(table, world);
  text_functions(table, world);
  table.run();
}

TEST_CASE("bad input table: status names of any value, NULL destroys and versions answer without an error") {
  for (const int32_t raw : kBadEnums) {
    fp8rl_status status;
    std::memcpy(&status, &raw, sizeof raw);
    const char* name = fp8rl_status_name(status);
    REQUIRE(name != nullptr);
    CHECK(std::string(name).size() > 0);
  }
  // Destroying NULL is a no-op, as free(NULL) (documented per function).
  CHECK(fp8rl_context_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_policy_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_rollout_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_trainer_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_communicator_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_tokenizer_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_encoding_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_version() > 0);
  CHECK(std::string(fp8rl_version_string()).size() > 0);
}

}  // namespace capi_test::bad_input
