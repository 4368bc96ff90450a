// One direction of one recurrent layer (tanh/relu RNN, LSTM with optional projection, GRU) over a whole
// sequence, as a single op: `_rnn_layer(xg, h0, c0, w_hh, b_hn, w_hr)` takes the input projection of every
// step (xg = x W_ih^T + biases, computed by the caller as one large product) and runs the recurrence in C++.
//
// Why: per step, the layer is a small product (batch x hidden times the recurrent weight) plus a few pointwise
// ops. Issued op by op, each step re-packs the weight inside the GEMM and records ~12 autograd nodes; here the
// weight is packed once per pass (PackedB), the gates are computed in one fused loop that keeps what the
// backward needs in a workspace (the fourth output), and the backward runs the whole recurrence in reverse
// with one large product per weight gradient. Under create_graph (double backward) the gradient is taken
// through a decomposed, differentiable replay of the forward instead.
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "../autograd/engine.h"
#include "../autograd/grad_mode.h"
#include "../kernels/cpu/gemm.h"
#include "../kernels/cpu/parallel.h"
#include "../kernels/cpu/sgemm_packed.h"
#include "linalg.h"
#include "unary_common.h"
#include "unary_vec.h"

namespace flow {
namespace {

using vec::sigmoid_f32;
using vec::tanh_f32;

enum class Cell { Tanh, Relu, Lstm, Gru };

Cell cell_of(const std::string& mode) {
  if (mode == "LSTM") return Cell::Lstm;
  if (mode == "GRU") return Cell::Gru;
  if (mode == "RNN_RELU") return Cell::Relu;
  FLOW_RUNTIME_CHECK(mode == "RNN_TANH", "_rnn_layer: unknown mode '", mode, "'");
  return Cell::Tanh;
}

// Sizes of one layer pass: L steps of a batch of Nb, hidden size H, state size P (H, or the LSTM projection
// size), G gates; W floats of workspace per (step, batch row).
struct Geom {
  Cell cell;
  bool reverse, proj;
  int64_t L, Nb, H, P, G, W;
  // Packed sequences: at step t only the first active[t] batch rows (sorted by decreasing length) advance;
  // the others carry their state unchanged. Empty: every row at every step.
  std::vector<int64_t> active;
  int64_t step(int64_t k) const { return reverse ? L - 1 - k : k; }  // the k-th step processed
  int64_t rows_at(int64_t t) const { return active.empty() ? Nb : active[static_cast<size_t>(t)]; }
  int64_t GH() const { return G * H; }
};

// `xg` is the input projection's shape; `in` holds (xg, h0, c0, w_hh, b_hn, w_hr), of which in[0] is not read
// (the backward has no xg, only its shape).
Geom geometry(const Shape& xg, const TensorList& in, const Attrs& a, const char* op) {
  Geom g;
  g.cell = cell_of(a.str("mode"));
  g.reverse = a.b("reverse");
  const Tensor &h0 = in[1], &w_hh = in[3];
  g.G = g.cell == Cell::Lstm ? 4 : g.cell == Cell::Gru ? 3 : 1;
  FLOW_RUNTIME_CHECK(xg.size() == 3 && h0.dim() == 2 && w_hh.dim() == 2, op,
                     ": expected xg (L, N, G*H), h0 (N, P) "
                     "and w_hh (G*H, P)");
  g.L = xg[0];
  g.Nb = xg[1];
  g.P = h0.size(1);
  FLOW_RUNTIME_CHECK(xg[2] % g.G == 0 && w_hh.size(0) == xg[2] && w_hh.size(1) == g.P && h0.size(0) == g.Nb, op,
                     ": inconsistent shapes");
  g.H = xg[2] / g.G;
  g.proj = in[5].defined();
  FLOW_RUNTIME_CHECK(g.proj || g.P == g.H, op,
                     ": the state size must equal the hidden size without a "
                     "projection");
  if (g.proj) FLOW_RUNTIME_CHECK(in[5].size(0) == g.P && in[5].size(1) == g.H, op, ": w_hr must be (P, H)");
  if (in[4].defined()) FLOW_RUNTIME_CHECK(g.cell == Cell::Gru && in[4].numel() == g.H, op, ": b_hn is GRU's (H,) bias");
  if (g.cell == Cell::Lstm)
    FLOW_RUNTIME_CHECK(in[2].defined() && in[2].size(0) == g.Nb && in[2].size(1) == g.H, op, ": c0 must be (N, H)");
  g.active = a.ints("active");
  FLOW_RUNTIME_CHECK(g.active.empty() || static_cast<int64_t>(g.active.size()) == g.L, op,
                     ": active must give one row count per step");
  for (int64_t m : g.active) FLOW_RUNTIME_CHECK(m >= 0 && m <= g.Nb, op, ": active row counts must be in [0, N]");
  // LSTM: i, f, g, o gates, the cell state and (projected) the unprojected output; GRU: r, z, n and h W_hn + b_hn
  g.W = g.cell == Cell::Lstm ? 5 * g.H + (g.proj ? g.H : 0) : g.cell == Cell::Gru ? 4 * g.H : 0;
  return g;
}

// Row-parallel pointwise work over batch rows [0, m) (each row's H values are independent).
template <typename F>
void rows(const Geom& g, int64_t m, F f) {
  parallel_for(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.GH())), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) f(n);
  });
}

