#include "core/train/checkpoint_set.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <system_error>

#include "core/io/atomic_file.h"
#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "kernels/error.h"

namespace fp8rl::train {
namespace {

constexpr const char* kManifestFormat = "fp8rl.training_state_set";
constexpr const char* kShardFormat = "fp8rl.optimizer_shard";
constexpr const char* kFormatVersion = "1";
constexpr size_t kMaxManifestJson = 1u << 20;

using Metadata = std::map<std::string, std::string, std::less<>>;

[[noreturn]] void corrupt(const std::string& file, const std::string& why) {
  fail(Status::corrupt_data, file + ": " + why);
}

const std::string& metadata_value(const io::SafetensorsReader& reader, const char* key) {
  const auto found = reader.metadata().find(key);
  if (found == reader.metadata().end()) corrupt(reader.path(), "missing metadata key \"" + std::string(key) + "\"");
  return found->second;
}

void check_format(const io::SafetensorsReader& reader, const char* format) {
  if (metadata_value(reader, "format") != format)
    corrupt(reader.path(), "metadata \"format\" is not \"" + std::string(format) + "\"");
  if (metadata_value(reader, "format_version") != kFormatVersion)
    corrupt(reader.path(), "unknown \"format_version\" (this library reads version " + std::string(kFormatVersion) + ")");
}

int64_t parse_count(const io::SafetensorsReader& reader, const char* key) {
  const std::string& text = metadata_value(reader, key);
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || value < 0)
    corrupt(reader.path(), "metadata \"" + std::string(key) + "\" is \"" + text + "\", expected an integer >= 0");
  return value;
}

// A file name the manifest may name: one path component, no "..".
void check_file_name(const std::string& manifest, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    corrupt(manifest, "\"" + name + "\" is not a file name in the manifest's folder");
}

ShardEntry parse_shard(const std::string& manifest, const io::Json& entry) {
  if (!entry.is_array() || entry.size() != 3 || !entry.at(0).is_string() || !entry.at(1).is_int64() ||
      !entry.at(2).is_int64())
    corrupt(manifest, "metadata \"shards\": each entry must be [file, begin, end]");
  ShardEntry shard{entry.at(0).as_string(), entry.at(1).as_int64(), entry.at(2).as_int64()};
  check_file_name(manifest, shard.file);
  return shard;
}

std::string file_in(const std::string& path, const std::string& name) {
  return (std::filesystem::path(set_folder(path)) / name).string();
}

// Removes "<name>.<set>.weights.safetensors" and "<name>.<set>.rank<r>.safetensors"
// of every set but `keep`. Best effort: a file that cannot be removed costs disk only.
void remove_other_sets(const std::string& path, const std::string& keep) {
  const std::string prefix = std::filesystem::path(path).filename().string() + ".";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(set_folder(path), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.rfind(".safetensors") != name.size() - 12) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || rest.substr(0, dot) == keep) continue;
    const std::string kind = rest.substr(dot + 1);
    if (kind == "weights.safetensors" || kind.rfind("rank", 0) == 0) std::filesystem::remove(entry.path(), error);
  }
}

}  // namespace

std::string set_folder(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path().string() : ".";
}

bool is_checkpoint_set(const std::string& path) {
  const io::SafetensorsReader reader(path);
  const auto found = reader.metadata().find("format");
  return found != reader.metadata().end() && found->second == kManifestFormat;
}

std::string new_set_id() {
  const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(nanoseconds);
  char text[kSetIdLength + 1];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
  return text;
}

std::string weights_file_name(const std::string& path, const std::string& set) {
  return std::filesystem::path(path).filename().string() + "." + set + ".weights.safetensors";
}

std::string shard_file_name(const std::string& path, const std::string& set, int rank) {
  return std::filesystem::path(path).filename().string() + "." + set + ".rank" + std::to_string(rank) + ".safetensors";
}

void write_moment_shard(const std::string& file, const std::string& set, int64_t begin,
                        const std::vector<float>& exp_avg, const std::vector<float>& exp_avg_sq) {
  const auto count = static_cast<int64_t>(exp_avg.size());
  require(exp_avg_sq.size() == exp_avg.size(), "optimizer shard: exp_avg and exp_avg_sq differ in size");
  const Metadata metadata{{"format", kShardFormat},
                          {"format_version", kFormatVersion},
                          {"set", set},
                          {"begin", std::to_string(begin)},
                          {"end", std::to_string(begin + count)}};
  io::write_safetensors(file,
                        {{"exp_avg", io::DType::f32, {count}, exp_avg.data(), exp_avg.size() * sizeof(float)},
                         {"exp_avg_sq", io::DType::f32, {count}, exp_avg_sq.data(), exp_avg_sq.size() * sizeof(float)}},
                        metadata);
}

