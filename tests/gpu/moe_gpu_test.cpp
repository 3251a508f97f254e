// The Mixture-of-Experts operations of the CUDA backend (kernels/cuda/
// moe_kernels.cu) against the CPU backend, bit for bit: both call
// kernels/common/moe_routing_math.h per token. Shapes: one token, one expert,
// k == experts, hidden not a multiple of 32 or 128, routers with exact ties
// (duplicate rows) and tokens crowding onto the same experts.
#include <algorithm>
#include <string>
#include <vector>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

struct RouteResult {
  std::vector<float> logits;
  std::vector<int32_t> chosen;
  std::vector<float> weights;
};

// replayed: [tokens, k] experts to use instead of the router's, or empty.
RouteResult route(Backend& b, const std::vector<float>& x, const std::vector<float>& router, int64_t tokens,
                  int64_t hidden, int64_t experts, int64_t k, bool normalize,
                  const std::vector<int32_t>& replayed = {}) {
  const Buffer xb = to_backend(b, x), rb = to_backend(b, router);
  const Buffer replay = to_backend(b, replayed.empty() ? std::vector<int32_t>{0} : replayed);
  const Buffer logits(b, static_cast<size_t>(tokens * experts) * sizeof(float));
  const Buffer chosen(b, static_cast<size_t>(tokens * k) * sizeof(int32_t));
  const Buffer weights(b, static_cast<size_t>(tokens * k) * sizeof(float));
  MoeRouteArgs args;
  args.x = xb.as<float>();
  args.router = rb.as<float>();
  args.tokens = tokens;
  args.hidden = hidden;
  args.experts = experts;
  args.top_k = k;
  args.normalize = normalize;
  args.replayed = replayed.empty() ? nullptr : replay.as<int32_t>();
  args.logits = logits.as<float>();
  args.chosen = chosen.as<int32_t>();
  args.weights = weights.as<float>();
  b.moe_route(args);
  return {from_backend<float>(b, logits, static_cast<size_t>(tokens * experts)),
          from_backend<int32_t>(b, chosen, static_cast<size_t>(tokens * k)),
          from_backend<float>(b, weights, static_cast<size_t>(tokens * k))};
}

struct RouteBackwardResult {
  std::vector<float> dlogits, dx, drouter;
};

// moe_route_backward on logits and choices `routed` gave, with random
// upstream gradients and accumulators.
RouteBackwardResult route_backward(Backend& b, const std::vector<float>& x, const std::vector<float>& router,
                                   const RouteResult& routed, int64_t tokens, int64_t hidden, int64_t experts,
                                   int64_t k, bool normalize, bool aux) {
  const std::vector<float> dweights = random_matrix(tokens, k, 31);
  const std::vector<float> aux_grad = random_matrix(1, experts, 32);
  const Buffer xb = to_backend(b, x), rb = to_backend(b, router), lb = to_backend(b, routed.logits);
  const Buffer cb = to_backend(b, routed.chosen), wb = to_backend(b, routed.weights);
  const Buffer db = to_backend(b, dweights), ab = to_backend(b, aux_grad);
  const Buffer dx = to_backend(b, random_matrix(tokens, hidden, 33));
  const Buffer drouter = to_backend(b, random_matrix(experts, hidden, 34));
  const Buffer dlogits(b, static_cast<size_t>(tokens * experts) * sizeof(float));
  MoeRouteBackwardArgs args;
  args.x = xb.as<float>();
  args.router = rb.as<float>();
  args.logits = lb.as<float>();
  args.used = cb.as<int32_t>();
  args.weights = wb.as<float>();
  args.dweights = db.as<float>();
  args.aux_grad = aux ? ab.as<float>() : nullptr;
  args.tokens = tokens;
  args.hidden = hidden;
  args.experts = experts;
  args.top_k = k;
  args.normalize = normalize;
  args.dlogits = dlogits.as<float>();
  args.dx = dx.as<float>();
  args.drouter = drouter.as<float>();
  b.moe_route_backward(args);
  return {from_backend<float>(b, dlogits, static_cast<size_t>(tokens * experts)),
          from_backend<float>(b, dx, static_cast<size_t>(tokens * hidden)),
          from_backend<float>(b, drouter, static_cast<size_t>(experts * hidden))};
}

}  // namespace

TEST_CASE("cuda moe_route_backward: dlogits, dx and drouter bit-identical to the CPU backend") {
  struct Shape {
    int64_t tokens, hidden, experts, k;
  };
  for (const Shape s : {Shape{1, 1, 1, 1}, Shape{5, 33, 4, 4}, Shape{67, 160, 8, 2}, Shape{300, 2048, 128, 8}}) {
    for (const bool normalize : {false, true}) {
      for (const bool aux : {false, true}) {
        const std::vector<float> x = random_matrix(s.tokens, s.hidden, 11, 2);
        const std::vector<float> router = random_matrix(s.experts, s.hidden, 12);
        const RouteResult routed = route(cpu(), x, router, s.tokens, s.hidden, s.experts, s.k, normalize);
        const std::string what = "moe_route_backward " + std::to_string(s.tokens) + "x" + std::to_string(s.hidden) +
                                 " experts " + std::to_string(s.experts) + " k " + std::to_string(s.k) +
                                 (normalize ? " normalized" : "") + (aux ? " aux" : "");
        const RouteBackwardResult expected =
            route_backward(cpu(), x, router, routed, s.tokens, s.hidden, s.experts, s.k, normalize, aux);
        const RouteBackwardResult actual =
            route_backward(gpu(), x, router, routed, s.tokens, s.hidden, s.experts, s.k, normalize, aux);
        check_bitwise(expected.dlogits, actual.dlogits, what + " dlogits");
        check_bitwise(expected.dx, actual.dx, what + " dx");
        check_bitwise(expected.drouter, actual.drouter, what + " drouter");
      }
    }
  }
}

