#!/usr/bin/env python3
"""Independent oracle for fp8rl's FP8 (E4M3 "e4m3fn", E5M2) and BF16 conversions.

The expected bits come from ml_dtypes (float8_e4m3fn, float8_e5m2, bfloat16)
through numpy, never from fp8rl. ml_dtypes' casts round to nearest even and do
NOT saturate: overflow gives NaN for e4m3fn (no Inf) and Inf for e5m2 / bf16.
The C++ tests derive the saturating expectation from that themselves.

Usage: fp8_oracle.py OUTPUT_PATH

Writes one little-endian binary file (read by tests/numerics/oracle_data.cpp):
  magic     8 bytes  b"FP8ORCL1"
  n         uint64   number of input values (>= 10^6)
  inputs    uint32[n]  float32 bit patterns (bits, so NaN payloads survive)
  e4m3      uint8[n]   ml_dtypes float8_e4m3fn encoding of each input
  e5m2      uint8[n]   ml_dtypes float8_e5m2 encoding
  bf16      uint16[n]  ml_dtypes bfloat16 encoding
  category  uint8[n]   where the input came from (CATEGORIES below), for messages
  e4m3_table float32[256]  ml_dtypes decoding of every E4M3 code
  e5m2_table float32[256]  ml_dtypes decoding of every E5M2 code

Exit status 2 with a message on stderr when numpy or ml_dtypes is missing, so
the C++ test can fail with a clear reason instead of skipping.
"""
import struct
import sys
import warnings

try:
    import numpy as np
    import ml_dtypes
except ImportError as error:  # the test must fail loudly, not skip
    sys.stderr.write(f"fp8_oracle.py: cannot import numpy/ml_dtypes ({error}); install them "
                     f"for {sys.executable} (pip install numpy ml_dtypes)\n")
    sys.exit(2)

MAGIC = b"FP8ORCL1"
SEED = 20240611  # fixed: a failure must reproduce
CATEGORIES = {"edge": 0, "random_bits": 1, "scaled_normal": 2, "near_binade": 3, "near_fp8_tie": 4,
              "tie_shaped": 5, "near_bf16_overflow": 6}

F32 = np.float32
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
BF16 = ml_dtypes.bfloat16


def bits_to_f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(F32)


def f32_to_bits(values):
    return np.asarray(values, dtype=F32).view(np.uint32)


def neighbours(values, ulps):
    """values shifted by -ulps..+ulps float32 ulps (nextafter steps), as bits."""
    values = np.asarray(values, dtype=F32)
    out = [values]
    up, down = values.copy(), values.copy()
    for _ in range(ulps):
        up = np.nextafter(up, F32(np.inf))
        down = np.nextafter(down, F32(-np.inf))
        out += [up, down]
    return f32_to_bits(np.concatenate(out))


def code_table(dtype):
    return np.arange(256, dtype=np.uint8).view(dtype).astype(F32)


def finite_positive_grid(dtype):
    table = code_table(dtype)[:128]
    return np.unique(table[np.isfinite(table)])


def midpoints(grid):
    """Exact midpoints between consecutive grid values (exact in float32)."""
    return ((grid[:-1].astype(np.float64) + grid[1:].astype(np.float64)) / 2).astype(F32)


def edge_cases():
    """Hand-listed values at the corners of all three formats."""
    p = lambda e: np.ldexp(1.0, e)
    named = [
        0.0, -0.0, np.inf, -np.inf,
        # E4M3: max, overflow tie 464 (-> 448 by even), above it, 480, min normal, subnormals
        448, 464, 480, 449, 500, 1e6, p(-6), p(-9), 7 * p(-9), p(-10), 1.5 * p(-9), 2.5 * p(-9),
        3.5 * p(-9), 7.5 * p(-9), 0.75 * p(-9), 0.25 * p(-9),
        # E5M2: max, overflow tie 61440 (-> Inf by even), 65536, min normal, subnormals
        57344, 61440, 60000, 65536, p(-14), p(-16), 3 * p(-16), p(-17), 1.5 * p(-16), 2.5 * p(-16),
        # BF16 ties: 1 + 2^-8 (-> 1, even), 1 + 3 * 2^-8 (-> up, even)
        1 + p(-8), 1 + 3 * p(-8), 1.0, 3.0,
        # fp32 corners: subnormals, min normal, max
        p(-149), p(-127), p(-126), np.finfo(F32).max, float(np.nextafter(F32(p(-126)), F32(0))),
    ]
    values = np.array(named + [-v for v in named], dtype=F32)
    special_bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF,  # NaNs
                             0x7F7F8000, 0x7F7F7FFF, 0xFF7F8000,  # bf16 overflow tie / below it
                             0x00000001, 0x80000001, 0x007FFFFF], dtype=np.uint32)
    parts = [neighbours(values, 2), special_bits]
    for dtype in (E4M3, E5M2):
        grid = finite_positive_grid(dtype)
        grid = np.concatenate([grid, -grid])
        parts += [neighbours(grid, 1), neighbours(midpoints(np.sort(grid)), 2)]
    return np.concatenate(parts)


def random_bits(rng, n):
    return rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)


