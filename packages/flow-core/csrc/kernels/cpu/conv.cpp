// Convolution dispatch by dtype, and the im2col + GEMM path for float64 (1-D and 2-D are run as 3-D with
// unit leading spatial dims).
#include "conv.h"

#include <cstring>
#include <vector>

#include "../../ops/functions.h"
#include "gemm.h"

namespace flow {
namespace {

struct Dims3 {
  int64_t d[3];
};
// Pad spatial sizes / geometry to 3 dims from the left.
Dims3 spatial3(const Shape& s, size_t first) {
  Dims3 r{{1, 1, 1}};
  size_t ns = s.size() - first;
  for (size_t i = 0; i < ns; ++i) r.d[3 - ns + i] = s[first + i];
  return r;
}
Dims3 geom3(const std::vector<int64_t>& v, int64_t fill) {
  Dims3 r{{fill, fill, fill}};
  for (size_t i = 0; i < v.size(); ++i) r.d[3 - v.size() + i] = v[i];
  return r;
}

struct Plan {
  int64_t N, C, O, G, Cg, Og;
  Dims3 in, out, k, st, pad, dil;
  int64_t KK() const { return k.d[0] * k.d[1] * k.d[2]; }
  int64_t P() const { return out.d[0] * out.d[1] * out.d[2]; }
  int64_t I() const { return in.d[0] * in.d[1] * in.d[2]; }
};

Plan make_plan(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g) {
  Plan p;
  p.N = x[0];
  p.C = x[1];
  p.O = w[0];
  p.G = g.groups;
  p.Cg = p.C / p.G;
  p.Og = p.O / p.G;
  p.in = spatial3(x, 2);
  p.out = spatial3(y, 2);
  p.k = spatial3(w, 2);
  p.st = geom3(g.stride, 1);
  p.pad = geom3(g.padding, 0);
  p.dil = geom3(g.dilation, 1);
  return p;
}

// col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] (zero outside); to_col = false scatters
// (adds) col back into x instead: col2im.
template <typename T>
void im2col(const Plan& p, T* x, T* col, bool to_col) {
  int64_t P = p.P();
  for (int64_t c = 0; c < p.Cg; ++c)
    for (int64_t kd = 0; kd < p.k.d[0]; ++kd)
      for (int64_t kh = 0; kh < p.k.d[1]; ++kh)
        for (int64_t kw = 0; kw < p.k.d[2]; ++kw) {
          int64_t row = ((c * p.k.d[0] + kd) * p.k.d[1] + kh) * p.k.d[2] + kw;
          T* cr = col + row * P;
          for (int64_t od = 0; od < p.out.d[0]; ++od) {
            int64_t id = od * p.st.d[0] - p.pad.d[0] + kd * p.dil.d[0];
            for (int64_t oh = 0; oh < p.out.d[1]; ++oh) {
              int64_t ih = oh * p.st.d[1] - p.pad.d[1] + kh * p.dil.d[1];
              T* cp = cr + (od * p.out.d[1] + oh) * p.out.d[2];
              bool row_ok = id >= 0 && id < p.in.d[0] && ih >= 0 && ih < p.in.d[1];
              for (int64_t ow = 0; ow < p.out.d[2]; ++ow) {
                int64_t iw = ow * p.st.d[2] - p.pad.d[2] + kw * p.dil.d[2];
                bool ok = row_ok && iw >= 0 && iw < p.in.d[2];
                if (to_col) {
                  cp[ow] = ok ? x[((c * p.in.d[0] + id) * p.in.d[1] + ih) * p.in.d[2] + iw] : T(0);
                } else if (ok) {
                  x[((c * p.in.d[0] + id) * p.in.d[1] + ih) * p.in.d[2] + iw] += cp[ow];
                }
              }
            }
          }
        }
}

void gemm_rm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double beta, double* C) {
  dgemm_rowmajor(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, N);
}

void col_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g) {
  using T = double;
  Plan p = make_plan(x.sizes(), w.sizes(), y.sizes(), g);
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  T* yd = y.data<T>();
  int64_t KK = p.KK(), P = p.P(), R = p.Cg * KK;
  std::vector<T> col(static_cast<size_t>(R * P));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.G; ++gi) {
      im2col<T>(p, const_cast<T*>(xd + (n * p.C + gi * p.Cg) * p.I()), col.data(), true);
      gemm_rm(false, false, p.Og, P, R, wd + gi * p.Og * R, R, col.data(), P, 0.0, yd + (n * p.O + gi * p.Og) * P);
    }
  if (b.defined()) {
    const T* bd = b.data<T>();
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t o = 0; o < p.O; ++o) {
        T* r = yd + (n * p.O + o) * P;
        for (int64_t i = 0; i < P; ++i) r[i] += bd[o];
      }
  }
}

