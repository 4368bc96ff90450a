#include "winograd.h"

#include <limits>

#include "winograd_impl.h"

namespace flow {

#ifdef FLOW_WINOGRAD
FLOW_AVX2_BEGIN

namespace {

using namespace winograd_detail;

// U[xi][kp][c][r] = (G g G^T)[xi] for output channel kp * MR + r (zero past K): the 16 GEMMs' left operands
// in the register block's panel layout, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]. w is O x I x 3 x 3; the
// forward run takes g = w[k][c], backward-data (flip) g = w[c][k] rotated by 180 degrees. Lanes are the MR
// channels of a panel, so each (xi, kp, c) is one store of MR consecutive floats.
void transform_weights(const float* w, int64_t I, bool flip, const Wino& s, float* U) {
  const int64_t KP = s.KP(), C = s.C;
  const __m256i lanes = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);  // MR == 6 of 8
  const __m256 half = _mm256_set1_ps(0.5f);
  parallel_for(KP, 1, [&](int64_t b, int64_t e) {
    for (int64_t kp = b; kp < e; ++kp)
      for (int64_t c = 0; c < C; ++c) {
        alignas(32) float g[9][8] = {};
        for (int64_t r = 0; r < MR && kp * MR + r < s.K; ++r) {
          int64_t k = kp * MR + r;
          const float* src = flip ? w + (c * I + k) * 9 : w + (k * I + c) * 9;
          for (int i = 0; i < 9; ++i) g[i][r] = src[flip ? 8 - i : i];
        }
        __m256 t[4][3];
        for (int j = 0; j < 3; ++j) {
          __m256 g0 = _mm256_load_ps(g[j]), g1 = _mm256_load_ps(g[3 + j]), g2 = _mm256_load_ps(g[6 + j]);
          __m256 s02 = _mm256_add_ps(g0, g2);
          t[0][j] = g0;
          t[1][j] = _mm256_mul_ps(half, _mm256_add_ps(s02, g1));
          t[2][j] = _mm256_mul_ps(half, _mm256_sub_ps(s02, g1));
          t[3][j] = g2;
        }
        float* u = U + (kp * C + c) * MR;
        const int64_t xs = KP * C * MR;
        for (int i = 0; i < 4; ++i) {
          __m256 s02 = _mm256_add_ps(t[i][0], t[i][2]);
          _mm256_maskstore_ps(u + (i * 4 + 0) * xs, lanes, t[i][0]);
          _mm256_maskstore_ps(u + (i * 4 + 1) * xs, lanes, _mm256_mul_ps(half, _mm256_add_ps(s02, t[i][1])));
          _mm256_maskstore_ps(u + (i * 4 + 2) * xs, lanes, _mm256_mul_ps(half, _mm256_sub_ps(s02, t[i][1])));
          _mm256_maskstore_ps(u + (i * 4 + 3) * xs, lanes, t[i][2]);
        }
      }
  });
}

// Xp = x zero-padded to Hp x Wp per plane (ph rows above, pw columns to the left), so no tile reads past
// its plane and the transforms need no bounds checks.
void pad_input(const float* x, const Wino& s, float* Xp) {
  parallel_for(s.N * s.C, 16, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* src = x + pl * s.H * s.W;
      float* dst = Xp + pl * s.plane();
      for (int64_t r = 0; r < s.Hp; ++r) {
        float* d = dst + r * s.Wp;
        int64_t ir = r - s.ph;
        if (ir < 0 || ir >= s.H) {
          std::memset(d, 0, sizeof(float) * s.Wp);
          continue;
        }
        int64_t n = std::min(s.W, s.Wp - s.pw);
        std::memset(d, 0, sizeof(float) * s.pw);
        std::memcpy(d + s.pw, src + ir * s.W, sizeof(float) * n);
        std::memset(d + s.pw + n, 0, sizeof(float) * (s.Wp - s.pw - n));
      }
    }
  });
}