TEST_CASE("cuda moe_combine_backward: bit-identical to the CPU backend") {
  for (const int64_t tokens : {1, 9, 130}) {
    for (const int64_t k : {1, 3, 8}) {
      const int64_t hidden = 161, rows = tokens * k;
      const std::vector<float> dout = random_matrix(tokens, hidden, 41, 3);
      const std::vector<float> expert_out = random_matrix(rows, hidden, 42);
      const std::vector<float> weights = random_matrix(tokens, k, 43);
      std::vector<int64_t> slots(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) slots[static_cast<size_t>(i)] = (i * 7 + 3) % rows;  // a permutation
      const auto run = [&](Backend& b) {
        const Buffer d = to_backend(b, dout), e = to_backend(b, expert_out), s = to_backend(b, slots);
        const Buffer w = to_backend(b, weights);
        const Buffer dexpert(b, static_cast<size_t>(rows * hidden) * sizeof(float));
        const Buffer dweights(b, static_cast<size_t>(rows) * sizeof(float));
        MoeCombineBackwardArgs args;
        args.dout = d.as<float>();
        args.expert_out = e.as<float>();
        args.slot_rows = s.as<int64_t>();
        args.weights = w.as<float>();
        args.tokens = tokens;
        args.hidden = hidden;
        args.top_k = k;
        args.expert_rows = rows;
        args.dexpert_out = dexpert.as<float>();
        args.dweights = dweights.as<float>();
        b.moe_combine_backward(args);
        std::vector<float> both = from_backend<float>(b, dexpert, static_cast<size_t>(rows * hidden));
        const std::vector<float> dw = from_backend<float>(b, dweights, static_cast<size_t>(rows));
        both.insert(both.end(), dw.begin(), dw.end());
        return both;
      };
      check_bitwise(run(cpu()), run(gpu()),
                    "moe_combine_backward tokens " + std::to_string(tokens) + " k " + std::to_string(k));
    }
  }
}

TEST_CASE("cuda moe_route: logits, choices and weights bit-identical to the CPU backend, ties included") {
  struct Shape {
    int64_t tokens, hidden, experts, k;
  };
  for (const Shape s : {Shape{1, 1, 1, 1}, Shape{5, 33, 4, 4}, Shape{67, 160, 8, 2}, Shape{300, 2048, 128, 8}}) {
    for (const bool normalize : {false, true}) {
      const std::vector<float> x = random_matrix(s.tokens, s.hidden, 11, 2);
      std::vector<float> router = random_matrix(s.experts, s.hidden, 12);
      if (s.experts >= 4) {  // experts 1 and 3 tie exactly
        for (int64_t h = 0; h < s.hidden; ++h) {
          router[static_cast<size_t>(3 * s.hidden + h)] = router[static_cast<size_t>(s.hidden + h)];
        }
      }
      const std::string what = "moe_route " + std::to_string(s.tokens) + "x" + std::to_string(s.hidden) + " experts " +
                               std::to_string(s.experts) + " k " + std::to_string(s.k) +
                               (normalize ? " normalized" : "");
      const RouteResult expected = route(cpu(), x, router, s.tokens, s.hidden, s.experts, s.k, normalize);
      const RouteResult actual = route(gpu(), x, router, s.tokens, s.hidden, s.experts, s.k, normalize);
      check_bitwise(expected.logits, actual.logits, what + " logits");
      check_bitwise(expected.chosen, actual.chosen, what + " chosen");
      check_bitwise(expected.weights, actual.weights, what + " weights");
      std::vector<int32_t> replayed = expected.chosen;  // each token's choices in reverse: the gates move
      for (int64_t t = 0; t < s.tokens; ++t)
        std::reverse(replayed.begin() + t * s.k, replayed.begin() + (t + 1) * s.k);
      const RouteResult cpu_replay = route(cpu(), x, router, s.tokens, s.hidden, s.experts, s.k, normalize, replayed);
      const RouteResult gpu_replay = route(gpu(), x, router, s.tokens, s.hidden, s.experts, s.k, normalize, replayed);
      check_bitwise(cpu_replay.chosen, gpu_replay.chosen, what + " replayed: chosen");
      check_bitwise(cpu_replay.weights, gpu_replay.weights, what + " replayed: weights");
    }
  }
}

TEST_CASE("cuda moe_combine: bit-identical to the CPU backend") {
  for (const int64_t tokens : {1, 9, 130}) {
    for (const int64_t k : {1, 3, 8}) {
      const int64_t hidden = 161, rows = tokens * k;
      const std::vector<float> expert_out = random_matrix(rows, hidden, 21, 3);
      const std::vector<float> weights = random_matrix(tokens, k, 22);
      std::vector<int64_t> slots(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) slots[static_cast<size_t>(i)] = (i * 7 + 3) % rows;  // a permutation
      const auto run = [&](Backend& b) {
        const Buffer e = to_backend(b, expert_out), s = to_backend(b, slots), w = to_backend(b, weights);
        const Buffer out(b, static_cast<size_t>(tokens * hidden) * sizeof(float));
        MoeCombineArgs args;
        args.expert_out = e.as<float>();
        args.slot_rows = s.as<int64_t>();
        args.weights = w.as<float>();
        args.tokens = tokens;
        args.hidden = hidden;
        args.top_k = k;
        args.expert_rows = rows;
        args.out = out.as<float>();
        b.moe_combine(args);
        return from_backend<float>(b, out, static_cast<size_t>(tokens * hidden));
      };
      check_bitwise(run(cpu()), run(gpu()), "moe_combine tokens " + std::to_string(tokens) + " k " + std::to_string(k));
    }
  }
}

}  // namespace fp8rl::test
