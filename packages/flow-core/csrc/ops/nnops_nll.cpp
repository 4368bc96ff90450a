// nll_loss (the training hot path, after log_softmax) with class weights, ignore_index, N-D inputs
// (N, C, d1, ...) and, for cross_entropy, label smoothing. Every loss here is linear in its input, so the
// backward helper's own backward is the loss again (double backward for free).
#include <cmath>

#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nn::Reduction;

struct NllGeom {
  int64_t N = 1, C = 1, S = 1;
  Shape out_none;  // shape of the unreduced loss
};

NllGeom nll_geometry(const Tensor& x, const Tensor& t, const Tensor& w, const char* op) {
  FLOW_RUNTIME_CHECK(x.dim() >= 1, op, ": input tensor should be 1D or more, got 0D");
  FLOW_RUNTIME_CHECK(is_integral(t.dtype()), op, ": expected target of an integer dtype (Long), but found ",
                     dtype_name(t.dtype()));
  NllGeom g;
  if (x.dim() == 1) {
    FLOW_RUNTIME_CHECK(t.dim() == 0, op, ": 0D or 1D target tensor expected for 1D input, multi-target not supported"
                       " (got target of ", t.dim(), " dims)");
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
NllArgs nll_args(const Attrs& a, const char* op) {
  return {nn::parse_reduction(a.str(0), op), a.i(1), a.values.size() > 2 ? a.f(2) : 0.0};
}

// Validated targets as int64 (raises IndexError before any memory is read with them).
Tensor checked_targets(const Tensor& t, int64_t C, int64_t ignore) {
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

std::vector<TensorMeta> nll_meta(const TensorList& in, const Attrs& a, const char* op) {
  NllGeom g = nll_geometry(in[0], in[1], in[2], op);
  NllArgs ar = nll_args(a, op);
  FLOW_RUNTIME_CHECK(is_floating(in[0].dtype()), op, ": expected a floating point input, got ",
                     dtype_name(in[0].dtype()));
  FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Int64 || in[1].dtype() == DType::UInt8,
                     "expected target dtype to be Long or Byte, but got ", torch_type_name(in[1].dtype()));
  return {{ar.red == Reduction::None ? g.out_none : Shape{}, in[0].dtype(), in[0].device()}};
}

void nll_kernel(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  NllGeom g = nll_geometry(in[0], in[1], in[2], op);
  NllArgs ar = nll_args(a, op);
  DType d = out[0].dtype();
  Tensor x = nn::contig_as(in[0], d);
  Tensor t = checked_targets(in[1], g.C, ar.ignore);
  Tensor w = in[2].defined() ? nn::contig_as(in[2], d) : Tensor();
  Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), d);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xp = x.data<T>();
    const int64_t* tp = t.data<int64_t>();
    std::vector<A> wv;
    if (w.defined()) {
      const T* wp = w.data<T>();
      for (int64_t c = 0; c < g.C; ++c) wv.push_back(static_cast<A>(wp[c]));
    }
    const A* wp = wv.empty() ? nullptr : wv.data();
    const int64_t C = g.C, S = g.S, M = g.N * g.S;
    const A keep = static_cast<A>(1.0 - ar.eps), smooth = static_cast<A>(ar.eps / static_cast<double>(C));
    auto loss_at = [&](int64_t m) -> A {
      int64_t tc = tp[m];
      if (tc == ar.ignore) return A(0);
      int64_t n = m / S, s = m % S;
      const T* base = xp + n * C * S + s;
      A l = -(wp ? wp[tc] : A(1)) * static_cast<A>(base[tc * S]);
      if (ar.eps == 0) return l;
      A sm = 0;
      for (int64_t c = 0; c < C; ++c) sm += (wp ? wp[c] : A(1)) * static_cast<A>(base[c * S]);
      return keep * l - smooth * sm;
    };
    if (ar.red == Reduction::None) {
      T* op_ = o.data<T>();
      parallel_for(M, std::max<int64_t>(1, kParallelGrain / (ar.eps == 0 ? 1 : C)), [&](int64_t b, int64_t e) {
        for (int64_t m = b; m < e; ++m) op_[m] = static_cast<T>(loss_at(m));
      });
    } else {
      double total = 0;
      for (int64_t m = 0; m < M; ++m) total += static_cast<double>(loss_at(m));
      if (ar.red == Reduction::Mean) total /= total_weight(tp, wp, M, ar.ignore);  // all ignored: 0/0 = nan
      *o.data<T>() = static_cast<T>(total);
    }
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

// grad_self[n, c, s] = -scale(n, s) * q_c with q_c = (1-eps) w_t [c == t] + eps/C w_c.
void nll_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* op = "nll_loss_backward";
  NllGeom g = nll_geometry(in[1], in[2], in[3], op);
  NllArgs ar = nll_args(a, op);
  DType d = out[0].dtype();
  Tensor gr = nn::contig_as(in[0], d);
  Tensor t = checked_targets(in[2], g.C, ar.ignore);
  Tensor w = in[3].defined() ? nn::contig_as(in[3], d) : Tensor();
  Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), d);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t* tp = t.data<int64_t>();
    std::vector<A> wv;
    if (w.defined())
      for (int64_t c = 0; c < g.C; ++c) wv.push_back(static_cast<A>(w.data<T>()[c]));
    const A* wp = wv.empty() ? nullptr : wv.data();
    const int64_t C = g.C, S = g.S, M = g.N * g.S;
    FLOW_RUNTIME_CHECK(gr.numel() == (ar.red == Reduction::None ? M : 1), op, ": grad_output has ", gr.numel(),
                       " elements, expected ", ar.red == Reduction::None ? M : 1);
    const T* gp = gr.data<T>();
    A scalar_scale = 0;
    if (ar.red != Reduction::None) {
      double s = static_cast<double>(static_cast<A>(gp[0]));
      if (ar.red == Reduction::Mean) s /= total_weight(tp, wp, M, ar.ignore);
      scalar_scale = static_cast<A>(s);
    }
    const A keep = static_cast<A>(1.0 - ar.eps), smooth = static_cast<A>(ar.eps / static_cast<double>(C));
    T* op_ = o.data<T>();
    parallel_for(M, std::max<int64_t>(1, kParallelGrain / C), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        int64_t n = m / S, s = m % S, tc = tp[m];
        T* base = op_ + n * C * S + s;
        A sc = ar.red == Reduction::None ? static_cast<A>(gp[m]) : scalar_scale;
        if (tc == ar.ignore) {
          for (int64_t c = 0; c < C; ++c) base[c * S] = T(0);
          continue;
        }
        if (S == 1 && !wp) {  // class rows (N, C): the common case, vectorised
          const T v = static_cast<T>(-sc * smooth);
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) base[c] = v;
        } else {
          for (int64_t c = 0; c < C; ++c) base[c * S] = static_cast<T>(-sc * smooth * (wp ? wp[c] : A(1)));
        }
        base[tc * S] = static_cast<T>(static_cast<A>(base[tc * S]) - sc * keep * (wp ? wp[tc] : A(1)));
      }
    });
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