// Even- and odd-indexed lanes of the 16 floats a:b.
inline __m256 evens(__m256 a, __m256 b) {
  __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
inline __m256 odds(__m256 a, __m256 b) {
  __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Eight tiles, lane j holding tile j: where they are in a block and in the tensors.
struct TileGroup {
  alignas(32) int32_t in[8];  // input offset of the tile's top-left corner, plane 0 of its image
  int64_t out[8];             // output offset of the tile's top-left corner, channel 0 of its image
  bool out_full[8];           // all four outputs inside the image
  int64_t valid;              // tiles that exist (the rest repeat the last one)
  bool row;                   // the eight are consecutive in one tile row: loads and stores run unit-stride
};

TileGroup tile_group(const Wino& s, int64_t t, int64_t end) {
  TileGroup g;
  g.valid = std::max<int64_t>(0, std::min<int64_t>(8, end - t));
  const int64_t per = s.TH * s.TW;
  for (int j = 0; j < 8; ++j) {
    int64_t tj = std::min(t + j, end - 1);
    int64_t n = tj / per, q = tj % per, th = q / s.TW, tw = q % s.TW;
    g.in[j] = static_cast<int32_t>(n * s.C * s.plane() + 2 * th * s.Wp + 2 * tw);
    g.out[j] = n * s.K * s.OH * s.OW + 2 * th * s.OW + 2 * tw;
    g.out_full[j] = 2 * th + 1 < s.OH && 2 * tw + 1 < s.OW;
  }
  g.row = g.valid == 8 && g.in[7] - g.in[0] == 14;
  for (int j = 0; j < 8; ++j) g.row = g.row && g.out_full[j];
  return g;
}

// V[xi][tp][c][lane] for the eight tiles of `g`: B^T d B of each 4x4 input tile d, B^T = [1 0 -1 0; 0 1 1 0;
// 0 -1 1 0; 0 1 0 -1]. `v` points at lane 0 of (xi = 0, c = 0); successive xi are xs floats apart.
void input_transform(const Wino& s, const float* Xp, const TileGroup& g, float* v, int64_t xs) {
  const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.in));
  for (int64_t c = 0; c < s.C; ++c, v += NR) {
    const float* plane = Xp + c * s.plane();
    __m256 d[4][4];
    for (int r = 0; r < 4; ++r) {
      if (g.row) {
        const float* p = plane + g.in[0] + r * s.Wp;
        __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
        __m256 a2 = _mm256_loadu_ps(p + 2), b2 = _mm256_loadu_ps(p + 10);
        d[r][0] = evens(a, b), d[r][1] = odds(a, b), d[r][2] = evens(a2, b2), d[r][3] = odds(a2, b2);
      } else {
        for (int q = 0; q < 4; ++q) d[r][q] = _mm256_i32gather_ps(plane + r * s.Wp + q, idx, 4);
      }
    }
    __m256 t[4][4];
    for (int q = 0; q < 4; ++q) {
      t[0][q] = _mm256_sub_ps(d[0][q], d[2][q]);
      t[1][q] = _mm256_add_ps(d[1][q], d[2][q]);
      t[2][q] = _mm256_sub_ps(d[2][q], d[1][q]);
      t[3][q] = _mm256_sub_ps(d[1][q], d[3][q]);
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_store_ps(v + (i * 4 + 0) * xs, _mm256_sub_ps(t[i][0], t[i][2]));
      _mm256_store_ps(v + (i * 4 + 1) * xs, _mm256_add_ps(t[i][1], t[i][2]));
      _mm256_store_ps(v + (i * 4 + 2) * xs, _mm256_sub_ps(t[i][2], t[i][1]));
      _mm256_store_ps(v + (i * 4 + 3) * xs, _mm256_sub_ps(t[i][1], t[i][3]));
    }
  }
}

// y's 2x2 blocks for output channel k of the eight tiles of `g`: A^T m A (+ bias), A^T = [1 1 1 0; 0 1 -1 -1].
// `m` points at (xi = 0, this channel, lane 0) of the GEMMs' results, xs floats apart.
void output_transform(const Wino& s, const TileGroup& g, const float* m, int64_t xs, float bias, int64_t k, float* y) {
  __m256 a[4][2];  // (A^T m) rows, folded: row 0 = m0 + m1 + m2, row 1 = m1 - m2 - m3
  for (int q = 0; q < 4; ++q) {
    __m256 m0 = _mm256_load_ps(m + (0 * 4 + q) * xs), m1 = _mm256_load_ps(m + (1 * 4 + q) * xs);
    __m256 m2 = _mm256_load_ps(m + (2 * 4 + q) * xs), m3 = _mm256_load_ps(m + (3 * 4 + q) * xs);
    a[q][0] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
    a[q][1] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
  }
  const __m256 vb = _mm256_set1_ps(bias);
  __m256 o[2][2];
  for (int i = 0; i < 2; ++i) {
    o[i][0] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0][i], a[1][i]), a[2][i]), vb);
    o[i][1] = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(a[1][i], a[2][i]), a[3][i]), vb);
  }
  const int64_t chan = k * s.OH * s.OW;
  if (g.row) {  // interleave the two columns of each output row: 16 consecutive floats
    for (int i = 0; i < 2; ++i) {
      __m256 lo = _mm256_unpacklo_ps(o[i][0], o[i][1]), hi = _mm256_unpackhi_ps(o[i][0], o[i][1]);
      float* p = y + g.out[0] + chan + i * s.OW;
      _mm256_storeu_ps(p, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
    return;
  }
  alignas(32) float buf[2][2][8];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) _mm256_store_ps(buf[i][j], o[i][j]);
  for (int64_t l = 0; l < g.valid; ++l) {
    float* p = y + g.out[l] + chan;
    int64_t r0 = (g.out[l] % (s.OH * s.OW)) / s.OW, c0 = g.out[l] % s.OW;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        if (g.out_full[l] || (r0 + i < s.OH && c0 + j < s.OW)) p[i * s.OW + j] = buf[i][j][l];
  }
}

