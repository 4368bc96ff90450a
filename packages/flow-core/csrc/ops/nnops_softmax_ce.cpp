// Fused softmax cross entropy over class indices: log_softmax along the class dim followed by nll_loss (with
// class weights, ignore_index, label smoothing, every reduction), as one op. The graph compiler rewrites the
// pair that F.cross_entropy traces into it (oneflow_graph.passes.fuse_softmax_ce). The forward keeps two
// numbers per row (the shift and log-normaliser of its log_softmax), not the (N, C, ...) log-probabilities;
// the backward recomputes each row's log-probabilities from them and the logits, and computes in one pass what
// nll_loss_backward then _log_softmax_backward_data compute (scale * (softmax(x) * sum(q) - q), q the weighted,
// smoothed one-hot row), with the same roundings in the same order: the results are bitwise the unfused ones.
#include <algorithm>
#include <cmath>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "nll_util.h"
#include "nnops_util.h"
#include "softmax_rows.h"
#include "unary_vec.h"

namespace flow {
namespace {

using nll::NllArgs;
using nll::NllGeom;
using nn::Reduction;

constexpr const char* kOp = "_softmax_cross_entropy";
constexpr const char* kBwd = "_softmax_cross_entropy_backward";

int64_t class_dim(const Tensor& x) { return x.dim() == 1 ? 0 : 1; }

// The rows' shift and log-normaliser are kept in the accumulation type, as log_softmax computes them.
DType row_dtype(DType d) { return (d == DType::Float16 || d == DType::BFloat16) ? DType::Float32 : d; }

std::vector<TensorMeta> fwd_meta(const TensorList& in, const Attrs& a) {
  NllGeom g = nll::nll_geometry(in[0], in[1], in[2], "cross_entropy");
  NllArgs ar = nll::nll_args(a, "cross_entropy");
  FLOW_RUNTIME_CHECK(is_floating(in[0].dtype()), "cross_entropy: expected a floating point input, got ",
                     dtype_name(in[0].dtype()));
  FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Int64 || in[1].dtype() == DType::UInt8,
                     "expected target dtype to be Long or Byte, but got ", torch_type_name(in[1].dtype()));
  TensorMeta row{g.out_none, row_dtype(in[0].dtype()), in[0].device()};
  return {{ar.red == Reduction::None ? g.out_none : Shape{}, in[0].dtype(), in[0].device()}, row, row};
}

// The class weights in A (empty when there are none).
template <typename T, typename A>
std::vector<A> class_weights(const Tensor& w, int64_t C) {
  std::vector<A> wv;
  if (w.defined())
    for (int64_t c = 0; c < C; ++c) wv.push_back(static_cast<A>(w.data<T>()[c]));
  return wv;
}

// A log-probability as log_softmax stores it (rounded to T), read back in A.
template <typename T, typename A>
inline A log_prob(T x, A mx, A ls) {
  return static_cast<A>(static_cast<T>((static_cast<A>(x) - mx) - ls));
}

Tensor out_buffer(const Tensor& out) { return out.is_contiguous() ? out : empty(out.sizes(), out.dtype()); }

void fwd_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NllGeom g = nll::nll_geometry(in[0], in[1], in[2], "cross_entropy");
  NllArgs ar = nll::nll_args(a, "cross_entropy");
  DType d = out[0].dtype();
  Tensor x = nn::contig_as(in[0], d);
  Tensor t = nll::checked_targets(in[1], g.C, ar.ignore);
  Tensor w = in[2].defined() ? nn::contig_as(in[2], d) : Tensor();
  Tensor o = out_buffer(out[0]), shift = out_buffer(out[1]), logsum = out_buffer(out[2]);
  dispatch_floating(d, kOp, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xp = x.data<T>();
    const int64_t* tp = t.data<int64_t>();
    std::vector<A> wv = class_weights<T, A>(w, g.C);
    const A* wp = wv.empty() ? nullptr : wv.data();
    const int64_t C = g.C, S = g.S, M = g.N * g.S;
    const A keep = static_cast<A>(1.0 - ar.eps), smooth = static_cast<A>(ar.eps / static_cast<double>(C));
    A *mxp = shift.data<A>(), *lsp = logsum.data<A>();
    std::vector<A> row(static_cast<size_t>(M));
    parallel_for(M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        const T* base = xp + (m / S) * C * S + m % S;
        A mx, ls;
        softmax::log_normaliser<A>(base, C, S, mx, ls);
        mxp[m] = mx;
        lsp[m] = ls;
        const int64_t tc = tp[m];
        if (tc == ar.ignore) {  // nll_loss's loss_at, on the log-probabilities
          row[m] = A(0);
          continue;
        }
        A loss = -(wp ? wp[tc] : A(1)) * log_prob<T, A>(base[tc * S], mx, ls);
        if (ar.eps != 0) {
          A sm = 0;
          for (int64_t c = 0; c < C; ++c) sm += (wp ? wp[c] : A(1)) * log_prob<T, A>(base[c * S], mx, ls);
          loss = keep * loss - smooth * sm;
        }
        row[m] = loss;
      }
    });
    if (ar.red == Reduction::None) {
      T* op_ = o.data<T>();
      for (int64_t m = 0; m < M; ++m) op_[m] = static_cast<T>(row[m]);
    } else {
      double total = 0;  // summed in order, in double, as nll_loss does
      for (int64_t m = 0; m < M; ++m) total += static_cast<double>(row[m]);
      if (ar.red == Reduction::Mean) total /= nll::total_weight(tp, wp, M, ar.ignore);  // all ignored: nan
      *o.data<T>() = static_cast<T>(total);
    }
  });
  for (int k = 0; k < 3; ++k) {
    const Tensor& buf = k == 0 ? o : k == 1 ? shift : logsum;
    if (!buf.is_same(out[k])) ops::copy_into(out[k], buf);
  }
}