def scaled_normals(rng, n):
    """Gaussians times 2^k, k across both FP8 ranges and a margin on each side."""
    scales = np.ldexp(1.0, rng.integers(-45, 46, size=n))
    return f32_to_bits((rng.standard_normal(n) * scales).astype(F32))


def near_binades(rng, n):
    """+-2^e shifted by up to 3 float32 ulps: the carry and exponent-change paths."""
    exps = rng.integers(-150, 128, size=n)
    signs = np.where(rng.integers(0, 2, size=n) == 1, -1.0, 1.0)
    base = f32_to_bits((signs * np.ldexp(1.0, exps)).astype(F32)).astype(np.int64)
    shifted = base + rng.integers(-3, 4, size=n)
    return np.clip(shifted, 0, 2**32 - 1).astype(np.uint32)


def near_fp8_ties(rng, n):
    """Random picks among the exact FP8 rounding midpoints (incl. the overflow
    ones, 464 and 61440), moved by up to 2 float32 ulps."""
    pool = []
    for dtype, overflow_tie in ((E4M3, 464.0), (E5M2, 61440.0)):
        grid = finite_positive_grid(dtype)
        pool += [midpoints(grid), np.array([overflow_tie], dtype=F32)]
    pool = np.concatenate(pool)
    picks = pool[rng.integers(0, pool.size, size=n)] * np.where(rng.integers(0, 2, size=n) == 1, -1, 1)
    base = f32_to_bits(picks.astype(F32)).astype(np.int64)
    return (base + rng.integers(-2, 3, size=n)).astype(np.uint32)


def tie_shaped(rng, n):
    """Random exponent and top bits, with the bits below the kept mantissa set to
    exactly half (a tie) or one step off: for E4M3 (3 kept), E5M2 (2) and BF16 (7)."""
    out = []
    for kept in (3, 2, 7):
        m = n // 3
        dropped = 23 - kept
        sign = rng.integers(0, 2, size=m, dtype=np.uint64).astype(np.uint32) << 31
        exponent = rng.integers(90, 160, size=m, dtype=np.uint64).astype(np.uint32) << 23
        top = rng.integers(0, 2**kept, size=m, dtype=np.uint64).astype(np.uint32) << dropped
        half = np.uint32(1 << (dropped - 1))
        offset = rng.integers(-1, 2, size=m).astype(np.int64)
        low = (np.int64(half) + offset).astype(np.uint32)
        out.append(sign | exponent | top | low)
    return np.concatenate(out)


def near_bf16_overflow(rng, n):
    """The top float32 binade, where BF16 rounding overflows to Inf (from 0x7F7F8000 up)."""
    sign = rng.integers(0, 2, size=n, dtype=np.uint64).astype(np.uint32) << 31
    return sign | rng.integers(0x7F7F0000, 0x7F800000, size=n, dtype=np.uint64).astype(np.uint32)


def build_inputs():
    rng = np.random.default_rng(SEED)
    parts = [("edge", edge_cases()), ("random_bits", random_bits(rng, 300_000)),
             ("scaled_normal", scaled_normals(rng, 300_000)), ("near_binade", near_binades(rng, 200_000)),
             ("near_fp8_tie", near_fp8_ties(rng, 150_000)), ("tie_shaped", tie_shaped(rng, 150_000)),
             ("near_bf16_overflow", near_bf16_overflow(rng, 20_000))]
    bits = np.concatenate([p for _, p in parts]).astype(np.uint32)
    category = np.concatenate([np.full(p.size, CATEGORIES[name], dtype=np.uint8) for name, p in parts])
    return bits, category


def encode(bits, dtype, code_dtype):
    return bits_to_f32(bits).astype(dtype).view(code_dtype)


def check_assumptions():
    """Guards the oracle's own premises: if ml_dtypes ever started saturating or
    changed rounding, the C++ expectations derived here would silently shift."""
    cast = lambda v, d: np.array([v], dtype=F32).astype(d).view(np.uint8)[0]
    assert cast(464.0, E4M3) == 0x7E, "ml_dtypes: 464 should round (tie, even) to 448"
    assert cast(480.0, E4M3) & 0x7F == 0x7F, "ml_dtypes e4m3fn overflow should be NaN (non-saturating)"
    assert cast(61440.0, E5M2) == 0x7C, "ml_dtypes e5m2: 61440 should round (tie, even) to Inf"
    assert cast(2.0**-10, E4M3) == 0x00, "ml_dtypes: half the min subnormal should round to 0 (even)"
    assert np.array([1 + 2.0**-8], dtype=F32).astype(BF16).view(np.uint16)[0] == 0x3F80


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: fp8_oracle.py OUTPUT_PATH\n")
        return 1
    warnings.simplefilter("ignore")  # NaN/overflow casts are the point, not a problem
    check_assumptions()
    bits, category = build_inputs()
    assert bits.size >= 1_000_000
    with np.errstate(all="ignore"):
        arrays = [bits.astype("<u4"), encode(bits, E4M3, np.uint8), encode(bits, E5M2, np.uint8),
                  encode(bits, BF16, np.uint16).astype("<u2"), category,
                  code_table(E4M3).astype("<f4"), code_table(E5M2).astype("<f4")]
    with open(sys.argv[1], "wb") as out:
        out.write(MAGIC + struct.pack("<Q", bits.size))
        for array in arrays:
            out.write(np.ascontiguousarray(array).tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
