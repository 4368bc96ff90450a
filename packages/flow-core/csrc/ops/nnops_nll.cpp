// nll_loss (the training hot path, after log_softmax) with class weights, ignore_index, N-D inputs
// (N, C, d1, ...) and, for cross_entropy, label smoothing. Every loss here is linear in its input, so the
// backward helper's own backward is the loss again (double backward for free).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "../autograd/grad_mode.h"
#include "../kernels/cpu/parallel.h"
#include "nll_util.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nll::checked_targets;
using nll::nll_args;
using nll::nll_geometry;
using nll::NllArgs;
using nll::NllGeom;
using nll::total_weight;
using nn::Reduction;

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
    // every reduction computes the row losses the same way (inside parallel_for: the CPU's kernel variant), so a
    // reduced loss is the in-order sum of the unreduced one's values
    auto row_losses = [&](auto* dst) {
      parallel_for(M, std::max<int64_t>(1, kParallelGrain / (ar.eps == 0 ? 1 : C)), [&](int64_t b, int64_t e) {
        for (int64_t m = b; m < e; ++m) dst[m] = static_cast<std::remove_pointer_t<decltype(dst)>>(loss_at(m));
      });
    };
    if (ar.red == Reduction::None) {
      row_losses(o.data<T>());
    } else {
      std::vector<A> rows(static_cast<size_t>(M));
      row_losses(rows.data());
      double total = 0;
      for (int64_t m = 0; m < M; ++m) total += static_cast<double>(rows[m]);
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
        nll::backward_row<T, A>(base, C, S, tc, sc, keep, smooth, wp);
      }
    });
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

Tensor nll_backward(const Tensor& grad, const Tensor& self, const Tensor& target, const Tensor& weight,
                    const Attrs& a) {
  std::vector<AttrValue> attrs{a.str("reduction"), a.i("ignore_index"),
                               a.has("label_smoothing") ? a.f("label_smoothing") : 0.0};
  return ops::call1("nll_loss_backward", {grad, self, target, weight}, attrs);
}

TensorList nll_grad(BackwardCtx& c, const TensorList& g) {
  return {c.needs(0) ? nll_backward(g[0], c.input(0), c.input(1), c.input(2), c.attrs) : Tensor(), Tensor(), Tensor()};
}

// ---- linear + cross entropy in row chunks (nn.functional.linear_cross_entropy with options) --------------------
// Per-row losses w[t] * (logsumexp(z) - z[t]) of z = x W^T + b, a chunk of rows at a time, so the full (N, C)
// logits never exist. The backward recomputes each chunk's logits from x and W instead of keeping them (the
// memory-for-compute trade of LLM vocabulary heads), and their softmax rather than reusing the forward's
// log-sum-exp, so that it stays differentiable in x and W (double backward).

Tensor matmul(const Tensor& a, const Tensor& b) { return ops::call1("matmul", {a, b}); }

Tensor chunk_logits(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t e) {
  Tensor z = matmul(ops::slice(x, 0, s, e), ops::transpose(w, 0, 1));
  return b.defined() ? ops::add(z, b) : z;
}

// The row ranges [s, e) of the chunks; zero rows still make one (empty) chunk, so results keep their shapes.
std::vector<std::pair<int64_t, int64_t>> row_chunks(int64_t n, int64_t rows) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t s = 0; s == 0 || s < n; s += rows) out.push_back({s, std::min(n, s + rows)});
  return out;
}

// Ignored rows' targets may be any value: clamped, they index safely and are then weighted by zero.
Tensor clamped_targets(const Tensor& t, int64_t classes) {
  return ops::call1("clamp", {t}, {Scalar(int64_t(0)), Scalar(std::max<int64_t>(classes - 1, 0))});
}

std::vector<TensorMeta> linear_ce_meta(const TensorList& in, const Attrs& a) {
  const Tensor &x = in[0], &w = in[1], &b = in[2], &t = in[3], &cw = in[4];
  const char* op = "linear_cross_entropy";
  FLOW_RUNTIME_CHECK(x.dim() == 2 && w.dim() == 2, op, ": the chunked path takes a 2-D input and linear_weight, got ",
                     x.dim(), "-D and ", w.dim(), "-D");
  FLOW_RUNTIME_CHECK(x.size(1) == w.size(1), op, ": input has ", x.size(1), " features but linear_weight has ",
                     w.size(1));
  FLOW_RUNTIME_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == w.size(0)), op, ": linear_bias must have shape [",
                     w.size(0), "], got ", shape_str(b.defined() ? b.sizes() : Shape{}));
  FLOW_RUNTIME_CHECK(t.dim() == 1 && t.size(0) == x.size(0) && !is_floating(t.dtype()), op,
                     ": expected class-index "
                     "targets of shape [",
                     x.size(0), "], got ", shape_str(t.sizes()));
  FLOW_RUNTIME_CHECK(!cw.defined() || (cw.dim() == 1 && cw.size(0) == w.size(0)), op, ": weight must have ", w.size(0),
                     " elements, one per class");
  FLOW_RUNTIME_CHECK(a.i("chunk_rows") > 0, op, ": the chunk size must be positive, got ", a.i("chunk_rows"));
  TensorMeta m{{x.size(0)}, x.dtype(), x.device()};
  return {m, m};
}

}  // namespace