const float* data_or_null(const Tensor& t) { return t.defined() && t.numel() > 0 ? t.data<float>() : nullptr; }

TensorList rnn_forward(const TensorList& in_raw, const Attrs& a) {
  TensorList in;
  for (const Tensor& t : in_raw) in.push_back(t.defined() ? ops::contiguous(t) : t);
  const Geom g = geometry(in[0].sizes(), in, a, "_rnn_layer");
  for (const Tensor& t : in)
    if (t.defined()) FLOW_RUNTIME_CHECK(t.dtype() == DType::Float32, "_rnn_layer: float32 tensors only");
  const int64_t L = g.L, Nb = g.Nb, H = g.H, P = g.P, GH = g.GH(), W = g.W;
  Tensor out = empty({L, Nb, P}, DType::Float32), hn = empty({Nb, P}, DType::Float32);
  Tensor cn = empty({g.cell == Cell::Lstm ? Nb : 0, H}, DType::Float32), ws = empty({L, Nb, W}, DType::Float32);
  if (L == 0 || Nb == 0) return {out, hn, cn, ws};
  const PackedB whh(in[3].data<float>(), P, /*tb=*/true, P, GH);
  std::optional<PackedB> whr;
  if (g.proj) whr.emplace(in[5].data<float>(), H, /*tb=*/true, H, P);
  std::vector<float> gates(static_cast<size_t>(Nb * GH));
  const float *xg = in[0].data<float>(), *b_hn = data_or_null(in[4]);
  const float *h = in[1].data<float>(), *c = g.cell == Cell::Lstm ? in[2].data<float>() : nullptr;
  int64_t c_ld = H;  // c0 rows are H apart; later cell states live in the workspace, W apart
  float *o_all = out.data<float>(), *ws_all = W > 0 ? ws.data<float>() : nullptr, *gt = gates.data();
  for (int64_t k = 0; k < L; ++k) {
    const int64_t t = g.step(k), M = g.rows_at(t);
    const float* x = xg + t * Nb * GH;
    float *o = o_all + t * Nb * P, *w = ws_all ? ws_all + t * Nb * W : nullptr;
    if (g.cell == Cell::Gru) {
      whh.multiply(M, h, P, 0.f, gt, GH);  // h W_hh^T alone: its n block is scaled by r
    } else {
      std::memcpy(gt, x, sizeof(float) * M * GH);
      whh.multiply(M, h, P, 1.f, gt, GH);
    }
    // rows past their sequence's end carry h (and c); their workspace is zeroed, as the weight gradients
    // multiply it by the (zero) gradients of those rows
    for (int64_t n = M; n < Nb; ++n) {
      std::memcpy(o + n * P, h + n * P, sizeof(float) * P);
      if (W > 0) std::fill(w + n * W, w + (n + 1) * W, 0.f);
      if (g.cell == Cell::Lstm) std::memcpy(w + n * W + 4 * H, c + n * c_ld, sizeof(float) * H);
    }
    switch (g.cell) {
      case Cell::Lstm:
        rows(g, M, [&](int64_t n) {
          const float *gr = gt + n * GH, *cp = c + n * c_ld;
          float* wr = w + n * W;
          float* hp = g.proj ? wr + 5 * H : o + n * P;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) {
            const float i = sigmoid_f32(gr[j]), f = sigmoid_f32(gr[H + j]), gg = tanh_f32(gr[2 * H + j]);
            const float og = sigmoid_f32(gr[3 * H + j]), cv = f * cp[j] + i * gg;
            wr[j] = i, wr[H + j] = f, wr[2 * H + j] = gg, wr[3 * H + j] = og, wr[4 * H + j] = cv;
            hp[j] = og * tanh_f32(cv);
          }
        });
        if (g.proj) whr->multiply(M, w + 5 * H, W, 0.f, o, P);
        c = w + 4 * H;
        c_ld = W;
        break;
      case Cell::Gru:
        rows(g, M, [&](int64_t n) {
          const float *xr = x + n * GH, *hh = gt + n * GH, *hv = h + n * P;
          float *wr = w + n * W, *orow = o + n * P;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) {
            const float r = sigmoid_f32(xr[j] + hh[j]), z = sigmoid_f32(xr[H + j] + hh[H + j]);
            const float hl = hh[2 * H + j] + (b_hn ? b_hn[j] : 0.f), nv = tanh_f32(xr[2 * H + j] + r * hl);
            wr[j] = r, wr[H + j] = z, wr[2 * H + j] = nv, wr[3 * H + j] = hl;
            orow[j] = nv + z * (hv[j] - nv);
          }
        });
        break;
      case Cell::Tanh:
      case Cell::Relu: {
        const bool relu = g.cell == Cell::Relu;
        rows(g, M, [&](int64_t n) {
          const float* pre = gt + n * GH;
          float* orow = o + n * P;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) orow[j] = relu ? std::max(pre[j], 0.f) : tanh_f32(pre[j]);
        });
        break;
      }
    }
    h = o;
  }
  std::memcpy(hn.data<float>(), h, sizeof(float) * Nb * P);
  if (g.cell == Cell::Lstm)
    for (int64_t n = 0; n < Nb; ++n) std::memcpy(cn.data<float>() + n * H, c + n * c_ld, sizeof(float) * H);
  return {out, hn, cn, ws};
}

