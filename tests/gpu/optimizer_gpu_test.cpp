// The optimizer and calibration operations of the CUDA backend
// (kernels/cuda/optimizer_kernels.cu) against the CPU backend, bit for bit:
// both call kernels/common's adamw_update_element and abs_max_update, and the
// sum of squares follows reduction_order.h on both. Counts are chosen around
// the order's boundaries: partial chunks, exactly 256 chunks (one tree block),
// 257 (a second tree pass), more chunks than the reduction grid (CTAs that
// loop); values include +-0, +-Inf, NaN, subnormals and huge ones. The same
// bad calls are refused with the same messages.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

constexpr int64_t kChunk = 4096;  // reduction_order.h's chunk

const int64_t kCounts[] = {1,      255,          kChunk - 1,       kChunk,  kChunk + 1,
                           100003, 256 * kChunk, 256 * kChunk + 1, 2000003, 2048 * kChunk + 4097};

// Every 7th to 19th value replaced by a special one (the row functions' set, without NaN and Inf when `finite`).
std::vector<float> with_specials(std::vector<float> values, uint32_t seed, bool finite) {
  static const float kSpecial[] = {0.0f,   -0.0f,  1e-40f,   -3e-39f, FLT_MIN,  3.0e38f,
                                   -1e-7f, 104.5f, -FLT_MAX, NAN,     INFINITY, -INFINITY};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, std::size(kSpecial) - (finite ? 4 : 1));
  std::uniform_int_distribution<size_t> gap(7, 19);
  for (size_t i = gap(rng); i < values.size(); i += gap(rng)) values[i] = kSpecial[pick(rng)];
  return values;
}

// Normal values scaled by 2^k, k uniform in [-spread, spread] per element.
std::vector<float> random_values(int64_t count, uint32_t seed, int spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = std::ldexp(normal(rng), exponent(rng));
  return v;
}

uint64_t bits_of_double(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

void check_same_double(double cpu_value, double gpu_value, const std::string& what) {
  const bool same =
      (std::isnan(cpu_value) && std::isnan(gpu_value)) || bits_of_double(cpu_value) == bits_of_double(gpu_value);
  char values[96];
  std::snprintf(values, sizeof values, "CPU %a, GPU %a", cpu_value, gpu_value);
  CHECK_MESSAGE(same, what, ": ", values);
}

std::string thrown_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::to_string(static_cast<int>(e.status())) + " " + e.what();
  }
  return "(no exception)";
}

TEST_CASE("cuda adamw_update: bit-identical to the CPU backend over several steps, decay on and off") {
  const AdamWHyperparameters hyper{0.9, 0.999, 1e-8, 0.05};
  for (const int64_t count : {int64_t{1}, int64_t{255}, kChunk + 1, int64_t{100003}})
    for (const bool decay : {true, false}) {
      const std::vector<float> p0 = with_specials(random_values(count, 1, 4), 2, /*finite=*/true);
      const auto run = [&](Backend& b) {
        const Buffer p = to_backend(b, p0), m(b, count * sizeof(float)), v(b, count * sizeof(float));
        b.zero_fill(m.as<void>(), count * sizeof(float));
        b.zero_fill(v.as<void>(), count * sizeof(float));
        const float scales[] = {1.0f, 0.37f, 3.0f};
        for (int step = 1; step <= 3; ++step) {
          // Non-finite gradients too: the update is defined for them (NaN out), and NaN equals NaN.
          const Buffer g = to_backend(b, with_specials(random_values(count, 10 + step, 8), 20 + step, false));
          const AdamWScalars s = adamw_scalars(hyper, 1e-3 * step, step, scales[step - 1], decay);
          b.adamw_update(p.as<float>(), g.as<float>(), m.as<float>(), v.as<float>(), count, s);
        }
        std::vector<float> all = from_backend<float>(b, p, count);
        for (const Buffer* state : {&m, &v}) {
          const std::vector<float> part = from_backend<float>(b, *state, count);
          all.insert(all.end(), part.begin(), part.end());
        }
        return all;  // params, exp_avg, exp_avg_sq
      };
      check_bitwise(run(cpu()), run(gpu()),
                    "adamw_update count " + std::to_string(count) + (decay ? " decay" : " no decay"));
    }
}

TEST_CASE("cuda sum_of_squares: bit-identical to the CPU backend in reduction_order.h's order") {
  for (const int64_t count : kCounts)
    for (const int spread : {0, 20}) {
      const std::vector<float> x = with_specials(random_values(count, static_cast<uint32_t>(count), spread),
                                                 static_cast<uint32_t>(count) + 1, /*finite=*/true);
      const Buffer xc = to_backend(cpu(), x), xg = to_backend(gpu(), x);
      check_same_double(cpu().sum_of_squares(xc.as<float>(), count), gpu().sum_of_squares(xg.as<float>(), count),
                        "sum_of_squares count " + std::to_string(count) + " spread " + std::to_string(spread));
    }
  // Inf and NaN propagate; a count of 0 is +0.
  std::vector<float> x = random_values(kChunk * 3, 5, 0);
  x[9000] = INFINITY;
  const Buffer inf_c = to_backend(cpu(), x), inf_g = to_backend(gpu(), x);
  check_same_double(cpu().sum_of_squares(inf_c.as<float>(), kChunk * 3),
                    gpu().sum_of_squares(inf_g.as<float>(), kChunk * 3), "sum_of_squares with Inf");
  x[100] = NAN;
  const Buffer nan_c = to_backend(cpu(), x), nan_g = to_backend(gpu(), x);
  check_same_double(cpu().sum_of_squares(nan_c.as<float>(), kChunk * 3),
                    gpu().sum_of_squares(nan_g.as<float>(), kChunk * 3), "sum_of_squares with NaN");
  check_same_double(0.0, gpu().sum_of_squares(nullptr, 0), "sum_of_squares of nothing");
}

