// A data-parallel checkpoint: one set of files the ranks write together,
// made atomic by a manifest written last. At `path`:
//   <path>                            the manifest, by rank 0 after every
//                                     other file of the set is complete: a
//                                     safetensors file of metadata only
//                                     ("format": "fp8rl.training_state_set",
//                                     "format_version": "1", "set": the set's
//                                     id, "arena_elements": the flat
//                                     parameter arena's length, "weights":
//                                     the weights file, "shards": JSON
//                                     [[file, begin, end], ...] by rank);
//   <path>.<set>.weights.safetensors  by rank 0: the training state without
//                                     optimizer moments (training_state.h);
//   <path>.<set>.rank<r>.safetensors  by rank r: its optimizer shard, the
//                                     elements [begin, end) of the flat arena
//                                     (ArenaLayout) of "exp_avg" and
//                                     "exp_avg_sq", F32 [end - begin].
// Files are named relative to the manifest's folder, which every rank must
// reach (a shared file system). A run killed mid-save leaves the previous
// manifest, which names only the previous set's files; the files of a set no
// manifest names are removed by the next complete save.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fp8rl::train {

struct ShardEntry {
  std::string file;  // relative to the manifest's folder
  int64_t begin = 0, end = 0;
};

struct CheckpointManifest {
  std::string set;
  int64_t arena_elements = 0;
  std::string weights;             // relative to the manifest's folder
  std::vector<ShardEntry> shards;  // by rank: consecutive ranges from 0 to arena_elements
};

// True when the file at path is a manifest (a plain training state is not);
// io_error / corrupt_data when it is neither readable nor safetensors.
bool is_checkpoint_set(const std::string& path);

// A fresh set id of kSetIdLength hex digits, from the time and random bits:
// never reused by another save.
inline constexpr size_t kSetIdLength = 16;
std::string new_set_id();
std::string weights_file_name(const std::string& path, const std::string& set);  // file name only
std::string shard_file_name(const std::string& path, const std::string& set, int rank);
// The folder the set's files live in.
std::string set_folder(const std::string& path);

// Writes a rank's optimizer shard, [end - begin] values each (atomically).
void write_moment_shard(const std::string& file, const std::string& set, int64_t begin,
                        const std::vector<float>& exp_avg, const std::vector<float>& exp_avg_sq);
// Writes the manifest (atomically), then removes the files of every other set
// at path and the temporaries that killed writes of any set left behind.
void commit_manifest(const std::string& path, const CheckpointManifest& manifest);
// Reads and checks a manifest: corrupt_data naming the key for anything
// malformed, ranges that do not tile [0, arena_elements) included.
CheckpointManifest read_manifest(const std::string& path);
// The moments of arena elements [begin, end) from the shard files that hold
// them (only those are read): [end - begin] each. corrupt_data naming the
// file for a shard of another set, range or size, or non-finite values.
void read_moment_range(const std::string& path, const CheckpointManifest& manifest, int64_t begin, int64_t end,
                       std::vector<float>& exp_avg, std::vector<float>& exp_avg_sq);

}  // namespace fp8rl::train