// in: grad_out?, grad_hn?, grad_cn?, h0, c0?, w_hh, b_hn?, w_hr?, out, ws. Returns dxg, dh0, dc0, dw_hh,
// db_hn, dw_hr (empty where the input does not exist).
TensorList rnn_backward(const TensorList& in_raw, const Attrs& a) {
  TensorList in;
  for (const Tensor& t : in_raw) in.push_back(t.defined() ? ops::contiguous(t) : t);
  const Tensor &out = in[8], &ws = in[9], &h0 = in[3];
  const char* op = "_rnn_layer_backward";
  // the saved tensors and incoming gradients must be what the forward made: the kernels index them blindly
  FLOW_RUNTIME_CHECK(out.dim() == 3 && in[5].dim() == 2, op, ": out must be (L, N, P) and w_hh (G*H, P)");
  const Geom g = geometry({out.size(0), out.size(1), in[5].size(0)}, {Tensor(), h0, in[4], in[5], in[6], in[7]}, a, op);
  const int64_t L = g.L, Nb = g.Nb, H = g.H, P = g.P, GH = g.GH(), W = g.W;
  FLOW_RUNTIME_CHECK(out.size(2) == P && ws.numel() == L * Nb * W, op, ": out and ws do not match the layer's sizes");
  for (const Tensor& t : in)
    if (t.defined()) FLOW_RUNTIME_CHECK(t.dtype() == DType::Float32, op, ": float32 tensors only");
  if (in[0].defined()) FLOW_RUNTIME_CHECK(in[0].sizes() == out.sizes(), op, ": grad_out must have out's shape");
  if (in[1].defined()) FLOW_RUNTIME_CHECK(in[1].numel() == Nb * P, op, ": grad_hn must be (N, P)");
  if (in[2].defined() && g.cell == Cell::Lstm)
    FLOW_RUNTIME_CHECK(in[2].numel() == Nb * H, op, ": grad_cn must be (N, H)");
  Tensor dxg = empty({L, Nb, GH}, DType::Float32), dh0 = empty({Nb, P}, DType::Float32);
  Tensor dc0 = empty({g.cell == Cell::Lstm ? Nb : 0, H}, DType::Float32);
  Tensor dw_hh = empty({GH, P}, DType::Float32);
  Tensor db_hn = empty({in[6].defined() ? H : 0}, DType::Float32);
  Tensor dw_hr = empty({g.proj ? P : 0, g.proj ? H : 0}, DType::Float32);
  std::vector<float> dh(static_cast<size_t>(Nb * P), 0.f), dc(static_cast<size_t>(Nb * H), 0.f);
  if (in[1].defined()) std::memcpy(dh.data(), in[1].data<float>(), sizeof(float) * Nb * P);
  if (in[2].defined() && g.cell == Cell::Lstm) std::memcpy(dc.data(), in[2].data<float>(), sizeof(float) * Nb * H);
  const float* gout = data_or_null(in[0]);
  const float *o_all = out.data<float>(), *ws_all = data_or_null(ws), *h0p = h0.data<float>();
  const float* c0p = g.cell == Cell::Lstm ? in[4].data<float>() : nullptr;
  float* dx_all = dxg.data<float>();
  // GRU's recurrent-product gradient differs from its input-projection gradient in the n block
  std::vector<float> dhh_all(g.cell == Cell::Gru ? static_cast<size_t>(L * Nb * GH) : 0);
  // the projection's per-step output gradients, for dw_hr
  std::vector<float> dproj_all(g.proj ? static_cast<size_t>(L * Nb * P) : 0), dhp(g.proj ? Nb * H : 0);
  const PackedB whh(in[5].data<float>(), P, /*tb=*/false, GH, P);
  std::optional<PackedB> whr;
  if (g.proj) whr.emplace(in[7].data<float>(), H, /*tb=*/false, P, H);
  for (int64_t k = L - 1; k >= 0; --k) {
    const int64_t t = g.step(k), tp = k > 0 ? g.step(k - 1) : -1;  // tp: the step that produced h_{t-1}
    const int64_t M = g.rows_at(t);
    const float* hprev = tp >= 0 ? o_all + tp * Nb * P : h0p;
    const float* w = ws_all ? ws_all + t * Nb * W : nullptr;
    float* dx = dx_all + t * Nb * GH;
    if (gout)
      for (int64_t i = 0; i < Nb * P; ++i) dh[i] += gout[t * Nb * P + i];
    // rows past their end pass dh (and dc) straight to the previous step and reach no gate or weight
    std::fill(dx + M * GH, dx + Nb * GH, 0.f);
    switch (g.cell) {
      case Cell::Lstm: {
        const float* dhv = dh.data();
        if (g.proj) {
          float* dproj = dproj_all.data() + t * Nb * P;
          std::memcpy(dproj, dh.data(), sizeof(float) * M * P);
          std::fill(dproj + M * P, dproj + Nb * P, 0.f);
          whr->multiply(M, dh.data(), P, 0.f, dhp.data(), H);
          dhv = dhp.data();
        }
        const float* cprev = tp >= 0 ? ws_all + tp * Nb * W + 4 * H : c0p;
        const int64_t cprev_ld = tp >= 0 ? W : H, dh_ld = g.proj ? H : P;
        rows(g, M, [&](int64_t n) {
          const float *wr = w + n * W, *cp = cprev + n * cprev_ld, *dhr = dhv + n * dh_ld;
          float *dxr = dx + n * GH, *dcr = dc.data() + n * H;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) {
            const float i = wr[j], f = wr[H + j], gg = wr[2 * H + j], og = wr[3 * H + j];
            const float tc = tanh_f32(wr[4 * H + j]);
            const float dct = dcr[j] + dhr[j] * og * (1.f - tc * tc);
            dxr[j] = dct * gg * i * (1.f - i);
            dxr[H + j] = dct * cp[j] * f * (1.f - f);
            dxr[2 * H + j] = dct * i * (1.f - gg * gg);
            dxr[3 * H + j] = dhr[j] * tc * og * (1.f - og);
            dcr[j] = dct * f;
          }
        });
        whh.multiply(M, dx, GH, 0.f, dh.data(), P);
        break;
      }
      case Cell::Gru: {
        float* dhh = dhh_all.data() + t * Nb * GH;
        std::fill(dhh + M * GH, dhh + Nb * GH, 0.f);
        rows(g, M, [&](int64_t n) {
          const float *wr = w + n * W, *hp = hprev + n * P;
          float *dxr = dx + n * GH, *dhr = dhh + n * GH, *dh_row = dh.data() + n * P;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) {
            const float r = wr[j], z = wr[H + j], nv = wr[2 * H + j], hl = wr[3 * H + j], d = dh_row[j];
            const float dan = d * (1.f - z) * (1.f - nv * nv), dar = dan * hl * r * (1.f - r);
            const float daz = d * (hp[j] - nv) * z * (1.f - z);
            dxr[j] = dar, dxr[H + j] = daz, dxr[2 * H + j] = dan;
            dhr[j] = dar, dhr[H + j] = daz, dhr[2 * H + j] = dan * r;
            dh_row[j] = d * z;  // the direct path h_{t-1} -> h_t; the products' part is added below
          }
        });
        whh.multiply(M, dhh, GH, 1.f, dh.data(), P);
        break;
      }
      case Cell::Tanh:
      case Cell::Relu: {
        const bool relu = g.cell == Cell::Relu;
        const float* ht = o_all + t * Nb * P;
        rows(g, M, [&](int64_t n) {
          const float *hr = ht + n * P, *dhr = dh.data() + n * P;
          float* dxr = dx + n * GH;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) dxr[j] = relu ? (hr[j] > 0.f ? dhr[j] : 0.f) : dhr[j] * (1.f - hr[j] * hr[j]);
        });
        whh.multiply(M, dx, GH, 0.f, dh.data(), P);
        break;
      }
    }
  }
  std::memcpy(dh0.data<float>(), dh.data(), sizeof(float) * Nb * P);
  if (g.cell == Cell::Lstm) std::memcpy(dc0.data<float>(), dc.data(), sizeof(float) * Nb * H);
  // Weight gradients as single products over all L * Nb rows: dw_hh = D^T [h_{t-1}], D the recurrent
  // products' output gradients (the gates' for LSTM/RNN).
  std::vector<float> hprev_all(static_cast<size_t>(L * Nb * P));
  for (int64_t k = 0; k < L; ++k) {
    const int64_t t = g.step(k);
    const float* src = k > 0 ? o_all + g.step(k - 1) * Nb * P : h0p;
    std::memcpy(hprev_all.data() + t * Nb * P, src, sizeof(float) * Nb * P);
  }
  const float* D = g.cell == Cell::Gru ? dhh_all.data() : dx_all;
  sgemm_rowmajor(true, false, GH, P, L * Nb, 1.f, D, GH, hprev_all.data(), P, 0.f, dw_hh.data<float>(), P);
  if (db_hn.numel() > 0) {
    float* db = db_hn.data<float>();
    std::fill(db, db + H, 0.f);
    for (int64_t r = 0; r < L * Nb; ++r)
      for (int64_t j = 0; j < H; ++j) db[j] += dhh_all[r * GH + 2 * H + j];
  }
  if (g.proj)  // dw_hr = sum_t dh_t^T hpre_t, hpre_t the unprojected outputs kept in the workspace
    sgemm_rowmajor(true, false, P, H, L * Nb, 1.f, dproj_all.data(), P, ws_all + 5 * H, W, 0.f, dw_hr.data<float>(), H);
  return {dxg, dh0, dc0, dw_hh, db_hn, dw_hr};
}

