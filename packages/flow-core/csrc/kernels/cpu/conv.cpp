// Convolution dispatch by dtype, and the im2col + GEMM path for float64 (1-D and 2-D are run as 3-D with
// unit leading spatial dims).
#include "conv.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "../../core/scratch.h"
#include "../../ops/functions.h"
#include "gemm.h"
#include "parallel.h"
#include "winograd.h"

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

// A first layer's weight columns per output channel (3 channels x 3x3 taps): see col_backward_weight_by_image.
constexpr int64_t kFewWeightColumns = 27;

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

// One row of im2col: col row (c, kd, kh, kw) over the output positions (od, oh, ow), x read at
// od*s - p + kd*d, ... (zero outside); to_col = false scatters (adds) the row back into x instead: col2im.
template <typename T>
void im2col_row(const Plan& p, T* x, T* cr, int64_t row, bool to_col) {
  int64_t kw = row % p.k.d[2], kh = row / p.k.d[2] % p.k.d[1], kd = row / (p.k.d[2] * p.k.d[1]) % p.k.d[0];
  int64_t c = row / p.KK();
  // output columns whose input column lies inside: ow in [lo, hi)
  int64_t off = kw * p.dil.d[2] - p.pad.d[2], st = p.st.d[2], OW = p.out.d[2], IW = p.in.d[2];
  int64_t lo = off >= 0 ? 0 : std::min(OW, (-off + st - 1) / st);
  int64_t hi = IW - off <= 0 ? 0 : std::min(OW, (IW - off + st - 1) / st);
  hi = std::max(hi, lo);
  for (int64_t od = 0; od < p.out.d[0]; ++od) {
    int64_t id = od * p.st.d[0] - p.pad.d[0] + kd * p.dil.d[0];
    for (int64_t oh = 0; oh < p.out.d[1]; ++oh) {
      int64_t ih = oh * p.st.d[1] - p.pad.d[1] + kh * p.dil.d[1];
      T* cp = cr + (od * p.out.d[1] + oh) * OW;
      bool row_ok = id >= 0 && id < p.in.d[0] && ih >= 0 && ih < p.in.d[1];
      if (!row_ok) {
        if (to_col) std::fill(cp, cp + OW, T(0));
        continue;
      }
      T* xr = x + ((c * p.in.d[0] + id) * p.in.d[1] + ih) * IW;
      if (to_col) {
        std::fill(cp, cp + lo, T(0));
        if (st == 1) std::memcpy(cp + lo, xr + lo + off, sizeof(T) * (hi - lo));  // the common case, a copy
        else
          for (int64_t ow = lo; ow < hi; ++ow) cp[ow] = xr[ow * st + off];
        std::fill(cp + hi, cp + OW, T(0));
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) xr[ow * st + off] += cp[ow];
      }
    }
  }
}

// col[(c, kd, kh, kw), (od, oh, ow)] (row stride ld) from one image x (Cg channels); rows are independent,
// so they are split across threads.
template <typename T>
void im2col(const Plan& p, const T* x, T* col, int64_t ld) {
  int64_t rows = p.Cg * p.KK();
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, p.P())), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) im2col_row<T>(p, const_cast<T*>(x), col + r * ld, r, true);
  });
}
// x += col2im(col): rows of one channel overlap in x, so this one stays serial.
template <typename T>
void col2im(const Plan& p, T* x, const T* col) {
  for (int64_t r = 0; r < p.Cg * p.KK(); ++r) im2col_row<T>(p, x, const_cast<T*>(col) + r * p.P(), r, false);
}

