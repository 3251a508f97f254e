// The elementwise, row and layout transformer operations of the CUDA backend
// (kernels/cuda/transformer_kernels.cu), forward and backward, against the
// CPU backend, bit for bit: both call kernels/common's element and row
// functions, the RMSNorm dots run in lane_dot's 16-lane order on both, and
// the dweight / dtable accumulations add their rows / tokens in ascending
// order on both. Sizes are awkward on purpose: one row, one element, dims
// that are not multiples of 16, 32 or 128, duplicate ids and positions, and
// inputs sprinkled with +-0, +-Inf, NaN, subnormals and huge values (NaN
// equals any NaN: the GPU returns the canonical NaN).
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

std::string shape(std::initializer_list<int64_t> dims) {
  std::string text = "[";
  for (const int64_t d : dims) text += (text.size() > 1 ? ", " : "") + std::to_string(d);
  return text + "]";
}

// Every 7th to 19th value replaced by a special one.
std::vector<float> with_specials(std::vector<float> values, uint32_t seed) {
  static const float kSpecial[] = {0.0f,    -0.0f,    INFINITY, -INFINITY, NAN,    1e-40f, -3e-39f, FLT_MIN,
                                   3.0e38f, -3.0e38f, 88.5f,    -88.5f,    104.5f, -120.f, 1e-7f,   -FLT_MAX};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, std::size(kSpecial) - 1);
  std::uniform_int_distribution<size_t> gap(7, 19);
  for (size_t i = gap(rng); i < values.size(); i += gap(rng)) values[i] = kSpecial[pick(rng)];
  return values;
}

std::vector<float> random_values(int64_t count, uint32_t seed, int spread = 0) {
  return random_matrix(1, count, seed, spread);
}

template <typename T>
std::vector<T> random_indices(int64_t count, int64_t bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> index(0, bound - 1);
  std::vector<T> values(static_cast<size_t>(count));
  for (T& v : values) v = static_cast<T>(index(rng));
  return values;
}

// f(backend) on both backends, compared bit for bit.
template <typename F>
void check_same(const F& f, const std::string& what) {
  check_bitwise(f(cpu()), f(gpu()), what);
}

TEST_CASE("cuda embedding: bit-identical to the CPU backend, duplicate ids") {
  for (const int64_t vocab : {1, 37})
    for (const int64_t hidden : {1, 33, 130})
      for (const int64_t count : {1, 5, 67}) {
        const std::vector<uint16_t> table = to_bf16(with_specials(random_matrix(vocab, hidden, 1, 4), 2));
        const std::vector<int32_t> ids = random_indices<int32_t>(count, vocab, 3);
        check_same(
            [&](Backend& b) {
              const Buffer t = to_backend(b, table), i = to_backend(b, ids), out(b, count * hidden * sizeof(float));
              b.embedding(t.as<uint16_t>(), vocab, hidden, i.as<int32_t>(), count, out.as<float>());
              return from_backend<float>(b, out, count * hidden);
            },
            "embedding vocab " + std::to_string(vocab) + " " + shape({count, hidden}));
      }
}

// Shapes of the row operations: one row, one column, partial 16-lane groups,
// rows longer than a warp's stride many times over.
const std::vector<std::pair<int64_t, int64_t>> kRowShapes = {{1, 1},  {1, 15},   {3, 16},   {5, 17},   {7, 33},
                                                             {2, 63}, {9, 1000}, {2, 4099}, {1, 16411}};

TEST_CASE("cuda rms_norm: bit-identical to the CPU backend, out of place and in place") {
  for (const auto& [rows, dim] : kRowShapes)
    for (const float eps : {1e-6f, 0.0f})
      for (const bool in_place : {false, true}) {
        std::vector<float> x = random_matrix(rows, dim, 11, 3);
        if (rows > 2) x = with_specials(x, 12);
        for (int64_t c = 0; c < dim && rows > 1; ++c) x[static_cast<size_t>(dim + c)] *= 1e-39f;  // subnormal row
        const std::vector<float> weight = random_values(dim, 13);
        check_same(
            [&](Backend& b) {
              const Buffer xb = to_backend(b, x), w = to_backend(b, weight), out(b, x.size() * sizeof(float));
              const Buffer& result = in_place ? xb : out;
              b.rms_norm(xb.as<float>(), w.as<float>(), rows, dim, eps, result.as<float>());
              return from_backend<float>(b, result, x.size());
            },
            "rms_norm " + shape({rows, dim}) + " eps " + std::to_string(eps) + (in_place ? " in place" : ""));
      }
  // A row of zeros with eps 0: 0 * Inf on both sides.
  const std::vector<float> zeros(40, 0.0f), weight = random_values(40, 14);
  check_same(
      [&](Backend& b) {
        const Buffer xb = to_backend(b, zeros), w = to_backend(b, weight), out(b, 40 * sizeof(float));
        b.rms_norm(xb.as<float>(), w.as<float>(), 1, 40, 0.0f, out.as<float>());
        return from_backend<float>(b, out, 40);
      },
      "rms_norm of zeros, eps 0");
}