// The same layer from registry ops, recorded by autograd: what double backward differentiates.
TensorList rnn_decomposed(const TensorList& in, const Attrs& a) {
  const Geom g = geometry(in[0].sizes(), in, a, "_rnn_layer");
  const int64_t H = g.H;
  Tensor whh_t = ops::transpose(in[3], 0, 1);
  Tensor whr_t = g.proj ? ops::transpose(in[5], 0, 1) : Tensor();
  Tensor h = in[1], c = in[2];
  TensorList outs(static_cast<size_t>(g.L));
  auto block = [&](const Tensor& t, int64_t k) { return ops::slice(t, 1, k * H, (k + 1) * H); };
  for (int64_t k = 0; k < g.L; ++k) {
    const int64_t t = g.step(k);
    Tensor x = ops::select(in[0], 0, t), h_prev = h, c_prev = c;
    switch (g.cell) {
      case Cell::Lstm: {
        Tensor gates = ops::add(x, ops::mm(h, whh_t));
        Tensor i = ops::sigmoid(block(gates, 0)), f = ops::sigmoid(block(gates, 1));
        Tensor gg = ops::tanh(block(gates, 2)), og = ops::sigmoid(block(gates, 3));
        c = ops::add(ops::mul(f, c), ops::mul(i, gg));
        h = ops::mul(og, ops::tanh(c));
        if (g.proj) h = ops::mm(h, whr_t);
        break;
      }
      case Cell::Gru: {
        Tensor hh = ops::mm(h, whh_t);
        Tensor r = ops::sigmoid(ops::add(block(x, 0), block(hh, 0)));
        Tensor z = ops::sigmoid(ops::add(block(x, 1), block(hh, 1)));
        Tensor hl = in[4].defined() ? ops::add(block(hh, 2), in[4]) : block(hh, 2);
        Tensor nv = ops::tanh(ops::add(block(x, 2), ops::mul(r, hl)));
        h = ops::add(nv, ops::mul(z, ops::sub(h, nv)));
        break;
      }
      case Cell::Tanh:
      case Cell::Relu: {
        Tensor pre = ops::add(x, ops::mm(h, whh_t));
        h = g.cell == Cell::Relu ? ops::call1("relu", {pre}) : ops::tanh(pre);
        break;
      }
    }
    if (!g.active.empty() && g.rows_at(t) < g.Nb) {  // finished rows keep their state
      Tensor live = empty({g.Nb, 1}, DType::Bool);
      for (int64_t n = 0; n < g.Nb; ++n) live.data<bool>()[n] = n < g.rows_at(t);
      h = ops::where(live, h, h_prev);
      if (c.defined()) c = ops::where(live, c, c_prev);
    }
    outs[static_cast<size_t>(t)] = ops::unsqueeze(h, 0);
  }
  return {ops::call1("cat", outs, {int64_t(0)}), h, c};
}