FLOW_OP(nll_loss)
    .schema(
        "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int ignore_index=-100) -> "
        "Tensor")
    .traits(kLoss)
    .meta([](const TensorList& in, const Attrs& a) { return nll_meta(in, a, "nll_loss"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { nll_kernel(in, out, a, "nll_loss"); })
    .save_inputs({0, 1, 2})
    .backward(nll_grad);

// nll_loss plus cross_entropy's label-smoothing term, in one pass (used by cross_entropy).
FLOW_OP(_nll_loss_smoothed)
    .schema(
        "_nll_loss_smoothed(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int "
        "ignore_index=-100, float label_smoothing=0.0) -> Tensor")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) { return nll_meta(in, a, "cross_entropy"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      nll_kernel(in, out, a, "cross_entropy");
    })
    .save_inputs({0, 1, 2})
    .backward(nll_grad);

FLOW_OP(nll_loss_backward)
    .schema(
        "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, str reduction, int "
        "ignore_index, float label_smoothing=0.0) -> Tensor")
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
                        {c.attrs.str("reduction"), c.attrs.i("ignore_index"), c.attrs.f("label_smoothing")});
      return {dg, Tensor(), Tensor(), Tensor()};
    });

// Outputs: the per-row losses and the row weights (0 for ignored rows: the 'mean' denominator).
FLOW_OP(_linear_cross_entropy_chunked)
    .schema(
        "_linear_cross_entropy_chunked(Tensor input, Tensor linear_weight, Tensor? linear_bias, Tensor target, "
        "Tensor? weight, int ignore_index, int chunk_rows) -> (Tensor, Tensor)")
    .traits(kLoss)
    .meta(linear_ce_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      linear_ce_meta(in, a);
      const Tensor &x = in[0], &w = in[1], &b = in[2], &t = in[3], &cw = in[4];
      const int64_t ignore = a.i("ignore_index"), classes = w.size(0);
      checked_targets(t, classes, ignore);
      autograd::AutoGradMode no_grad(false);  // recorded as one node, with the backward below
      Tensor tc = clamped_targets(t, classes);
      TensorList lses, picked;
      for (auto [s, e] : row_chunks(x.size(0), a.i("chunk_rows"))) {
        Tensor z = chunk_logits(x, w, b, s, e);
        lses.push_back(ops::call1("logsumexp", {z}, {std::vector<int64_t>{1}, false}));
        Tensor idx = ops::unsqueeze(ops::slice(tc, 0, s, e), 1);
        picked.push_back(ops::squeeze(ops::call1("gather", {z, idx}, {int64_t(1)}), 1));
      }
      Tensor lse = ops::call1("cat", lses, {int64_t(0)}), zt = ops::call1("cat", picked, {int64_t(0)});
      Tensor wt = ops::to_dtype(ops::call1("ne", {t, ops::wrapped_scalar(Scalar(ignore))}), x.dtype());
      if (cw.defined()) wt = ops::mul(wt, ops::call1("index_select", {cw, tc}, {int64_t(0)}));
      return {ops::to_dtype(ops::mul(ops::sub(lse, zt), wt), x.dtype()), ops::to_dtype(wt, x.dtype())};
    })
    .save_inputs({0, 1, 2, 3})
    .save_outputs({1})
    .nondiff_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList grads(5);
      if (!g[0].defined()) return grads;
      const Tensor &x = c.input(0), &w = c.input(1), &b = c.input(2);
      const Tensor& wt = c.output(1);
      const int64_t classes = w.size(0);
      Tensor tc = clamped_targets(c.input(3), classes);
      Tensor scale = ops::mul(g[0], wt);  // d loss_i / d z_i = scale_i * (softmax(z_i) - onehot(t_i))
      Tensor cls = ops::unsqueeze(ops::call1("arange", {},
                                             {Scalar(int64_t(0)), Scalar(classes), Scalar(int64_t(1)), DType::Int64,
                                              std::monostate{}}),
                                  0);
      TensorList dxs;
      Tensor dw, db;
      for (auto [s, e] : row_chunks(x.size(0), c.attrs.i("chunk_rows"))) {
        Tensor z = chunk_logits(x, w, b, s, e);
        Tensor p = ops::call1("softmax", {z}, {int64_t(1), std::monostate{}});
        Tensor onehot = ops::call1("eq", {ops::unsqueeze(ops::slice(tc, 0, s, e), 1), cls});
        Tensor dz =
            ops::mul(ops::sub(p, ops::to_dtype(onehot, p.dtype())), ops::unsqueeze(ops::slice(scale, 0, s, e), 1));
        if (c.needs(0)) dxs.push_back(matmul(dz, w));
        if (c.needs(1)) {
          Tensor part = matmul(ops::transpose(dz, 0, 1), ops::slice(x, 0, s, e));
          dw = dw.defined() ? ops::add(dw, part) : part;
        }
        if (c.needs(2)) {
          Tensor col = ops::sum(dz, {0});
          db = db.defined() ? ops::add(db, col) : col;
        }
      }
      if (c.needs(0)) grads[0] = ops::call1("cat", dxs, {int64_t(0)});
      grads[1] = dw;
      grads[2] = db;
      return grads;
    });

}  // namespace flow