struct RopeShape {
  int64_t tokens, heads, head_dim;
};
const RopeShape kRopeShapes[] = {{1, 1, 2}, {9, 3, 6}, {4, 2, 66}, {17, 5, 128}, {3, 1, 258}};

template <bool kBackward>
void check_rope() {
  const int64_t table_positions = 11;
  for (const RopeShape& s : kRopeShapes) {
    const int64_t half = s.head_dim / 2, n = s.tokens * s.heads * s.head_dim;
    const std::vector<float> x = with_specials(random_values(n, 21, 3), 22);
    const std::vector<float> cos = random_values(table_positions * half, 23),
                             sin = random_values(table_positions * half, 24);
    const std::vector<int32_t> positions = random_indices<int32_t>(s.tokens, table_positions, 25);
    check_same(
        [&](Backend& b) {
          const Buffer xb = to_backend(b, x), p = to_backend(b, positions), c = to_backend(b, cos),
                       sn = to_backend(b, sin);
          if (kBackward)
            b.rope_backward(xb.as<float>(), p.as<int32_t>(), s.tokens, s.heads, s.head_dim, c.as<float>(),
                            sn.as<float>(), table_positions);
          else
            b.rope(xb.as<float>(), p.as<int32_t>(), s.tokens, s.heads, s.head_dim, c.as<float>(), sn.as<float>(),
                   table_positions);
          return from_backend<float>(b, xb, x.size());
        },
        std::string(kBackward ? "rope_backward " : "rope ") + shape({s.tokens, s.heads, s.head_dim}));
  }
}

TEST_CASE("cuda rope: bit-identical to the CPU backend, duplicate positions") { check_rope<false>(); }

TEST_CASE("cuda rope_backward: bit-identical to the CPU backend, duplicate positions") { check_rope<true>(); }

const int64_t kCounts[] = {1, 31, 1000, 100003};

TEST_CASE("cuda swiglu, add, to_bf16: bit-identical to the CPU backend, special values included") {
  for (const int64_t count : kCounts) {
    const std::vector<float> a = with_specials(random_values(count, 31, 4), 32);
    const std::vector<float> c = with_specials(random_values(count, 33, 4), 34);
    const std::string n = " count " + std::to_string(count);
    check_same(
        [&](Backend& b) {
          const Buffer g = to_backend(b, a), u = to_backend(b, c), out(b, count * sizeof(float));
          b.swiglu(g.as<float>(), u.as<float>(), count, out.as<float>());
          return from_backend<float>(b, out, count);
        },
        "swiglu" + n);
    check_same(
        [&](Backend& b) {
          const Buffer x = to_backend(b, a), y = to_backend(b, c);
          b.add(x.as<float>(), y.as<float>(), count);
          return from_backend<float>(b, x, count);
        },
        "add" + n);
    check_same(
        [&](Backend& b) {
          const Buffer x = to_backend(b, a), out(b, count * sizeof(uint16_t));
          b.to_bf16(x.as<float>(), count, out.as<uint16_t>());
          return from_backend<uint16_t>(b, out, count);
        },
        "to_bf16" + n);
  }
}

TEST_CASE("cuda swiglu_backward: bit-identical to the CPU backend, separate and aliased outputs") {
  for (const int64_t count : kCounts)
    for (const int alias : {0, 1, 2}) {  // 0: separate outputs; 1: dgate = gate, dup = up; 2: dgate = dout
      const std::vector<float> gate = with_specials(random_values(count, 41, 4), 42);
      const std::vector<float> up = with_specials(random_values(count, 43, 2), 44);
      const std::vector<float> dout = with_specials(random_values(count, 45, 2), 46);
      check_same(
          [&](Backend& b) {
            const Buffer g = to_backend(b, gate), u = to_backend(b, up), d = to_backend(b, dout);
            const Buffer dg(b, count * sizeof(float)), du(b, count * sizeof(float));
            const Buffer& dgate = alias == 1 ? g : alias == 2 ? d : dg;
            const Buffer& dup = alias == 1 ? u : du;
            b.swiglu_backward(g.as<float>(), u.as<float>(), d.as<float>(), count, dgate.as<float>(), dup.as<float>());
            std::vector<float> result = from_backend<float>(b, dgate, count);
            const std::vector<float> second = from_backend<float>(b, dup, count);
            result.insert(result.end(), second.begin(), second.end());
            return result;
          },
          "swiglu_backward count " + std::to_string(count) + " alias " + std::to_string(alias));
    }
}