// in: grad_output, self, target, weight, shift, log_sum. Per row: nll_loss_backward's gradient of the
// log-probabilities written into the output, then _log_softmax_backward_data's map applied to it in place.
void bwd_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NllGeom g = nll::nll_geometry(in[1], in[2], in[3], kBwd);
  NllArgs ar = nll::nll_args(a, kBwd);
  DType d = out[0].dtype();
  for (int k : {4, 5})
    FLOW_RUNTIME_CHECK(in[k].sizes() == g.out_none && in[k].dtype() == row_dtype(d), kBwd, ": ",
                       k == 4 ? "shift" : "log_sum", " must be ", dtype_name(row_dtype(d)), shape_str(g.out_none),
                       ", got ", dtype_name(in[k].dtype()), shape_str(in[k].sizes()));
  Tensor gr = nn::contig_as(in[0], d), x = nn::contig_as(in[1], d);
  Tensor t = nll::checked_targets(in[2], g.C, ar.ignore);
  Tensor w = in[3].defined() ? nn::contig_as(in[3], d) : Tensor();
  Tensor shift = nn::contig(in[4]), logsum = nn::contig(in[5]);
  Tensor o = out_buffer(out[0]);
  dispatch_floating(d, kBwd, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const A *mxp = shift.data<A>(), *lsp = logsum.data<A>();
    const T *xp = x.data<T>(), *gp = gr.data<T>();
    const int64_t* tp = t.data<int64_t>();
    std::vector<A> wv = class_weights<T, A>(w, g.C);
    const A* wp = wv.empty() ? nullptr : wv.data();
    const int64_t C = g.C, S = g.S, M = g.N * g.S;
    FLOW_RUNTIME_CHECK(gr.numel() == (ar.red == Reduction::None ? M : 1), kBwd, ": grad_output has ", gr.numel(),
                       " elements, expected ", ar.red == Reduction::None ? M : 1);
    A scalar_scale = 0;
    if (ar.red != Reduction::None) {
      double s = static_cast<double>(static_cast<A>(gp[0]));
      if (ar.red == Reduction::Mean) s /= nll::total_weight(tp, wp, M, ar.ignore);
      scalar_scale = static_cast<A>(s);
    }
    const A keep = static_cast<A>(1.0 - ar.eps), smooth = static_cast<A>(ar.eps / static_cast<double>(C));
    T* op_ = o.data<T>();
    parallel_for(M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        const int64_t off = (m / S) * C * S + m % S, tc = tp[m];
        const T* xr = xp + off;
        T* gi = op_ + off;
        const A mx = mxp[m], ls = lsp[m];
        if (tc == ar.ignore) {
          for (int64_t c = 0; c < C; ++c) gi[c * S] = T(0);
        } else {
          const A sc = ar.red == Reduction::None ? static_cast<A>(gp[m]) : scalar_scale;
          nll::backward_row<T, A>(gi, C, S, tc, sc, keep, smooth, wp);
        }
        if (S == 1) {  // softmax::log_softmax_backward_row's loops, the log-probabilities made on the fly
          A s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t c = 0; c < C; ++c) s += static_cast<A>(gi[c]);
#pragma omp simd
          for (int64_t c = 0; c < C; ++c)
            gi[c] = static_cast<T>(static_cast<A>(gi[c]) - vexp_nonpos<A>(log_prob<T, A>(xr[c], mx, ls)) * s);
        } else {
          A s = 0;  // gi = g - exp(log_prob) * sum(g), as the strided (column) loop of the backward sums
          for (int64_t c = 0; c < C; ++c) s += static_cast<A>(gi[c * S]);
          for (int64_t c = 0; c < C; ++c)
            gi[c * S] =
                static_cast<T>(static_cast<A>(gi[c * S]) - vexp_nonpos<A>(log_prob<T, A>(xr[c * S], mx, ls)) * s);
        }
      }
    });
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

