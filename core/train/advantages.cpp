#include "core/train/advantages.h"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/error.h"

namespace fp8rl::train {

void group_advantages(const float* rewards, int64_t num_sequences, const AdvantageOptions& options, float* advantages) {
  const int64_t g = options.group_size;
  require(g >= 1, "advantages: group_size must be >= 1, got " + std::to_string(g));
  require(num_sequences >= 1, "advantages: num_sequences must be >= 1, got " + std::to_string(num_sequences));
  require(num_sequences % g == 0, "advantages: num_sequences (" + std::to_string(num_sequences) +
                                      ") must be a multiple of group_size (" + std::to_string(g) + ")");
  const auto baseline = static_cast<int32_t>(options.baseline);
  require(baseline == 0 || baseline == 1,
          "advantages: baseline must be group_mean or leave_one_out, got " + std::to_string(baseline));
  require(options.baseline != AdvantageBaseline::leave_one_out || g >= 2,
          "advantages: the leave-one-out baseline needs group_size >= 2");
  require(std::isfinite(options.epsilon) && options.epsilon >= 0.0,
          "advantages: epsilon must be finite and >= 0, got " + std::to_string(options.epsilon));
  require(rewards != nullptr && advantages != nullptr, "advantages: rewards and advantages must not be null");
  for (int64_t i = 0; i < num_sequences; ++i) {
    if (!std::isfinite(rewards[i])) {
      fail(Status::non_finite,
           "advantages: rewards[" + std::to_string(i) + "] is " + (std::isnan(rewards[i]) ? "NaN" : "infinite"));
    }
  }

  std::vector<double> deviation(static_cast<size_t>(g));  // r_i - r_first: exactly 0 for equal rewards
  for (int64_t group = 0; group < num_sequences / g; ++group) {
    const float* r = rewards + group * g;
    const double first = r[0];
    double sum = 0.0;
    for (int64_t i = 0; i < g; ++i) {
      deviation[static_cast<size_t>(i)] = static_cast<double>(r[i]) - first;
      sum += deviation[static_cast<size_t>(i)];
    }
    const double mean = sum / static_cast<double>(g);  // mean(group) - r_first
    double scale = 1.0;
    if (options.normalize_by_std) {
      double squares = 0.0;
      for (int64_t i = 0; i < g; ++i) {
        const double d = deviation[static_cast<size_t>(i)] - mean;
        squares += d * d;
      }
      const double divisor = options.sample_std ? static_cast<double>(g - 1) : static_cast<double>(g);
      const double std_dev = divisor > 0.0 ? std::sqrt(squares / divisor) : 0.0;
      scale = 1.0 / (std_dev + options.epsilon);
    }
    for (int64_t i = 0; i < g; ++i) {
      const double d = deviation[static_cast<size_t>(i)];
      // Leave-one-out: mean of the others = (sum - d) / (G - 1) around r_first.
      const double base =
          options.baseline == AdvantageBaseline::group_mean ? mean : (sum - d) / static_cast<double>(g - 1);
      const double a = d - base;
      // a == 0 covers equal rewards with epsilon == 0 (0 * inf would be NaN).
      advantages[group * g + i] = static_cast<float>(a == 0.0 ? 0.0 : a * scale);
    }
  }
}

void broadcast_to_tokens(const float* per_sequence, const int64_t* offsets, int64_t count, float* per_token) {
  require(count >= 1, "advantages: broadcast needs count >= 1, got " + std::to_string(count));
  require(per_sequence != nullptr && offsets != nullptr && per_token != nullptr,
          "advantages: broadcast arrays must not be null");
  require(offsets[0] == 0, "advantages: offsets[0] must be 0, got " + std::to_string(offsets[0]));
  for (int64_t s = 0; s < count; ++s) {
    require(offsets[s + 1] >= offsets[s],
            "advantages: offsets must be non-decreasing at sequence " + std::to_string(s));
    if (!std::isfinite(per_sequence[s])) {
      fail(Status::non_finite, "advantages: per-sequence value " + std::to_string(s) + " is not finite");
    }
  }
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) per_token[t] = per_sequence[s];
  }
}

}  // namespace fp8rl::train