void gemm_rm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double beta, double* C, int64_t ldc) {
  dgemm_rowmajor(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}
void gemm_rm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
             int64_t ldb, float beta, float* C, int64_t ldc) {
  sgemm_rowmajor(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

// Uninitialized scratch for n elements, from the thread's scratch stack (core/scratch.h: a fresh mapping per call
// would page-fault megabytes each time, and the caching allocator would keep one block per layer's size).
template <typename T>
T* scratch_of(std::optional<ScratchBuffer>& holder, int64_t n) {
  holder.emplace(static_cast<size_t>(n) * sizeof(T));
  return holder->as<T>();
}

template <typename T>
void col_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g) {
  Plan p = make_plan(x.sizes(), w.sizes(), y.sizes(), g);
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  T* yd = y.data<T>();
  int64_t KK = p.KK(), P = p.P(), R = p.Cg * KK;
  std::optional<ScratchBuffer> hold;
  T* col = scratch_of<T>(hold, R * P);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.G; ++gi) {
      im2col<T>(p, xd + (n * p.C + gi * p.Cg) * p.I(), col, P);
      gemm_rm(false, false, p.Og, P, R, wd + gi * p.Og * R, R, col, P, T(0), yd + (n * p.O + gi * p.Og) * P, P);
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
  std::optional<ScratchBuffer> hold;
  T* col = scratch_of<T>(hold, R * P);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.G; ++gi) {
      // col (R x P) = W_g^T (R x Og) @ gy (Og x P)
      gemm_rm(true, false, R, P, p.Og, wd + gi * p.Og * R, R, gyd + (n * p.O + gi * p.Og) * P, P, T(0), col, P);
      col2im<T>(p, gxd + (n * p.C + gi * p.Cg) * p.I(), col);
    }
}

// gW_g (Og x R) = sum over images of gy_n (Og x P) @ col_n^T (P x R). Small images are taken several at a
// time (their columns side by side, gy's rows gathered to match) so each GEMM's inner dimension is at least
// kMinInner: a 4x4 image alone would give K = 16, a shape no GEMM runs well.
// acc[o, r] = (first ? 0 : acc[o, r]) + sum_p g[o, p] * c[r, p] for o < M, r < R, as dot products read
// straight from g's rows: a GEMM would first copy all of g into its packed panels, which for so few columns
// costs more memory traffic than the arithmetic. Blocks of up to 4 rows x 3 columns keep 12 vector sums in
// registers, so each load of g or c feeds three or four multiply-adds.
template <typename T, int MB, int RB>
void dot_block(const T* g, const T* c, int64_t P, T* acc, int64_t R, bool first) {
  using V [[gnu::vector_size(32)]] = T;
  constexpr int64_t L = 32 / sizeof(T);
  V s[MB][RB] = {};
  int64_t i = 0;
  for (; i + L <= P; i += L) {
    V cv[RB], gv;
#pragma GCC unroll 4
    for (int r = 0; r < RB; ++r) std::memcpy(&cv[r], c + r * P + i, sizeof(V));
#pragma GCC unroll 4
    for (int m = 0; m < MB; ++m) {
      std::memcpy(&gv, g + m * P + i, sizeof(V));
#pragma GCC unroll 4
      for (int r = 0; r < RB; ++r) s[m][r] += gv * cv[r];
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < RB; ++r) {
      T sum = 0;
      for (int64_t l = 0; l < L; ++l) sum += s[m][r][l];
      for (int64_t j = i; j < P; ++j) sum += g[m * P + j] * c[r * P + j];
      acc[m * R + r] = (first ? T(0) : acc[m * R + r]) + sum;
    }
}

template <typename T, int MB>
void dot_rows_of(const T* g, const T* c, int64_t R, int64_t P, T* acc, bool first) {
  int64_t r = 0;
  for (; r + 3 <= R; r += 3) dot_block<T, MB, 3>(g, c + r * P, P, acc + r, R, first);
  for (; r < R; ++r) dot_block<T, MB, 1>(g, c + r * P, P, acc + r, R, first);
}

template <typename T>
void dot_rows(const T* g, const T* c, int64_t M, int64_t R, int64_t P, T* acc, bool first) {
  int64_t o = 0;
  for (; o + 4 <= M; o += 4) dot_rows_of<T, 4>(g + o * P, c, R, P, acc + o * R, first);
  for (; o < M; ++o) dot_rows_of<T, 1>(g + o * P, c, R, P, acc + o * R, first);
}

// Few weight columns per output channel (R = Cg x kernel taps, e.g. a first layer's 1-3 channels x 3x3): each
// image's product is far too small to split across threads, so threads take whole images instead, each
// summing into its own gW that is added up at the end.
template <typename T>
void col_backward_weight_by_image(const Plan& p, const T* gyd, const T* xd, T* gwd) {
  const int64_t P = p.P(), R = p.Cg * p.KK(), W = p.Og * R;
  const int64_t nt = std::min<int64_t>(get_num_threads(), p.N);
  std::optional<ScratchBuffer> hold_col, hold_acc;
  T* col = scratch_of<T>(hold_col, nt * R * P);
  T* acc = scratch_of<T>(hold_acc, nt * p.G * W);
  parallel_for(nt, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      T* c = col + t * R * P;
      T* a = acc + t * p.G * W;
      for (int64_t n = t; n < p.N; n += nt)
        for (int64_t gi = 0; gi < p.G; ++gi) {
          im2col<T>(p, xd + (n * p.C + gi * p.Cg) * p.I(), c, P);  // serial inside this region
          dot_rows(gyd + (n * p.O + gi * p.Og) * P, c, p.Og, R, P, a + gi * W, n == t);
        }
    }
  });
  for (int64_t i = 0; i < p.G * W; ++i) {
    T sum = acc[i];
    for (int64_t t = 1; t < nt; ++t) sum += acc[t * p.G * W + i];
    gwd[i] = sum;
  }
}