constexpr int64_t kMaxBlockTiles = 16 * NR;  // block_tiles' upper bound

// Tiles [t0, t0 + tb): transform them into V, run the 16 GEMMs (K x C) @ (C x tiles) into M, transform back.
void run_block(const Wino& s, const float* Xp, const float* U, const float* bias, float* y, int64_t t0, int64_t tb,
               float* V, float* M) {
  const int64_t C = s.C, KP = s.KP(), NTP = (tb + NR - 1) / NR, end = t0 + tb;
  const int64_t v_xi = xi_stride(NTP * C * NR), m_xi = xi_stride(KP * NTP * MR * NR);
  TileGroup groups[kMaxBlockTiles / 8];  // located once, read by both transforms
  for (int64_t tp = 0; tp < NTP; ++tp)
    for (int64_t h = 0; h < NR; h += 8) {
      TileGroup& g = groups[(tp * NR + h) / 8];
      g = tile_group(s, t0 + tp * NR + h, end);
      input_transform(s, Xp, g, V + tp * C * NR + h, v_xi);
    }
  for (int64_t xi = 0; xi < 16; ++xi)
    for (int64_t kp = 0; kp < KP; ++kp)
      for (int64_t tp = 0; tp < NTP; ++tp)
        sgemm_microkernel_6x16(C, U + (xi * KP + kp) * C * MR, V + xi * v_xi + tp * C * NR,
                               M + xi * m_xi + (kp * NTP + tp) * MR * NR);
  for (int64_t tp = 0; tp < NTP; ++tp)
    for (int64_t h = 0; h < NR; h += 8) {
      const TileGroup& g = groups[(tp * NR + h) / 8];
      if (g.valid == 0) continue;
      for (int64_t k = 0; k < s.K; ++k)
        output_transform(s, g, M + ((k / MR) * NTP + tp) * MR * NR + (k % MR) * NR + h, m_xi, bias ? bias[k] : 0.f, k,
                         y);
    }
}

// Tiles per block: V and M of a block (16 x tiles x (C + K) floats) about fill L2 (512 KiB per Zen 3 core),
// while a block is large enough that streaming all of U once per block stays cheap.
int64_t block_tiles(const Wino& s) {
  int64_t tb = (8192 / (s.C + s.K)) / NR * NR;
  return std::clamp<int64_t>(tb, 2 * NR, kMaxBlockTiles);
}

int64_t u_floats(const Wino& s) { return 16 * s.KP() * MR * s.C; }

// The convolution given the transformed weights U.
void run_transformed(const float* x, const float* U, const float* bias, float* y, const Wino& s) {
  ScratchBuffer hold_x(static_cast<size_t>(s.N * s.C * s.plane()) * sizeof(float));
  float* Xp = hold_x.as<float>();
  pad_input(x, s, Xp);
  const int64_t TB = block_tiles(s), T = s.T(), nblocks = (T + TB - 1) / TB;
  parallel_for(nblocks, 1, [&](int64_t b, int64_t e) {
    thread_local std::unique_ptr<float[], FreeDeleter> vbuf, mbuf;
    thread_local size_t vcap = 0, mcap = 0;
    const int64_t NTP = (TB + NR - 1) / NR;
    float* V = grow(vbuf, vcap, static_cast<size_t>(16 * xi_stride(NTP * s.C * NR)));
    float* M = grow(mbuf, mcap, static_cast<size_t>(16 * xi_stride(s.KP() * NTP * MR * NR)));
    for (int64_t blk = b; blk < e; ++blk) run_block(s, Xp, U, bias, y, blk * TB, std::min(TB, T - blk * TB), V, M);
  });
}

void run(const float* x, const float* w, int64_t I, bool flip, const float* bias, float* y, const Wino& s) {
  ScratchBuffer hold_u(static_cast<size_t>(u_floats(s)) * sizeof(float));
  float* U = hold_u.as<float>();
  transform_weights(w, I, flip, s, U);
  run_transformed(x, U, bias, y, s);
}

// The forward's geometry of a weight alone (the transform reads only the channel counts).
Wino weight_wino(const Shape& w) { return make_wino(1, w[1], w[0], 3, 3, 1, 1); }

}  // namespace

