// core/train AdamW (+ lr schedule, + global-norm clipping) against
// torch.optim.AdamW and torch.nn.utils.clip_grad_norm_ (tests/optim/
// adamw_torch_oracle.py, run with $FP8RL_TORCH_PYTHON). Several steps, three
// slots (a decayed matrix, an undecayed norm, an undecayed bias), the lr from
// a warmup-cosine schedule. Without torch the test exits 77 (SKIPPED).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/train/adamw.h"
#include "core/train/grad_clip.h"
#include "core/train/lr_schedule.h"
#include "tests/io/io_test_support.h"
#include "tests/support/float_bits.h"

#ifndef FP8RL_OPTIM_ORACLE_SCRIPT
#error "FP8RL_OPTIM_ORACLE_SCRIPT must name tests/optim/adamw_torch_oracle.py"
#endif

namespace {

using namespace fp8rl::train;
using fp8rl::test::bits_of;
using fp8rl::test::TempDir;

std::string torch_python() {
  const char* python = std::getenv("FP8RL_TORCH_PYTHON");
  return python && *python ? python : "/usr/bin/python3";
}

// Exits the process with 77 (ctest: SKIPPED) when torch is not importable.
void require_torch_or_skip() {
  const std::string command = "'" + torch_python() + "' -c 'import torch, numpy' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::printf("SKIPPED: %s cannot import torch and numpy (set FP8RL_TORCH_PYTHON)\n", torch_python().c_str());
    std::fflush(stdout);
    std::exit(77);
  }
}

