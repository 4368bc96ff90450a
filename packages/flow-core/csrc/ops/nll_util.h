// Shared by nll_loss (nnops_nll.cpp) and the fused softmax cross entropy (nnops_softmax_ce.cpp): the
// geometry and attribute checks of a class-index loss, validated targets and the 'mean' denominator.
#pragma once
#include <cstdint>

#include "nnops_util.h"
#include "unary_common.h"

namespace flow::nll {

using nn::Reduction;

struct NllGeom {
  int64_t N = 1, C = 1, S = 1;
  Shape out_none;  // shape of the unreduced loss
};

inline NllGeom nll_geometry(const Tensor& x, const Tensor& t, const Tensor& w, const char* op) {
  FLOW_RUNTIME_CHECK(x.dim() >= 1, op, ": input tensor should be 1D or more, got 0D");
  FLOW_RUNTIME_CHECK(is_integral(t.dtype()), op, ": expected target of an integer dtype (Long), but found ",
                     dtype_name(t.dtype()));
  NllGeom g;
  if (x.dim() == 1) {
    FLOW_RUNTIME_CHECK(t.dim() == 0, op,
                       ": 0D or 1D target tensor expected for 1D input, multi-target not supported"
                       " (got target of ",
                       t.dim(), " dims)");
    g.C = x.size(0);
  } else {
    g.N = x.size(0);
    g.C = x.size(1);
    FLOW_VALUE_CHECK(t.dim() >= 1 && t.size(0) == g.N, "Expected input batch_size (", g.N,
                     ") to match target batch_size (", t.dim() >= 1 ? t.size(0) : 0, ").");
    Shape expect{g.N};
    for (int64_t i = 2; i < x.dim(); ++i) expect.push_back(x.size(i)), g.S *= x.size(i);
    FLOW_RUNTIME_CHECK(t.sizes() == expect, op, ": expected target size ", shape_str(expect), ", got ",
                       shape_str(t.sizes()));
    g.out_none = expect;
  }
  if (w.defined())
    FLOW_RUNTIME_CHECK(w.dim() == 1 && w.numel() == g.C, op, ": weight tensor should be defined either for all ", g.C,
                       " classes or no classes but got weight tensor of shape: ", shape_str(w.sizes()));
  return g;
}

struct NllArgs {
  Reduction red;
  int64_t ignore;
  double eps;
};
inline NllArgs nll_args(const Attrs& a, const char* op) {
  return {nn::parse_reduction(a.str("reduction"), op), a.i("ignore_index"),
          a.has("label_smoothing") ? a.f("label_smoothing") : 0.0};
}

// Validated targets as int64 (raises IndexError before any memory is read with them).
inline Tensor checked_targets(const Tensor& t, int64_t C, int64_t ignore) {
  Tensor ti = nn::contig_as(t, DType::Int64);
  const int64_t* p = ti.data<int64_t>();
  for (int64_t i = 0, n = ti.numel(); i < n; ++i)
    if (p[i] != ignore && (p[i] < 0 || p[i] >= C)) fail(ErrorKind::Index, "Target ", p[i], " is out of bounds.");
  return ti;
}

// Sum of the weights of non-ignored targets (the 'mean' denominator).
template <typename A>
double total_weight(const int64_t* t, const A* w, int64_t n, int64_t ignore) {
  double tw = 0;
  for (int64_t i = 0; i < n; ++i)
    if (t[i] != ignore) tw += w ? static_cast<double>(w[t[i]]) : 1.0;
  return tw;
}

// nll_loss_backward of one non-ignored row (C values `S` apart): -scale * q_c, with q the target distribution
// ((1 - eps) w_t at the target class t, plus eps/C w_c everywhere). Shared with the fused softmax cross entropy's
// backward, which so rounds as this one does.
template <typename T, typename A>
FLOW_VEC_INLINE void backward_row(T* base, int64_t C, int64_t S, int64_t tc, A sc, A keep, A smooth, const A* wp) {
  if (S == 1 && !wp) {  // class rows (N, C): the common case, vectorised
    const T v = static_cast<T>(-sc * smooth);
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) base[c] = v;
  } else {
    for (int64_t c = 0; c < C; ++c) base[c * S] = static_cast<T>(-sc * smooth * (wp ? wp[c] : A(1)));
  }
  base[tc * S] = static_cast<T>(static_cast<A>(base[tc * S]) - sc * keep * (wp ? wp[tc] : A(1)));
}

}  // namespace flow::nll
