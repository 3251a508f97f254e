#include "core/model/hf_folder_writer.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/io/atomic_file.h"
#include "core/io/folder_lock.h"
#include "core/model/model_params_detail.h"
#include "kernels/error.h"

namespace fp8rl::model::detail {
namespace {

namespace fs = std::filesystem;

// Greedy in for_each_tensor order, as transformers' shard_checkpoint: a new
// shard starts when the next tensor would push the current one past the
// limit. A tensor larger than the limit gets a shard of its own.
std::vector<std::vector<const TensorToWrite*>> split_shards(const std::vector<TensorToWrite>& entries,
                                                            int64_t max_shard_bytes) {
  std::vector<std::vector<const TensorToWrite*>> shards(1);
  uint64_t current = 0;
  for (const TensorToWrite& entry : entries) {
    if (!shards.back().empty() && current + entry.bytes > static_cast<uint64_t>(max_shard_bytes)) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(&entry);
    current += entry.bytes;
  }
  return shards;
}

std::string shard_file_name(size_t index, size_t count) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return buffer;
}

void write_shard(const std::string& path, const std::vector<const TensorToWrite*>& entries) {
  std::vector<std::vector<uint8_t>> buffers;  // one shard's tensors encoded at a time
  buffers.reserve(entries.size());
  std::vector<io::SafetensorsTensorData> tensors;
  for (const TensorToWrite* entry : entries) {
    buffers.push_back(entry->encode());
    tensors.push_back({entry->name, entry->dtype, entry->shape, buffers.back().data(), buffers.back().size()});
  }
  io::write_safetensors(path, std::move(tensors), {{"format", "pt"}});
}

void write_index(const fs::path& folder, const std::vector<std::vector<const TensorToWrite*>>& shards, uint64_t total) {
  std::map<std::string, std::string> weight_map;  // sorted by tensor name, as transformers writes it
  for (size_t s = 0; s < shards.size(); ++s) {
    for (const TensorToWrite* entry : shards[s]) weight_map[entry->name] = shard_file_name(s, shards.size());
  }
  std::vector<io::Json::Member> members;
  for (const auto& [name, file] : weight_map) members.emplace_back(name, io::Json::string(file));
  const io::Json index = io::Json::object({
      {"metadata", io::Json::object({{"total_size", io::Json::integer(static_cast<int64_t>(total))}})},
      {"weight_map", io::Json::object(std::move(members))},
  });
  io::write_file_atomically((folder / kIndexFile).string(), io::write_json(index));
}

// Files of an earlier save that a loader would otherwise pick up: the index
// or the single file of the other layout, and shards not in `keep`.
void remove_stale_files(const fs::path& folder, bool sharded, const std::set<std::string>& keep) {
  std::vector<fs::path> stale;
  if (sharded) {
    stale.push_back(folder / kSingleFile);
  } else {
    stale.push_back(folder / kIndexFile);
  }
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (is_shard_file_name(name) && keep.count(name) == 0) stale.push_back(it->path());
  }
  if (error) fail(Status::io_error, folder.string() + ": cannot list the folder: " + error.message());
  for (const fs::path& path : stale) {
    fs::remove(path, error);
    if (error) fail(Status::io_error, path.string() + ": cannot remove a stale file: " + error.message());
  }
}

// The files a save writes: their temporaries, left by a killed save, are
// removed by the next one.
bool is_saved_file_name(const std::string& name) {
  return name == kConfigFile || name == kSingleFile || name == kIndexFile || is_shard_file_name(name);
}

}  // namespace

void write_hf_folder(const std::string& folder_name, const std::vector<TensorToWrite>& tensors, int64_t max_shard_bytes,
                     const io::Json& config) {
  const fs::path folder(folder_name);
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) fail(Status::io_error, folder_name + ": cannot create the folder: " + error.message());
  const io::FolderLock lock(folder_name, io::FolderLock::Mode::exclusive);
  io::remove_abandoned_temporaries(folder_name, is_saved_file_name);

  uint64_t total = 0;
  for (const TensorToWrite& tensor : tensors) total += tensor.bytes;
  const bool sharded = total > static_cast<uint64_t>(max_shard_bytes);
  std::set<std::string> written;
  if (!sharded) {
    std::vector<const TensorToWrite*> all;
    for (const TensorToWrite& tensor : tensors) all.push_back(&tensor);
    write_shard((folder / kSingleFile).string(), all);
  } else {
    const std::vector<std::vector<const TensorToWrite*>> shards = split_shards(tensors, max_shard_bytes);
    for (size_t s = 0; s < shards.size(); ++s) {
      const std::string name = shard_file_name(s, shards.size());
      write_shard((folder / name).string(), shards[s]);
      written.insert(name);
    }
    write_index(folder, shards, total);
  }
  remove_stale_files(folder, sharded, written);
  // Last, so that a save interrupted in a fresh folder leaves no loadable
  // half model behind.
  io::write_file_atomically((folder / kConfigFile).string(), io::write_json(config));
}

}  // namespace fp8rl::model::detail