void commit_manifest(const std::string& path, const CheckpointManifest& manifest) {
  std::vector<io::Json> shards;
  for (const ShardEntry& shard : manifest.shards)
    shards.push_back(io::Json::array({io::Json::string(shard.file), io::Json::integer(shard.begin),
                                      io::Json::integer(shard.end)}));
  const Metadata metadata{{"format", kManifestFormat},
                          {"format_version", kFormatVersion},
                          {"set", manifest.set},
                          {"arena_elements", std::to_string(manifest.arena_elements)},
                          {"weights", manifest.weights},
                          {"shards", io::write_json(io::Json::array(std::move(shards)))}};
  io::write_safetensors(path, {}, metadata);
  remove_other_sets(path, manifest.set);
  // Temporaries of writes a killed save abandoned: of the manifest and of any
  // set's files (every rank's writes of this set are complete by now).
  const std::string manifest_name = std::filesystem::path(path).filename().string();
  io::remove_abandoned_temporaries(set_folder(path), [&](const std::string& target) {
    return target == manifest_name || target.rfind(manifest_name + ".", 0) == 0;
  });
}

CheckpointManifest read_manifest(const std::string& path) {
  const io::SafetensorsReader reader(path);
  check_format(reader, kManifestFormat);
  CheckpointManifest manifest;
  manifest.set = metadata_value(reader, "set");
  manifest.arena_elements = parse_count(reader, "arena_elements");
  manifest.weights = metadata_value(reader, "weights");
  check_file_name(path, manifest.weights);
  const io::Json shards = io::parse_json(metadata_value(reader, "shards"), path + ": metadata \"shards\"",
                                         io::JsonLimits{kMaxManifestJson, 4});
  if (!shards.is_array() || shards.size() == 0) corrupt(path, "metadata \"shards\" must be a non-empty array");
  int64_t next = 0;
  for (const io::Json& entry : shards.elements()) {
    ShardEntry shard = parse_shard(path, entry);
    if (shard.begin != next || shard.end < shard.begin || shard.end > manifest.arena_elements)
      corrupt(path, "metadata \"shards\": the ranges do not tile [0, arena_elements)");
    next = shard.end;
    manifest.shards.push_back(std::move(shard));
  }
  if (next != manifest.arena_elements) corrupt(path, "metadata \"shards\": the ranges end before arena_elements");
  return manifest;
}

void read_moment_range(const std::string& path, const CheckpointManifest& manifest, int64_t begin, int64_t end,
                       std::vector<float>& exp_avg, std::vector<float>& exp_avg_sq) {
  require(0 <= begin && begin <= end && end <= manifest.arena_elements,
          path + ": the shard [" + std::to_string(begin) + ", " + std::to_string(end) + ") is outside the arena of " +
              std::to_string(manifest.arena_elements) + " elements the checkpoint holds");
  exp_avg.assign(static_cast<size_t>(end - begin), 0.0f);
  exp_avg_sq.assign(static_cast<size_t>(end - begin), 0.0f);
  for (const ShardEntry& shard : manifest.shards) {
    const int64_t from = std::max(begin, shard.begin), to = std::min(end, shard.end);
    if (from >= to) continue;
    const io::SafetensorsReader reader(file_in(path, shard.file));
    check_format(reader, kShardFormat);
    if (metadata_value(reader, "set") != manifest.set) corrupt(reader.path(), "belongs to another checkpoint set");
    if (parse_count(reader, "begin") != shard.begin || parse_count(reader, "end") != shard.end)
      corrupt(reader.path(), "holds another range than the manifest names");
    for (auto [name, out] : {std::pair{"exp_avg", &exp_avg}, std::pair{"exp_avg_sq", &exp_avg_sq}}) {
      const io::SafetensorsTensor* tensor = reader.find(name);
      if (tensor == nullptr || tensor->dtype != io::DType::f32 ||
          tensor->shape != std::vector<int64_t>{shard.end - shard.begin})
        corrupt(reader.path(), std::string("tensor '") + name + "' is missing or not F32 [end - begin]");
      float* destination = out->data() + (from - begin);
      reader.read(*tensor, static_cast<size_t>(from - shard.begin) * sizeof(float), destination,
                  static_cast<size_t>(to - from) * sizeof(float));
      for (int64_t i = 0; i < to - from; ++i)
        if (!std::isfinite(destination[i]))
          fail(Status::non_finite, reader.path() + ": tensor '" + name + "' element " +
                                       std::to_string(from - shard.begin + i) + " is not finite");
    }
  }
}

}  // namespace fp8rl::train