TEST_CASE("cuda add_bias: bit-identical to the CPU backend") {
  for (const auto& [rows, cols] : kRowShapes) {
    const std::vector<float> x = with_specials(random_matrix(rows, cols, 51, 3), 52);
    const std::vector<float> bias = with_specials(random_values(cols, 53, 3), 54);
    check_same(
        [&](Backend& b) {
          const Buffer xb = to_backend(b, x), bb = to_backend(b, bias);
          b.add_bias(xb.as<float>(), bb.as<float>(), rows, cols);
          return from_backend<float>(b, xb, x.size());
        },
        "add_bias " + shape({rows, cols}));
  }
}

const std::pair<int64_t, int64_t> kTransposeShapes[] = {{1, 1},     {1, 70},   {70, 1},  {33, 65},
                                                        {129, 257}, {300, 47}, {32, 32}, {2, 1000}};

template <typename T>
void check_transpose(const char* name) {
  for (const auto& [rows, cols] : kTransposeShapes) {
    std::mt19937 rng(61);
    std::vector<T> x(static_cast<size_t>(rows * cols));
    for (T& v : x) v = static_cast<T>(rng());
    check_same(
        [&](Backend& b) {
          const Buffer xb = to_backend(b, x), out(b, x.size() * sizeof(T));
          b.transpose(xb.as<void>(), rows, cols, sizeof(T), out.as<void>());
          return from_backend<T>(b, out, x.size());
        },
        std::string("transpose ") + name + " " + shape({rows, cols}));
  }
}

TEST_CASE("cuda transpose: bit-identical to the CPU backend for 1, 2 and 4 byte elements") {
  check_transpose<uint8_t>("1-byte");
  check_transpose<uint16_t>("2-byte");
  check_transpose<uint32_t>("4-byte");  // random words: NaN patterns with payloads must survive
}

TEST_CASE("cuda transpose_to_bf16: bit-identical to the CPU backend") {
  for (const auto& [rows, cols] : kTransposeShapes) {
    const std::vector<float> x = with_specials(random_matrix(rows, cols, 71, 6), 72);
    check_same(
        [&](Backend& b) {
          const Buffer xb = to_backend(b, x), out(b, x.size() * sizeof(uint16_t));
          b.transpose_to_bf16(xb.as<float>(), rows, cols, out.as<uint16_t>());
          return from_backend<uint16_t>(b, out, x.size());
        },
        "transpose_to_bf16 " + shape({rows, cols}));
  }
}

TEST_CASE("cuda gather_rows: bit-identical to the CPU backend, repeated rows") {
  const int64_t source_rows = 20;
  for (const int64_t cols : {1, 33, 129})
    for (const int64_t count : {1, 7, 45}) {
      const std::vector<float> x = with_specials(random_matrix(source_rows, cols, 81, 2), 82);
      const std::vector<int64_t> rows = random_indices<int64_t>(count, source_rows, 83);
      check_same(
          [&](Backend& b) {
            const Buffer xb = to_backend(b, x), r = to_backend(b, rows), out(b, count * cols * sizeof(float));
            b.gather_rows(xb.as<float>(), cols, r.as<int64_t>(), count, out.as<float>());
            return from_backend<float>(b, out, count * cols);
          },
          "gather_rows " + shape({count, cols}));
    }
}

