// A policy's per-layer attention scales (the FP8 KV cache's and FP8
// attention's Q, K and V scales) as the CLI holds them: read from and put
// into a policy, and kept in a small JSON file of a run folder.
#ifndef FP8RL_TOOLS_ATTENTION_SCALES_H
#define FP8RL_TOOLS_ATTENTION_SCALES_H

#include <string>
#include <vector>

#include "handles.h"

namespace fp8rl_cli {

struct AttentionScaleSet {
  std::vector<float> q, k, v;  // [layers] each
};

AttentionScaleSet get_attention_scales(const Policy& policy);
void set_attention_scales(const Policy& policy, const AttentionScaleSet& scales);
// {"q": [...], "k": [...], "v": [...]}, each value exact (17 digits); written atomically.
void write_attention_scales(const std::string& path, const AttentionScaleSet& scales);
// Throws LibraryError naming the file for a missing or malformed one.
AttentionScaleSet read_attention_scales(const std::string& path);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_ATTENTION_SCALES_H
