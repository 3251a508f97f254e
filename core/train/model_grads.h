// The gradient of every parameter tensor of a model, FP32 in backend memory:
// one buffer per tensor of model::ModelParams, in for_each_tensor order (the
// optimizer's slot order). The backward pass accumulates into them (+=) over
// the micro-batches of a step; download() brings them to the host for
// clipping and the optimizer.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "core/model/model_params.h"
#include "core/policy/device_array.h"

namespace fp8rl::train {

class ModelGrads {
 public:
  ModelGrads(Backend& backend, model::ModelParams& params);

  // Re-associates the buffers with the tensors of `params` (same config), for
  // after the parameters object was replaced.
  void bind(model::ModelParams& params);
  void zero();
  // The gradient buffer of `tensor`, one of the bound params' tensors
  // ([tensor size] FP32); null for an empty tensor (absent in this config).
  float* of(const model::HostTensor& tensor);

  size_t num_slots() const { return buffers_.size(); }
  // host[i] = slot i's gradient (resized to fit).
  void download(std::vector<std::vector<float>>& host) const;

 private:
  Backend& backend_;
  std::vector<DeviceArray<float>> buffers_;
  std::map<const model::HostTensor*, size_t> slot_of_;
};

}  // namespace fp8rl::train