TEST_CASE("cuda rms_norm_backward: bit-identical dx and accumulated dweight, with dx aliasing x or dy") {
  std::vector<std::pair<int64_t, int64_t>> shapes = kRowShapes;
  shapes.push_back({300, 17});  // many chunks of rows in the dweight sum, and a tail
  shapes.push_back({37, 260});
  for (const auto& [rows, dim] : shapes)
    for (const int alias : {0, 1, 2}) {  // 0: separate dx; 1: dx = x; 2: dx = dy
      std::vector<float> x = random_matrix(rows, dim, 91, 3);
      if (rows > 2) x = with_specials(x, 92);
      const std::vector<float> weight = random_values(dim, 93);
      const std::vector<float> dy = random_matrix(rows, dim, 94, 2);
      const std::vector<float> dweight = random_values(dim, 95);  // accumulated into (+=)
      const float eps = 1e-5f;
      check_same(
          [&](Backend& b) {
            const Buffer xb = to_backend(b, x), w = to_backend(b, weight), dyb = to_backend(b, dy),
                         dw = to_backend(b, dweight), dxb(b, x.size() * sizeof(float));
            const Buffer& dx = alias == 1 ? xb : alias == 2 ? dyb : dxb;
            b.rms_norm_backward(xb.as<float>(), w.as<float>(), dyb.as<float>(), rows, dim, eps, dx.as<float>(),
                                dw.as<float>());
            std::vector<float> result = from_backend<float>(b, dx, x.size());
            const std::vector<float> dweight_out = from_backend<float>(b, dw, dim);
            result.insert(result.end(), dweight_out.begin(), dweight_out.end());
            return result;
          },
          "rms_norm_backward " + shape({rows, dim}) + " alias " + std::to_string(alias));
    }
}

TEST_CASE("cuda embedding_backward: bit-identical accumulation of duplicate ids in token order") {
  struct Case {
    int64_t vocab, hidden, count;
  };
  // vocab 1: every token on one row; [1000, 33]: 64 id slices of one CTA of
  // columns; count 2500: more tokens than one shared-memory chunk of ids.
  const Case cases[] = {{1, 1, 1},       {1, 40, 300},  {7, 33, 50},   {1000, 33, 2500},
                        {1000, 300, 70}, {50, 1, 2500}, {3, 4099, 20}, {64, 256, 1500}};
  for (const Case& c : cases) {
    const std::vector<float> dy = with_specials(random_matrix(c.count, c.hidden, 101, 3), 102);
    const std::vector<float> dtable = random_matrix(c.vocab, c.hidden, 103, 1);
    // Ids drawn from a few hot rows and the whole table, so rows repeat often.
    std::vector<int32_t> ids = random_indices<int32_t>(c.count, c.vocab, 104);
    for (size_t i = 0; i < ids.size(); i += 3) ids[i] = static_cast<int32_t>(i % 5 % c.vocab);
    check_same(
        [&](Backend& b) {
          const Buffer d = to_backend(b, dy), i = to_backend(b, ids), t = to_backend(b, dtable);
          b.embedding_backward(d.as<float>(), i.as<int32_t>(), c.count, c.vocab, c.hidden, t.as<float>());
          return from_backend<float>(b, t, dtable.size());
        },
        "embedding_backward vocab " + std::to_string(c.vocab) + " " + shape({c.count, c.hidden}));
  }
}

TEST_CASE("cuda transformer ops: a row count of 0 enqueues nothing and reads no pointer") {
  Backend& b = gpu();
  CHECK_NOTHROW(b.embedding(nullptr, 4, 8, nullptr, 0, nullptr));
  CHECK_NOTHROW(b.rms_norm(nullptr, nullptr, 0, 8, 1e-6f, nullptr));
  CHECK_NOTHROW(b.rope(nullptr, nullptr, 0, 2, 8, nullptr, nullptr, 4));
  CHECK_NOTHROW(b.swiglu(nullptr, nullptr, 0, nullptr));
  CHECK_NOTHROW(b.add(nullptr, nullptr, 0));
  CHECK_NOTHROW(b.add_bias(nullptr, nullptr, 0, 8));
  CHECK_NOTHROW(b.to_bf16(nullptr, 0, nullptr));
  CHECK_NOTHROW(b.transpose(nullptr, 0, 8, 2, nullptr));
  CHECK_NOTHROW(b.transpose_to_bf16(nullptr, 0, 8, nullptr));
  CHECK_NOTHROW(b.gather_rows(nullptr, 8, nullptr, 0, nullptr));
  CHECK_NOTHROW(b.rms_norm_backward(nullptr, nullptr, nullptr, 0, 8, 1e-6f, nullptr, nullptr));
  CHECK_NOTHROW(b.rope_backward(nullptr, nullptr, 0, 2, 8, nullptr, nullptr, 4));
  CHECK_NOTHROW(b.swiglu_backward(nullptr, nullptr, nullptr, 0, nullptr, nullptr));
  CHECK_NOTHROW(b.embedding_backward(nullptr, nullptr, 0, 4, 8, nullptr));
  CHECK_NOTHROW(b.synchronize());
}

}  // namespace
}  // namespace fp8rl::test
