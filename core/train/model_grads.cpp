#include "core/train/model_grads.h"

#include <string>

namespace fp8rl::train {

ModelGrads::ModelGrads(Backend& backend, model::ModelParams& params) : backend_(backend) {
  model::for_each_tensor(params, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& tensor) {
    buffers_.emplace_back(backend, tensor.data.size());
  });
  bind(params);
}

void ModelGrads::bind(model::ModelParams& params) {
  slot_of_.clear();
  size_t slot = 0;
  model::for_each_tensor(params, [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& tensor) {
    require(slot < buffers_.size() && buffers_[slot].size() == tensor.data.size(),
            "gradients: tensor " + name + " does not match the model the gradients were made for");
    slot_of_[&tensor] = slot++;
  });
  require(slot == buffers_.size(), "gradients: the model has fewer tensors than the gradients");
}

void ModelGrads::zero() {
  for (DeviceArray<float>& buffer : buffers_) backend_.zero_fill(buffer.data(), buffer.size() * sizeof(float));
}

float* ModelGrads::of(const model::HostTensor& tensor) {
  if (tensor.empty()) return nullptr;
  const auto it = slot_of_.find(&tensor);
  if (it == slot_of_.end()) fail(Status::internal, "gradients: a tensor outside the bound parameters");
  return buffers_[it->second].data();
}

void ModelGrads::download(std::vector<std::vector<float>>& host) const {
  host.resize(buffers_.size());
  for (size_t i = 0; i < buffers_.size(); ++i) {
    host[i].resize(buffers_[i].size());
    buffers_[i].download(host[i].data(), host[i].size());
  }
}

}  // namespace fp8rl::train
