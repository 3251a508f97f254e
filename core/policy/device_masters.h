// A device copy of a policy's FP32 master weights that is authoritative while
// attached to the policy (a trainer's arena, core/train/param_arena.h): the
// optimizer updates it in place, refit requantizes from it without an upload,
// and the policy's host copy is brought up to date only when it is read
// (checkpoints, exports, copies). Tensors are named by reference to the
// policy's own params.
#pragma once

#include "core/model/model_params.h"

namespace fp8rl::policy {

class DeviceMasters {
 public:
  virtual ~DeviceMasters() = default;
  // host = the current masters (same config).
  virtual void download(model::ModelParams& host) const = 0;
  // The masters = host, whose tensors are from now on the ones the other calls name.
  virtual void upload(const model::ModelParams& host) = 0;
  // The tensor's masters in backend memory, [tensor size] FP32.
  virtual const float* view(const model::HostTensor& tensor) const = 0;
  // False while only part of the masters is current (a data-parallel rank
  // after a step, before the masters are gathered): download and view fail.
  virtual bool complete() const { return true; }
};

}  // namespace fp8rl::policy