// Distance in units in the last place between two finite floats.
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) {
    const int64_t bits = static_cast<int32_t>(bits_of(x));
    return bits < 0 ? INT64_C(-2147483648) - bits : bits;
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

struct Case {
  std::vector<size_t> sizes{48, 8, 8};  // [6, 8] matrix, [8] norm, [8] bias
  std::vector<bool> decay{true, false, false};
  AdamWOptions options;
  LrSchedule schedule;
  int steps = 6;
  double max_norm = 0.0;
};

void run_case(const Case& c) {
  require_torch_or_skip();
  const size_t total = c.sizes[0] + c.sizes[1] + c.sizes[2];
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> params(total);
  for (float& p : params) p = normal(rng);
  std::vector<std::vector<float>> grads(static_cast<size_t>(c.steps), std::vector<float>(total));
  for (auto& g : grads) {
    for (float& x : g) x = 0.5f * normal(rng);
  }
  // a zero gradient and a tiny one exercise eps and the v = 0 path
  grads[0][3] = 0.0f;
  grads[1][5] = 1e-12f;

  std::vector<double> lrs;
  for (int s = 0; s < c.steps; ++s) lrs.push_back(learning_rate(c.schedule, s));

  TempDir dir;
  {
    std::ostringstream json;
    json.precision(17);
    json << "{\"sizes\": [" << c.sizes[0] << ", " << c.sizes[1] << ", " << c.sizes[2] << "], \"decay\": [" << c.decay[0]
         << ", " << c.decay[1] << ", " << c.decay[2] << "], \"beta1\": " << c.options.beta1
         << ", \"beta2\": " << c.options.beta2 << ", \"eps\": " << c.options.eps
         << ", \"weight_decay\": " << c.options.weight_decay << ", \"max_norm\": " << c.max_norm << ", \"lrs\": [";
    for (size_t i = 0; i < lrs.size(); ++i) json << (i ? ", " : "") << lrs[i];
    json << "]}";
    std::ofstream(dir.file("config.json")) << json.str();
    std::ofstream in(dir.file("input.f32"), std::ios::binary);
    in.write(reinterpret_cast<const char*>(params.data()), static_cast<std::streamsize>(total * sizeof(float)));
    for (const auto& g : grads) {
      in.write(reinterpret_cast<const char*>(g.data()), static_cast<std::streamsize>(total * sizeof(float)));
    }
  }
  const std::string command = "'" + torch_python() + "' '" + FP8RL_OPTIM_ORACLE_SCRIPT + "' '" +
                              dir.file("config.json") + "' '" + dir.file("input.f32") + "' '" + dir.file("output.f32") +
                              "'";
  REQUIRE(std::system(command.c_str()) == 0);
  const std::vector<uint8_t> out = fp8rl::test::read_bytes(dir.file("output.f32"));
  const size_t per_step = 3 * total;
  REQUIRE(out.size() == static_cast<size_t>(c.steps) * (per_step * sizeof(float) + sizeof(double)));
  std::vector<float> expected(static_cast<size_t>(c.steps) * per_step);
  std::vector<double> torch_norms(static_cast<size_t>(c.steps));
  std::memcpy(expected.data(), out.data(), expected.size() * sizeof(float));
  std::memcpy(torch_norms.data(), out.data() + expected.size() * sizeof(float), torch_norms.size() * sizeof(double));

  AdamW opt(c.options, c.sizes);
  int64_t max_ulp[3] = {0, 0, 0};  // params, m, v
  double max_m_rel = 0.0;          // |m - m_torch| / max |m_torch| over the slot
  for (int s = 0; s < c.steps; ++s) {
    std::vector<ParamSlot> slots;
    size_t offset = 0;
    for (size_t k = 0; k < 3; ++k) {
      slots.push_back({params.data() + offset, grads[static_cast<size_t>(s)].data() + offset, c.sizes[k], c.decay[k]});
      offset += c.sizes[k];
    }
    float scale = 1.0f;
    if (c.max_norm > 0.0) {
      const GradClipResult clip = clip_grad_norm(slots, c.max_norm);
      CHECK(clip.norm == doctest::Approx(torch_norms[static_cast<size_t>(s)]).epsilon(1e-6));
      scale = clip.scale;
    }
    const AdamWStepResult r = opt.step(slots, lrs[static_cast<size_t>(s)], scale);
    REQUIRE_FALSE(r.skipped);
    const float* want = expected.data() + static_cast<size_t>(s) * per_step;
    offset = 0;
    for (size_t k = 0; k < 3; ++k) {
      const FloatSpan m = opt.exp_avg(k);
      const FloatSpan v = opt.exp_avg_sq(k);
      float m_scale = 0.0f;
      for (size_t i = 0; i < c.sizes[k]; ++i) m_scale = std::max(m_scale, std::fabs(want[total + offset + i]));
      for (size_t i = 0; i < c.sizes[k]; ++i) {
        max_m_rel = std::max(max_m_rel, std::fabs(double(m.data[i]) - want[total + offset + i]) / m_scale);
        max_ulp[0] = std::max(max_ulp[0], ulp_distance(params[offset + i], want[offset + i]));
        max_ulp[1] = std::max(max_ulp[1], ulp_distance(m.data[i], want[total + offset + i]));
        max_ulp[2] = std::max(max_ulp[2], ulp_distance(v.data[i], want[2 * total + offset + i]));
      }
      offset += c.sizes[k];
    }
  }
  MESSAGE("max ulp vs torch.optim.AdamW over " << c.steps << " steps: params " << max_ulp[0] << ", exp_avg "
                                               << max_ulp[1] << " (relative to the slot's max |m|: " << max_m_rel
                                               << "), exp_avg_sq " << max_ulp[2]);
  CHECK(max_ulp[0] <= 4);
  CHECK(max_ulp[2] <= 8);
  if (c.max_norm > 0.0) {
    // clipping: our scale comes from a double norm, torch's from a float32
    // one, so g may differ by an ulp and m = b1 m + (1 - b1) g, which cancels,
    // by many ulp of a small m; bound the error by the slot's scale instead.
    CHECK(max_m_rel <= 1e-6);
  } else {
    CHECK(max_ulp[1] <= 4);
  }
}

TEST_CASE("adamw matches torch.optim.AdamW: warmup-cosine lr, decay flags") {
  Case c;
  c.options.beta1 = 0.9;
  c.options.beta2 = 0.95;
  c.options.eps = 1e-8;
  c.options.weight_decay = 0.1;
  c.schedule.kind = LrScheduleKind::warmup_cosine;
  c.schedule.base_lr = 1e-2;
  c.schedule.warmup_steps = 2;
  c.schedule.total_steps = 6;
  c.schedule.min_lr_ratio = 0.1;
  c.steps = 8;
  run_case(c);
}

TEST_CASE("adamw matches torch.optim.AdamW: default betas, global-norm clipping") {
  Case c;
  c.options = adamw_options_defaults();
  c.schedule.kind = LrScheduleKind::constant;
  c.schedule.base_lr = 3e-3;
  c.steps = 5;
  c.max_norm = 0.5;
  run_case(c);
}

}  // namespace
