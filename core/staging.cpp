#include "staging.h"

namespace fp8rl {

StagedInput::StagedInput(Backend& backend, const void* host, size_t bytes) : backend_(backend), device_(host) {
  if (backend.kind() == BackendKind::cpu) return;
  owned_ = backend.allocate(bytes);
  device_ = owned_;
  try {
    backend.upload(owned_, host, bytes);
  } catch (...) {
    backend.deallocate(owned_);
    throw;
  }
}

StagedInput::~StagedInput() {
  if (owned_) backend_.deallocate(owned_);
}

StagedOutput::StagedOutput(Backend& backend, void* host, size_t bytes)
    : backend_(backend), host_(host), bytes_(bytes), device_(host) {
  if (backend.kind() == BackendKind::cpu) return;
  owned_ = backend.allocate(bytes);
  device_ = owned_;
}

StagedOutput::~StagedOutput() {
  if (owned_) backend_.deallocate(owned_);
}

void StagedOutput::finish() {
  if (owned_) backend_.download(host_, owned_, bytes_);
}

}  // namespace fp8rl