TEST_CASE("cuda first_non_finite: the CPU backend's index, also past the reduction grid") {
  const int64_t count = 2048 * kChunk + 4097;
  const std::vector<float> clean = random_values(count, 7, 10);
  const Buffer clean_g = to_backend(gpu(), clean);
  CHECK(gpu().first_non_finite(clean_g.as<float>(), count, 1.0f) == -1);
  CHECK(gpu().first_non_finite(clean_g.as<float>(), count, 0.5f) == -1);
  for (const int64_t at : {int64_t{0}, int64_t{255}, int64_t{256}, kChunk - 1, kChunk, 256 * kChunk + 3, count - 1})
    for (const float bad : {NAN, INFINITY, -INFINITY}) {
      std::vector<float> x = clean;
      x[static_cast<size_t>(at)] = bad;
      if (at + 300 < count) x[static_cast<size_t>(at + 300)] = NAN;  // a later one, in another lane
      const Buffer xc = to_backend(cpu(), x), xg = to_backend(gpu(), x);
      for (const int64_t n : {count, at, at + 1}) {
        const int64_t expected = cpu().first_non_finite(xc.as<float>(), n, 1.0f);
        CHECK(expected == (n > at ? at : -1));
        CHECK_MESSAGE(gpu().first_non_finite(xg.as<float>(), n, 1.0f) == expected, "bad at ", at, " count ", n);
      }
    }
  // A finite value that the scale overflows.
  std::vector<float> x = clean;
  x[123457] = 3.0e38f;
  const Buffer xc = to_backend(cpu(), x), xg = to_backend(gpu(), x);
  for (const float scale : {1.0f, 1.5f, 0.25f}) {
    const int64_t expected = cpu().first_non_finite(xc.as<float>(), count, scale);
    CHECK(expected == (scale == 1.5f ? 123457 : -1));
    CHECK(gpu().first_non_finite(xg.as<float>(), count, scale) == expected);
  }
  CHECK(gpu().first_non_finite(nullptr, 0, 1.0f) == -1);
}

TEST_CASE("cuda row_abs_max: bit-identical to the CPU backend, NaN, -0 and Inf") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 31}, {3, 33}, {17, 1}, {9, 1000}, {70, 4099}, {2, 100003}};
  for (const auto& [rows, cols] : shapes) {
    const std::vector<float> x = with_specials(random_values(rows * cols, 31, 6), 32, /*finite=*/false);
    const auto run = [&](Backend& b) {
      const Buffer xb = to_backend(b, x), out(b, rows * sizeof(float));
      b.row_abs_max(xb.as<float>(), rows, cols, out.as<float>());
      return from_backend<float>(b, out, rows);
    };
    check_bitwise(run(cpu()), run(gpu()), "row_abs_max [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
}

TEST_CASE("cuda optimizer ops: the CPU backend's refusals, with the same messages") {
  const Buffer a(gpu(), 16), c(gpu(), 16), ac(cpu(), 16), cc(cpu(), 16);
  AdamWScalars bad = adamw_scalars({0.9, 0.999, 1e-8, 0.0}, 1e-3, 1, 1.0f, false);
  bad.neg_step_size = INFINITY;
  using Call = std::function<void(Backend&, float*, float*)>;
  const Call calls[] = {
      [](Backend& b, float* x, float* y) { b.adamw_update(x, y, x, nullptr, 4, AdamWScalars{}); },
      [](Backend& b, float* x, float* y) { b.adamw_update(x, y, x, y, -2, AdamWScalars{}); },
      [&](Backend& b, float* x, float* y) { b.adamw_update(x, y, x, y, 4, bad); },
      [](Backend& b, float*, float*) { b.sum_of_squares(nullptr, 4); },
      [](Backend& b, float* x, float*) { b.sum_of_squares(x, -1); },
      [](Backend& b, float*, float*) { b.first_non_finite(nullptr, 4, 1.0f); },
      [](Backend& b, float* x, float*) { b.first_non_finite(x, -5, 1.0f); },
      [](Backend& b, float* x, float*) { b.row_abs_max(x, 2, 2, nullptr); },
      [](Backend& b, float* x, float* y) { b.row_abs_max(x, -1, 2, y); },
      [](Backend& b, float* x, float* y) { b.row_abs_max(x, 2, 0, y); },
  };
  for (const Call& call : calls) {
    const std::string on_cpu = thrown_message([&] { call(cpu(), ac.as<float>(), cc.as<float>()); });
    const std::string on_gpu = thrown_message([&] { call(gpu(), a.as<float>(), c.as<float>()); });
    CHECK(on_cpu != "(no exception)");
    CHECK(on_gpu == on_cpu);
  }
}

}  // namespace
}  // namespace fp8rl::test