template <typename T>
void col_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  constexpr int64_t kMinInner = 512;
  Plan p = make_plan(x.sizes(), gw.sizes(), gy.sizes(), g);
  const T* gyd = gy.data<T>();
  const T* xd = x.data<T>();
  T* gwd = gw.data<T>();
  int64_t KK = p.KK(), P = p.P(), R = p.Cg * KK;
  if (R <= kFewWeightColumns && P >= kMinInner && get_num_threads() > 1 && p.N > 1)
    return col_backward_weight_by_image<T>(p, gyd, xd, gwd);
  int64_t per = std::clamp<int64_t>((kMinInner + P - 1) / P, 1, p.N);  // images per GEMM
  // Rows of a whole number of 2 KiB would alias in L1 inside the GEMM (see gemm.cpp): pad them by a line.
  int64_t ld = per * P + (per * P * sizeof(T) % 2048 == 0 ? 64 / sizeof(T) : 0);
  std::optional<ScratchBuffer> hold_col, hold_gy;
  T* col = scratch_of<T>(hold_col, R * ld);
  T* gyc = per > 1 ? scratch_of<T>(hold_gy, p.Og * ld) : nullptr;
  bool first = true;
  for (int64_t n0 = 0; n0 < p.N; n0 += per) {
    int64_t cnt = std::min(per, p.N - n0), K = cnt * P;
    for (int64_t gi = 0; gi < p.G; ++gi) {
      for (int64_t j = 0; j < cnt; ++j) im2col<T>(p, xd + ((n0 + j) * p.C + gi * p.Cg) * p.I(), col + j * P, ld);
      const T* a = gyd + (n0 * p.O + gi * p.Og) * P;
      int64_t lda = P;
      if (cnt > 1) {
        for (int64_t o = 0; o < p.Og; ++o)
          for (int64_t j = 0; j < cnt; ++j)
            std::memcpy(gyc + o * ld + j * P, gyd + ((n0 + j) * p.O + gi * p.Og + o) * P, sizeof(T) * P);
        a = gyc, lda = ld;
      }
      gemm_rm(false, true, p.Og, R, K, a, lda, col, ld, first ? T(0) : T(1), gwd + gi * p.Og * R, R);
    }
    first = false;
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

// float32 runs oneDNN except where our own kernels measured faster (AVX2, 2 threads, ms per call against
// oneDNN's best layout):
// - Winograd F(2x2, 3x3) for 3x3 stride-1 layers with enough channels and tiles, all three passes
//   (winograd.h; ResNet-18's batch-32 layers, forward: 64ch 32x32 ~19.7 -> ~10-13, 128ch 16x16 15.7 -> 8-9,
//   512ch 4x4 16.6 -> ~10-13; backward-weight: 64ch 19-28 -> 13-18, 128ch 17-22 -> 11-13, 256ch 17-21 ->
//   8-9, 512ch 20-21 -> 9-11);
// - im2col + one well-shaped sgemm forward with few output positions in all (batch x spatial < 128: batch-1
//   inference of the late layers; 512ch 4x4 0.60 -> 0.50, 256->512 8x8/2 0.28 -> 0.25; at 16x16, 256
//   positions, oneDNN wins 0.46 vs 0.57);
// - im2col + sgemm backward-weight on small images (< 256 output positions each) that Winograd does not take
//   (strided, 1-D/3-D, few channels), several images per GEMM, whose rows are padded off 2 KiB multiples
//   (batch 32, before Winograd: 512ch 4x4 ~21-25 -> ~17-19, 256ch 8x8 19-20 -> 17-18; 128->256 16x16/2
//   10.6 -> 8.7; at 16x16 outputs and above the two are level within this VM's noise).
bool pointwise(const Plan& p) { return p.KK() == 1; }
bool col_forward_wins(const Plan& p) { return p.G == 1 && !pointwise(p) && p.N * p.P() < 128; }
// Which kernel conv_forward runs float32 shapes on.
enum class ForwardKernel { Col, Winograd, OneDnn };
ForwardKernel forward_kernel(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g) {
  if (col_forward_wins(make_plan(x, w, y, g))) return ForwardKernel::Col;
  return winograd_applicable(x, w, g, false) ? ForwardKernel::Winograd : ForwardKernel::OneDnn;
}
bool col_backward_weight_wins(const Plan& p) {
  return p.G == 1 && !pointwise(p) && (p.P() < 256 || p.Cg * p.KK() <= kFewWeightColumns);
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
  run_typed("conv", {x, w, b}, y, [&](const TensorList& c, const Tensor& o) {
    switch (forward_kernel(c[0].sizes(), c[1].sizes(), o.sizes(), g)) {
      case ForwardKernel::Col: return col_forward<float>(c[0], c[1], c[2], o, g);
      case ForwardKernel::Winograd: return winograd_conv_forward(c[0], c[1], c[2], o, g);
      default: return onednn_conv_forward(c[0], c[1], c[2], o, g);
    }
  }, [&](const TensorList& c, const Tensor& o) { col_forward<double>(c[0], c[1], c[2], o, g); });
}

namespace {

// The packed form conv_forward's kernel for these shapes takes: none (im2col reads the plain weight; other
// dtypes and empty shapes), Winograd's transformed weights, or oneDNN's layout where it is not the plain one.
enum class Packing { None, Winograd, OneDnn };
Packing packing_of(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, DType dt, bool bias) {
  if (dt != DType::Float32 || shape_numel(x) == 0 || shape_numel(w) == 0 || shape_numel(y) == 0) return Packing::None;
  switch (forward_kernel(x, w, y, g)) {
    case ForwardKernel::Col: return Packing::None;
    case ForwardKernel::Winograd: return Packing::Winograd;  // the weight transform, every call
    default: return onednn_conv_packed_weight_bytes(x, w, y, g, bias) > 0 ? Packing::OneDnn : Packing::None;
  }
}

}  // namespace

bool conv_weight_packing_pays(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, DType dt, bool bias) {
  return packing_of(x, w, y, g, dt, bias) != Packing::None;
}

int64_t conv_packed_weight_numel(const Shape& x, const Shape& w, const Shape& y, const ConvGeom& g, DType dt,
                                 bool bias) {
  switch (packing_of(x, w, y, g, dt, bias)) {
    case Packing::None: return shape_numel(w);
    case Packing::Winograd: return winograd_packed_weight_numel(w);
    default: return onednn_conv_packed_weight_bytes(x, w, y, g, bias) / int64_t(sizeof(float));
  }
}

void conv_pack_weight(const Tensor& w, const Shape& x, const Shape& y, const ConvGeom& g, bool bias,
                      const Tensor& packed) {
  switch (packing_of(x, w.sizes(), y, g, w.dtype(), bias)) {
    case Packing::None:
      return ops::copy_into(make_view(packed, w.sizes(), contiguous_strides(w.sizes()), packed.offset()), w);
    case Packing::Winograd: return winograd_pack_weights(contig(w, DType::Float32), packed);
    default: return onednn_conv_pack_weight(contig(w, DType::Float32), x, y, g, bias, packed);
  }
}

void conv_forward_packed(const Tensor& x, const Tensor& packed_in, const Shape& w_sizes, const Tensor& b,
                         const Tensor& y, const ConvGeom& g) {
  const Tensor packed = contig(packed_in, packed_in.dtype());
  const Packing kind = packing_of(x.sizes(), w_sizes, y.sizes(), g, x.dtype(), b.defined());
  if (kind == Packing::None) {
    FLOW_RUNTIME_CHECK(packed.numel() == shape_numel(w_sizes), "convolution_forward_packed: the packed weight has ",
                       packed.numel(), " elements, the weight ", shape_str(w_sizes), " has ", shape_numel(w_sizes));
    conv_forward(x, make_view(packed, w_sizes, contiguous_strides(w_sizes), packed.offset()), b, y, g);
    return;
  }
  run_typed("conv", {x, packed, b}, y, [&](const TensorList& c, const Tensor& o) {
    if (kind == Packing::Winograd) winograd_conv_forward_packed(c[0], c[1], w_sizes[0], c[2], o, g);
    else onednn_conv_forward_packed(c[0], c[1], w_sizes, c[2], o, g);
  }, [](const TensorList&, const Tensor&) {});
}

void conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g) {
  if (has_zero(gx)) return;
  if (has_zero(gy) || has_zero(w)) {
    ops::copy_into(gx, ops::zeros({}, gx.dtype()));
    return;
  }
  run_typed("conv_backward_input", {gy, w}, gx, [&](const TensorList& c, const Tensor& o) {
    if (winograd_applicable(o.sizes(), c[1].sizes(), g, false)) winograd_conv_backward_data(c[0], c[1], o, g);
    else onednn_conv_backward_data(c[0], c[1], o, g);
  }, [&](const TensorList& c, const Tensor& o) { col_backward_data(c[0], c[1], o, g); });
}

void conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  if (has_zero(gw)) return;
  if (has_zero(gy) || has_zero(x)) {
    ops::copy_into(gw, ops::zeros({}, gw.dtype()));
    return;
  }
  run_typed("conv_backward_weight", {gy, x}, gw, [&](const TensorList& c, const Tensor& o) {
    if (winograd_applicable(c[1].sizes(), o.sizes(), g, true)) winograd_conv_backward_weight(c[0], c[1], o, g);
    else if (col_backward_weight_wins(make_plan(c[1].sizes(), o.sizes(), c[0].sizes(), g)))
      col_backward_weight<float>(c[0], c[1], o, g);
    else onednn_conv_backward_weight(c[0], c[1], o, g);
  }, [&](const TensorList& c, const Tensor& o) { col_backward_weight<double>(c[0], c[1], o, g); });
}

}  // namespace flow