// Double backward: differentiate the decomposed replay, keeping the graph, so the gradients are themselves
// differentiable functions of the inputs and of the incoming gradients.
TensorList rnn_backward_replay(BackwardCtx& c, const TensorList& grads) {
  TensorList in;
  for (int i = 0; i < 6; ++i) in.push_back(c.input(i));
  TensorList outs = rnn_decomposed(in, c.attrs), roots, root_grads, wrt;
  for (int i = 0; i < 3; ++i)
    if (grads[i].defined() && outs[i].defined()) roots.push_back(outs[i]), root_grads.push_back(grads[i]);
  std::vector<int> which;
  for (int i = 0; i < 6; ++i)
    if (c.needs(i) && in[i].defined() && in[i].requires_grad()) wrt.push_back(in[i]), which.push_back(i);
  TensorList result(6);
  if (roots.empty() || wrt.empty()) return result;
  TensorList r = autograd::run_backward(roots, root_grads, true, true, wrt, true);
  for (size_t k = 0; k < which.size(); ++k) result[static_cast<size_t>(which[k])] = r[k];
  return result;
}

std::vector<TensorMeta> forward_meta(const TensorList& in, const Attrs& a) {
  const Geom g = geometry(in[0].sizes(), in, a, "_rnn_layer");
  Device d = in[0].device();
  return {{{g.L, g.Nb, g.P}, DType::Float32, d},
          {{g.Nb, g.P}, DType::Float32, d},
          {{g.cell == Cell::Lstm ? g.Nb : 0, g.H}, DType::Float32, d},
          {{g.L, g.Nb, g.W}, DType::Float32, d}};
}

}  // namespace