void col_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g) {
  using T = double;
  Plan p = make_plan(gx.sizes(), w.sizes(), gy.sizes(), g);
  const T* gyd = gy.data<T>();
  const T* wd = w.data<T>();
  T* gxd = gx.data<T>();
  std::memset(gxd, 0, sizeof(T) * gx.numel());
  int64_t KK = p.KK(), P = p.P(), R = p.Cg * KK;
  std::vector<T> col(static_cast<size_t>(R * P));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.G; ++gi) {
      // col (R x P) = W_g^T (R x Og) @ gy (Og x P)
      gemm_rm(true, false, R, P, p.Og, wd + gi * p.Og * R, R, gyd + (n * p.O + gi * p.Og) * P, P, 0.0, col.data());
      im2col<T>(p, gxd + (n * p.C + gi * p.Cg) * p.I(), col.data(), false);
    }
}

void col_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  using T = double;
  Plan p = make_plan(x.sizes(), gw.sizes(), gy.sizes(), g);
  const T* gyd = gy.data<T>();
  const T* xd = x.data<T>();
  T* gwd = gw.data<T>();
  std::memset(gwd, 0, sizeof(T) * gw.numel());
  int64_t KK = p.KK(), P = p.P(), R = p.Cg * KK;
  std::vector<T> col(static_cast<size_t>(R * P));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.G; ++gi) {
      im2col<T>(p, const_cast<T*>(xd + (n * p.C + gi * p.Cg) * p.I()), col.data(), true);
      // gW_g (Og x R) += gy (Og x P) @ col^T (P x R)
      gemm_rm(false, true, p.Og, R, P, gyd + (n * p.O + gi * p.Og) * P, P, col.data(), P, 1.0, gwd + gi * p.Og * R);
    }
}

Tensor contig(const Tensor& t, DType d) {
  if (t.is_contiguous() && t.dtype() == d) return t;
  Tensor r = empty(t.sizes(), d, t.device());
  ops::copy_into(r, t);
  return r;
}

bool has_zero(const Tensor& t) { return t.numel() == 0; }

// Runs `f32` or `f64` on contiguous operands of the compute dtype, casting 16-bit floats through float32.
template <typename F32, typename F64>
void run_typed(const char* op, const TensorList& ins, const Tensor& out, F32&& f32, F64&& f64) {
  DType dt = out.dtype();
  FLOW_CHECK(is_floating(dt), NotImplemented, "\"", op, "\" not implemented for '", dtype_name(dt), "'");
  DType ct = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  TensorList c;
  for (const Tensor& t : ins) c.push_back(t.defined() ? contig(t, ct) : t);
  Tensor o = dt == ct ? out : empty(out.sizes(), ct, out.device());
  if (ct == DType::Float32) f32(c, o);
  else f64(c, o);
  if (!o.is_same(out)) ops::copy_into(out, o);
}

}  // namespace

void conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g) {
  if (has_zero(y)) return;
  if (has_zero(x) || has_zero(w)) {  // an empty sum: the bias (broadcast over N and space) or zeros
    if (b.defined()) {
      Shape st(y.dim(), 0);
      st[1] = b.stride(0);
      ops::copy_into(y, make_view(b, y.sizes(), st, b.offset()));
    } else {
      ops::copy_into(y, ops::zeros({}, y.dtype()));
    }
    return;
  }
  run_typed("conv", {x, w, b}, y,
            [&](const TensorList& c, const Tensor& o) { onednn_conv_forward(c[0], c[1], c[2], o, g); },
            [&](const TensorList& c, const Tensor& o) { col_forward(c[0], c[1], c[2], o, g); });
}

void conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g) {
  if (has_zero(gx)) return;
  if (has_zero(gy) || has_zero(w)) {
    ops::copy_into(gx, ops::zeros({}, gx.dtype()));
    return;
  }
  run_typed("conv_backward_input", {gy, w}, gx,
            [&](const TensorList& c, const Tensor& o) { onednn_conv_backward_data(c[0], c[1], o, g); },
            [&](const TensorList& c, const Tensor& o) { col_backward_data(c[0], c[1], o, g); });
}

void conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  if (has_zero(gw)) return;
  if (has_zero(gy) || has_zero(x)) {
    ops::copy_into(gw, ops::zeros({}, gw.dtype()));
    return;
  }
  run_typed("conv_backward_weight", {gy, x}, gw,
            [&](const TensorList& c, const Tensor& o) { onednn_conv_backward_weight(c[0], c[1], o, g); },
            [&](const TensorList& c, const Tensor& o) { col_backward_weight(c[0], c[1], o, g); });
}

}  // namespace flow
