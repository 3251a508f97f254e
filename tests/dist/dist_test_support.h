// Data-parallel runs of the trainer with ranks as threads: each rank has its
// own context (one CPU thread), policy and trainer, and takes whole GRPO
// groups of one global batch of prompts.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/context.h"
#include "dist/thread_communicator.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {

// Runs body(rank) on `world` threads; rethrows the lowest rank's exception.
inline void run_threads(int world, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

// Runs body(rank, context) on `world` threads sharing one hub, each with a
// context of one CPU thread.
inline void run_ranks(int world, const std::function<void(int, Context&)>& body) {
  auto hub = std::make_shared<ThreadHub>(world);
  run_threads(world, [&](int rank) {
    Context context(cpu_request(1), Logger(), std::make_shared<ThreadCommunicator>(hub, rank));
    body(rank, context);
  });
}

// The global prompts: groups of two equal prompts, one group per length.
inline FlatSequences global_prompts(const model::ModelConfig& config) {
  return paired_prompts(config, {3, 5, 4, 6, 2, 7});
}

// Rank r's share of whole groups of two: groups [r * G / N, (r + 1) * G / N).
inline FlatSequences rank_share(const FlatSequences& all, int rank, int world) {
  const int64_t groups = all.view().count / 2;
  FlatSequences mine;
  for (int64_t g = groups * rank / world; g < groups * (rank + 1) / world; ++g) {
    for (int64_t i = 2 * g; i < 2 * g + 2; ++i) {
      const int32_t* p = all.view().sequence(i);
      mine.add(std::vector<int32_t>(p, p + all.view().length(i)));
    }
  }
  return mine;
}

inline train::TrainerOptions dp_options() {
  train::TrainerOptions o;
  o.schedule.base_lr = 1e-3;
  o.advantages.group_size = 2;
  o.loss.importance.mode = train::ImportanceMode::truncated;
  o.micro_batch_tokens = 24;  // several micro-batches per rank
  return o;
}

}  // namespace fp8rl::test
