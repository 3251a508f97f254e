// Helpers of the backward-operation tests: central finite differences of a
// float64 function and error measures.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "ops/ops_test_support.h"

namespace fp8rl::test {

// d f / d x[i] for every i, by central differences with step h * max(1, |x[i]|).
inline std::vector<double> finite_difference(const std::function<double(const std::vector<double>&)>& f,
                                             std::vector<double> x, double h = 1e-6) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i], step = h * std::max(1.0, std::fabs(x0));
    x[i] = x0 + step;
    const double up = f(x);
    x[i] = x0 - step;
    const double down = f(x);
    x[i] = x0;
    grad[i] = (up - down) / (2.0 * step);
  }
  return grad;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// max_i |a[i] - b[i]| / max_i |b[i]| (b the reference; 1 if b is all zero).
inline double relative_max_error(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return worst / (scale > 0.0 ? scale : 1.0);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace fp8rl::test