FLOW_OP(_rnn_layer)
    .schema(
        "_rnn_layer(Tensor xg, Tensor h0, Tensor? c0, Tensor w_hh, Tensor? b_hn, Tensor? w_hr, str mode, "
        "bool reverse, int[] active=[]) -> (Tensor, Tensor, Tensor, Tensor)")
    .meta(forward_meta)
    .cpu(rnn_forward)
    .save_inputs({0, 1, 2, 3, 4, 5})
    .save_outputs({0, 3})
    .nondiff_outputs({3})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      if (autograd::GradMode::is_enabled()) return rnn_backward_replay(c, g);
      TensorList r = ops::call("_rnn_layer_backward",
                               {g[0], g[1], g[2], c.input(1), c.input(2), c.input(3), c.input(4), c.input(5),
                                c.output(0), c.output(3)},
                               {c.attrs.str("mode"), c.attrs.b("reverse"), c.attrs.ints("active")});
      TensorList result(6);
      for (int i = 0; i < 6; ++i)
        if (c.needs(i) && r[static_cast<size_t>(i)].numel() > 0)
          result[static_cast<size_t>(i)] = r[static_cast<size_t>(i)];
      return result;
    });

FLOW_OP(_rnn_layer_backward)
    .schema(
        "_rnn_layer_backward(Tensor? grad_out, Tensor? grad_hn, Tensor? grad_cn, Tensor h0, Tensor? c0, "
        "Tensor w_hh, Tensor? b_hn, Tensor? w_hr, Tensor out, Tensor ws, str mode, bool reverse, "
        "int[] active=[]) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")
    .traits(kBackwardHelper | kNonDifferentiable)
    .cpu(rnn_backward);

}  // namespace flow