Tensor nll_backward(const Tensor& grad, const Tensor& self, const Tensor& target, const Tensor& weight,
                    const Attrs& a) {
  std::vector<AttrValue> attrs{a.str(0), a.i(1), a.values.size() > 2 ? a.f(2) : 0.0};
  return ops::call1("nll_loss_backward", {grad, self, target, weight}, attrs);
}

TensorList nll_grad(BackwardCtx& c, const TensorList& g) {
  return {c.needs(0) ? nll_backward(g[0], c.input(0), c.input(1), c.input(2), c.attrs) : Tensor(), Tensor(),
          Tensor()};
}

}  // namespace

FLOW_OP(nll_loss)
    .schema("nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int ignore_index=-100) -> Tensor")
    .traits(kLoss)
    .meta([](const TensorList& in, const Attrs& a) { return nll_meta(in, a, "nll_loss"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { nll_kernel(in, out, a, "nll_loss"); })
    .save_inputs({0, 1, 2})
    .backward(nll_grad);

// nll_loss plus cross_entropy's label-smoothing term, in one pass (used by cross_entropy).
FLOW_OP(_nll_loss_smoothed)
    .schema("_nll_loss_smoothed(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int ignore_index=-100, float label_smoothing=0.0) -> Tensor")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) { return nll_meta(in, a, "cross_entropy"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      nll_kernel(in, out, a, "cross_entropy");
    })
    .save_inputs({0, 1, 2})
    .backward(nll_grad);

FLOW_OP(nll_loss_backward)
    .schema("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, str reduction, int ignore_index, float label_smoothing=0.0) -> Tensor")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].sizes(), in[1].dtype(), in[1].device()}};
    })
    .cpu_out(nll_backward_kernel)
    .save_inputs({2, 3})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // linear in grad_output, independent of self's values
      Tensor dg;
      if (c.needs(0))
        dg = ops::call1("_nll_loss_smoothed", {g[0], c.input(2), c.input(3)},
                        {c.attrs.str(0), c.attrs.i(1), c.attrs.f(2)});
      return {dg, Tensor(), Tensor(), Tensor()};
    });

}  // namespace flow
