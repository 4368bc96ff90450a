// The per-row normaliser of log_softmax, shared by log_softmax (nnops_softmax.cpp) and the fused softmax cross
// entropy (nnops_softmax_ce.cpp), so that both compute log-probabilities the same way.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "unary_vec.h"

namespace flow::softmax {

// Of a row of D values `stride` apart: the shift mx (its maximum, NaN if any value is; 0 for an all -inf row, so
// that exp(x - mx) stays 0 and the sum 0 gives nan like torch) and ls = log(sum(exp(x - mx))). Then
// log_softmax = (x - mx) - ls, which keeps precision for large inputs, and the log-sum-exp is mx + ls.
template <typename A, typename T>
FLOW_VEC_INLINE void log_normaliser(const T* x, int64_t D, int64_t stride, A& mx, A& ls) {
  A sum = 0;
  if (stride == 1) {  // contiguous: `omp simd` reductions and the vectorisable exp (unary_vec.h) for float
    mx = vmax_nan<A>(x, D);
    if (std::isinf(mx) && mx < 0) mx = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < D; ++i) sum += vexp_nonpos<A>(static_cast<A>(x[i]) - mx);
  } else {
    mx = -std::numeric_limits<A>::infinity();
    bool nan = false;
    for (int64_t i = 0; i < D; ++i) {
      A v = static_cast<A>(x[i * stride]);
      mx = std::max(mx, v);
      nan |= v != v;
    }
    if (nan) mx = std::numeric_limits<A>::quiet_NaN();
    else if (std::isinf(mx) && mx < 0) mx = 0;
    for (int64_t i = 0; i < D; ++i) sum += vexp_nonpos<A>(static_cast<A>(x[i * stride]) - mx);
  }
  ls = std::log(sum);
}

// _log_softmax_backward_data along one contiguous row: out = g - exp(y) * sum(g), out may be g.
template <typename A, typename T>
FLOW_VEC_INLINE void log_softmax_backward_row(const T* g, const T* y, T* out, int64_t D) {
  A s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < D; ++i) s += static_cast<A>(g[i]);
#pragma omp simd
  for (int64_t i = 0; i < D; ++i)
    out[i] = static_cast<T>(static_cast<A>(g[i]) - vexp_nonpos<A>(static_cast<A>(y[i])) * s);
}

}  // namespace flow::softmax