void winograd_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g) {
  Wino s = make_wino(x.size(0), x.size(1), w.size(0), x.size(2), x.size(3), g.padding[0], g.padding[1]);
  run(x.data<float>(), w.data<float>(), w.size(1), false, b.defined() ? b.data<float>() : nullptr, y.data<float>(), s);
}

int64_t winograd_packed_weight_numel(const Shape& w) { return u_floats(weight_wino(w)); }

void winograd_pack_weights(const Tensor& w, const Tensor& packed) {
  const int64_t need = winograd_packed_weight_numel(w.sizes());
  FLOW_RUNTIME_CHECK(packed.numel() == need, "convolution_pack_weight: the packed buffer has ", packed.numel(),
                     " floats, the Winograd transform needs ", need);
  transform_weights(w.data<float>(), w.size(1), false, weight_wino(w.sizes()), packed.data<float>());
}

void winograd_conv_forward_packed(const Tensor& x, const Tensor& packed, int64_t out_channels, const Tensor& b,
                                  const Tensor& y, const ConvGeom& g) {
  Wino s = make_wino(x.size(0), x.size(1), out_channels, x.size(2), x.size(3), g.padding[0], g.padding[1]);
  FLOW_RUNTIME_CHECK(packed.numel() == u_floats(s), "convolution_forward_packed: the packed weight has ",
                     packed.numel(), " floats, the Winograd transform of this geometry has ", u_floats(s),
                     " (pack it with convolution_pack_weight for the same shapes)");
  run_transformed(x.data<float>(), packed.data<float>(), b.defined() ? b.data<float>() : nullptr, y.data<float>(), s);
}

void winograd_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g) {
  // gx = conv(gy, w rotated, channels swapped), padded by 2 - p so it is gx's size again.
  Wino s = make_wino(gy.size(0), gy.size(1), w.size(1), gy.size(2), gy.size(3), 2 - g.padding[0], 2 - g.padding[1]);
  run(gy.data<float>(), w.data<float>(), w.size(1), true, nullptr, gx.data<float>(), s);
}

FLOW_AVX2_END

// baseline code: it decides whether the AVX2 kernels above may run at all
bool winograd_applicable(const Shape& x, const Shape& w, const ConvGeom& g, bool weight_grad) {
  if (!packed_sgemm_available() || x.size() != 4 || w.size() != 4 || w[2] != 3 || w[3] != 3 || g.groups != 1)
    return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.stride[i] != 1 || g.dilation[i] != 1 || g.padding[i] < 0 || g.padding[i] > 2) return false;
  if (x[1] < 16 || w[0] < 16) return false;
  int64_t H = x[2], W = x[3], OH = H + 2 * g.padding[0] - 2, OW = W + 2 * g.padding[1] - 2;
  if (OH < 1 || OW < 1) return false;
  // Too few tiles and the weight transform (16 x C x K floats through memory) outweighs the saved products:
  // batch 1 at 4x4 with 512 channels runs 6 ms against oneDNN's 3. Where oneDNN has AVX-512 kernels its
  // direct forward and backward-data also beat Winograd on batch 32 at 4x4 (128 tiles; 512 channels, Zen 4,
  // 2 threads: 11.7 -> 9.1 and 13.0 -> 9.2 ms), though not at 8x8 (512 tiles) nor in backward-weight.
  const int64_t min_tiles = cpu_capability() >= CpuIsa::kAvx512 ? (weight_grad ? 64 : 256) : 64;
  if (x[0] * ((OH + 1) / 2) * ((OW + 1) / 2) < min_tiles) return false;
  // The transformed weights take 16/9 of the weight's memory again; past 256 MiB (channels in the
  // thousands) oneDNN's direct kernel, which needs none, is the better trade.
  if (16 * ((w[0] + MR - 1) / MR * MR) * x[1] * int64_t(sizeof(float)) > (int64_t(256) << 20)) return false;
  // Tile offsets are 32-bit gather indices into the padded input (forward) or output gradient (backward).
  int64_t planes = x[0] * std::max(x[1], w[0]);
  int64_t area = (std::max(H, OH) + 6) * (std::max(W, OW) + 6);
  return planes * area < std::numeric_limits<int32_t>::max();
}

#else  // no AVX2/FMA in this build

bool winograd_applicable(const Shape&, const Shape&, const ConvGeom&, bool) { return false; }
void winograd_conv_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}
int64_t winograd_packed_weight_numel(const Shape&) { return 0; }
void winograd_pack_weights(const Tensor&, const Tensor&) {}
void winograd_conv_forward_packed(const Tensor&, const Tensor&, int64_t, const Tensor&, const Tensor&,
                                  const ConvGeom&) {}
void winograd_conv_backward_data(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}

#endif

}  // namespace flow
