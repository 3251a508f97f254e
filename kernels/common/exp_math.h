// exp(x) in single precision, computed the same way on every device.
//
// Library expf differs between glibc and CUDA in the last bit, and glibc's does
// not vectorize without -ffast-math. This one is built from IEEE multiplies and
// adds (float_rn.h) and integer bit operations, without branches, so CPU loops
// vectorize and CPU and GPU agree bit for bit. Accuracy: within 2 ulp of the
// exact value over the whole range (tests/ops check it against float64 exp).
//
// Method (Cephes expf): x = n ln2 + r with n = round(x / ln2), ln2 split in
// two so that r is exact enough; exp(r) = 1 + r + r^2 P(r) with P of degree 5 on
// |r| <= ln2 / 2; the result scaled by 2^n as two factors 2^(n/2) 2^(n - n/2),
// each a normal float, so results in the subnormal range come out right.
#pragma once

#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

FP8RL_HD float exp_f32(float x) {
  const bool nan = !(x == x);
  // Past these bounds exp is 0 or Inf in float; clamping keeps n in range.
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  xc = nan ? 0.0f : xc;
  // n = round-to-nearest(x log2(e)) by the 1.5 * 2^23 trick: |x log2 e| < 2^22.
  const float kMagic = 12582912.0f;
  const float t = add_rn(mul_rn(xc, 1.44269504088896341f), kMagic);
  const float n = sub_rn(t, kMagic);
  const int32_t ni = static_cast<int32_t>(float_bits(t) - float_bits(kMagic));
  const float r = sub_rn(sub_rn(xc, mul_rn(n, 0.693359375f)), mul_rn(n, -2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = add_rn(mul_rn(p, r), 1.3981999507e-3f);
  p = add_rn(mul_rn(p, r), 8.3334519073e-3f);
  p = add_rn(mul_rn(p, r), 4.1665795894e-2f);
  p = add_rn(mul_rn(p, r), 1.6666665459e-1f);
  p = add_rn(mul_rn(p, r), 5.0000001201e-1f);
  const float y = add_rn(add_rn(mul_rn(p, mul_rn(r, r)), r), 1.0f);
  const int32_t n1 = ni >> 1;  // arithmetic shift: floor(n / 2)
  const int32_t n2 = ni - n1;
  const float scale1 = bits_float(static_cast<uint32_t>(n1 + 127) << 23);
  const float scale2 = bits_float(static_cast<uint32_t>(n2 + 127) << 23);
  const float result = mul_rn(mul_rn(y, scale1), scale2);
  return nan ? x : result;
}

}  // namespace fp8rl
