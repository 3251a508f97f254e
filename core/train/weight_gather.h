// How data-parallel ranks share the weights an optimizer step updated.
// Each rank's FP32 masters are current only in the shard it updated; instead
// of all-gathering them (4 bytes per weight), each rank requantizes the
// compute copies of the rows it owns and the ranks all-gather those: E4M3
// codes plus 128x128 block scales for FP8 linear layers (a quarter of the
// FP32 bytes), BF16 for the other matrices, FP32 for norms and biases. A
// shard boundary never splits a 128-row band (ArenaLayout::shard_points), so
// every block is quantized whole by the one rank that owns it, exactly as a
// refit of the whole matrix would quantize it: every rank ends with bitwise
// the compute copies one rank holding all the masters would compute.
#pragma once

#include "core/dist/collectives.h"
#include "core/policy/compiled_model.h"
#include "core/train/param_arena.h"

namespace fp8rl::train {

// Refits the rows of every compute copy of `model` that this rank's shard of
// `arena` covers, from the arena's masters, then all-gathers every copy.
// `params` names the master tensors (the arena is bound to them).
void refit_and_gather_copies(policy::CompiledModel& model, const model::ModelParams& params, ParamArena& arena,
                             dist::Collectives& collectives);

}  // namespace fp8rl::train