std::vector<AttrValue> loss_attrs(const Attrs& a) {
  return {a.str("reduction"), a.i("ignore_index"), a.f("label_smoothing")};
}

}  // namespace

// Outputs: the loss (as cross_entropy's), and per row of logits the shift (maximum) and the log-normaliser of its
// log_softmax (log(sum(exp(x - shift)))): what the backward reads.
FLOW_OP(_softmax_cross_entropy)
    .schema(
        "_softmax_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int "
        "ignore_index=-100, float label_smoothing=0.0) -> (Tensor, Tensor, Tensor)")
    .traits(kLoss | kBackwardHelper)
    .meta(fwd_meta)
    .cpu_out(fwd_kernel)
    .save_inputs({0, 1, 2})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor dx;
      if (c.needs(0) && g[0].defined())
        dx =
            ops::call1(kBwd, {g[0], c.input(0), c.input(1), c.input(2), c.output(1), c.output(2)}, loss_attrs(c.attrs));
      return {dx, Tensor(), Tensor()};
    });

// The backward is the composition nll_loss_backward -> _log_softmax_backward_data on log_softmax(self), so its
// own backward is written as that composition's (double backward), with log_softmax recomputed.
FLOW_OP(_softmax_cross_entropy_backward)
    .schema(
        "_softmax_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, Tensor "
        "shift, Tensor log_sum, str reduction, int ignore_index, float label_smoothing=0.0) -> Tensor")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].sizes(), in[1].dtype(), in[1].device()}};
    })
    .cpu_out(bwd_kernel)
    .save_inputs({0, 1, 2, 3})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList grads(6);
      if (!g[0].defined()) return grads;
      const Tensor &h = g[0], &x = c.input(1), &t = c.input(2), &w = c.input(3);
      const int64_t dim = class_dim(x);
      Tensor lp = ops::call1("log_softmax", {x}, {dim, std::monostate{}});
      Tensor p = ops::call1("exp", {lp});
      auto rsum = [&](const Tensor& v) { return ops::sum(v, {dim}, true); };
      if (c.needs(0)) {  // gi is linear in grad_output through nll_loss_backward's grad, whose adjoint is the loss
        Tensor dglp = ops::sub(h, rsum(ops::mul(h, p)));
        grads[0] = ops::call1("_nll_loss_smoothed", {dglp, t, w}, loss_attrs(c.attrs));
      }
      if (c.needs(1)) {  // through exp(log_softmax(x)), scaled by the row sums of nll_loss_backward's result
        Tensor glp = ops::call1("nll_loss_backward", {c.input(0), lp, t, w}, loss_attrs(c.attrs));
        Tensor dlp = ops::neg(ops::mul(ops::mul(h, p), rsum(glp)));
        grads[1] = ops::call1("_log_softmax_backward_data", {dlp, lp}, {dim});
      }
      return grads;
    });

}  // namespace flow
