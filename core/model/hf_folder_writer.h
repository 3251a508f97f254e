// Writes a Hugging Face model folder from a list of tensors: one
// model.safetensors, or shards plus model.safetensors.index.json above a size
// limit, with stale files of an earlier save removed and config.json written
// last (atomically), so that an interrupted save into a fresh folder leaves
// nothing loadable behind. Shared by save_hf_model and the FP8 export.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "core/io/safetensors.h"

namespace fp8rl::model::detail {

struct TensorToWrite {
  std::string name;
  io::DType dtype = io::DType::f32;
  std::vector<int64_t> shape;
  size_t bytes = 0;  // the encoded size
  // The tensor's bytes, produced when its shard is written (one shard in
  // memory at a time).
  std::function<std::vector<uint8_t>()> encode;
};

// Creates the folder if needed. Holds the folder's exclusive lock
// (core/io/folder_lock.h) throughout, and first removes the temporaries that
// killed saves left. io_error on OS failures.
void write_hf_folder(const std::string& folder, const std::vector<TensorToWrite>& tensors, int64_t max_shard_bytes,
                     const io::Json& config);

}  // namespace fp8rl::model::detail
