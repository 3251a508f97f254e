// The trainer's private parts shared by its source files (trainer.cpp, the
// iteration; trainer_checkpoint.cpp, its state and checkpoints).
#pragma once

#include <memory>

#include "core/dist/collectives.h"
#include "core/policy/calibration.h"
#include "core/train/param_arena.h"
#include "core/train/trainer.h"
#include "core/train/training_pass.h"
#include "core/train/transposed_model.h"

namespace fp8rl::train {

// The parameter arena, the backward machinery and its buffers.
struct Trainer::Engine {
  Engine(policy::Policy& policy)
      : collectives(policy.context().communicator(), policy.context().backend()),
        arena(policy.context().backend(), policy.host_tensors(), collectives.size(), collectives.rank()),
        transposed(std::make_unique<TransposedModel>(policy.context().backend(), policy.compiled())),
        transposed_recipe(policy.recipe()),
        pass(policy),
        statistics(policy.context().backend(), policy.config()) {}

  dist::Collectives collectives;
  ParamArena arena;
  std::unique_ptr<TransposedModel> transposed;
  policy::Recipe transposed_recipe;
  TrainingPass pass;
  policy::AttentionStatistics statistics;  // of the last step's training forward
};

}  // namespace fp8rl::train
