#include "winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "../../core/error.h"
#include "parallel.h"
#include "sgemm_packed.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FLOW_WINOGRAD 1
#endif

namespace flow {

#ifdef FLOW_WINOGRAD

namespace {

constexpr int64_t MR = kSgemmMR, NR = kSgemmNR;

// The convolution as run: x is N x C x H x W, y is N x K x OH x OW, padding (ph, pw). Outputs are covered by
// TH x TW tiles of 2x2 per image; tile (th, tw) reads rows 2th..2th+3 and columns 2tw..2tw+3 of the input
// zero-padded to Hp x Wp.
struct Wino {
  int64_t N, C, K, H, W, OH, OW, ph, pw, TH, TW, Hp, Wp;
  int64_t T() const { return N * TH * TW; }
  int64_t KP() const { return (K + MR - 1) / MR; }  // output channels in panels of MR
  int64_t plane() const { return Hp * Wp; }
};

Wino make_wino(int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t ph, int64_t pw) {
  Wino s{N, C, K, H, W, H + 2 * ph - 2, W + 2 * pw - 2, ph, pw, 0, 0, 0, 0};
  s.TH = (s.OH + 1) / 2, s.TW = (s.OW + 1) / 2;
  s.Hp = 2 * s.TH + 2, s.Wp = 2 * s.TW + 2;
  return s;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// A thread's scratch, grown on demand and kept (the same layers come back every step). Throws on failure
// with the buffer left empty; parallel_for carries the error out of the region.
float* grow(std::unique_ptr<float[], FreeDeleter>& buf, size_t& cap, size_t n) {
  if (n > cap) {
    cap = 0;
    buf.reset(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64)));
    FLOW_CHECK(buf != nullptr, Runtime, "conv: out of memory for the Winograd scratch (", n * sizeof(float),
               " bytes)");
    cap = n;
  }
  return buf.get();
}

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
void output_transform(const Wino& s, const TileGroup& g, const float* m, int64_t xs, float bias, int64_t k,
                      float* y) {
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

// Distance in floats between the 16 element-wise products' operands: n rounded to whole 64-byte lines and
// kept off multiples of 2 KiB, where the transforms' 16 streams would all fall into the same L1 sets
// (64 input channels x 64 tiles is exactly 16 KiB; with the aliasing, backward-weight's transform ran 4x
// slower).
int64_t xi_stride(int64_t n) {
  n = (n + 15) / 16 * 16;
  return n % 512 == 0 ? n + 16 : n;
}

// Tiles [t0, t0 + tb): transform them into V, run the 16 GEMMs (K x C) @ (C x tiles) into M, transform back.
void run_block(const Wino& s, const float* Xp, const float* U, const float* bias, float* y, int64_t t0, int64_t tb,
               float* V, float* M) {
  const int64_t C = s.C, KP = s.KP(), NTP = (tb + NR - 1) / NR, end = t0 + tb;
  const int64_t v_xi = xi_stride(NTP * C * NR), m_xi = xi_stride(KP * NTP * MR * NR);
  for (int64_t tp = 0; tp < NTP; ++tp)
    for (int64_t h = 0; h < NR; h += 8) {
      TileGroup g = tile_group(s, t0 + tp * NR + h, end);
      input_transform(s, Xp, g, V + tp * C * NR + h, v_xi);
    }
  for (int64_t xi = 0; xi < 16; ++xi)
    for (int64_t kp = 0; kp < KP; ++kp)
      for (int64_t tp = 0; tp < NTP; ++tp)
        sgemm_microkernel_6x16(C, U + (xi * KP + kp) * C * MR, V + xi * v_xi + tp * C * NR,
                               M + xi * m_xi + (kp * NTP + tp) * MR * NR);
  for (int64_t tp = 0; tp < NTP; ++tp)
    for (int64_t h = 0; h < NR; h += 8) {
      TileGroup g = tile_group(s, t0 + tp * NR + h, end);
      if (g.valid == 0) continue;
      for (int64_t k = 0; k < s.K; ++k)
        output_transform(s, g, M + ((k / MR) * NTP + tp) * MR * NR + (k % MR) * NR + h, m_xi,
                         bias ? bias[k] : 0.f, k, y);
    }
}

// Tiles per block: V and M of a block (16 x tiles x (C + K) floats) about fill L2 (512 KiB per Zen 3 core),
// while a block is large enough that streaming all of U once per block stays cheap.
int64_t block_tiles(const Wino& s) {
  int64_t tb = (8192 / (s.C + s.K)) / NR * NR;
  return std::clamp<int64_t>(tb, 2 * NR, 16 * NR);
}

void run(const float* x, const float* w, int64_t I, bool flip, const float* bias, float* y, const Wino& s) {
  Tensor hold_u = empty({16 * s.KP() * MR * s.C}, DType::Float32);
  Tensor hold_x = empty({s.N * s.C * s.plane()}, DType::Float32);
  float* U = hold_u.data<float>();
  float* Xp = hold_x.data<float>();
  transform_weights(w, I, flip, s, U);
  pad_input(x, s, Xp);
  const int64_t TB = block_tiles(s), T = s.T(), nblocks = (T + TB - 1) / TB;
  parallel_for(nblocks, 1, [&](int64_t b, int64_t e) {
    thread_local std::unique_ptr<float[], FreeDeleter> vbuf, mbuf;
    thread_local size_t vcap = 0, mcap = 0;
    const int64_t NTP = (TB + NR - 1) / NR;
    float* V = grow(vbuf, vcap, static_cast<size_t>(16 * xi_stride(NTP * s.C * NR)));
    float* M = grow(mbuf, mcap, static_cast<size_t>(16 * xi_stride(s.KP() * NTP * MR * NR)));
    for (int64_t blk = b; blk < e; ++blk)
      run_block(s, Xp, U, bias, y, blk * TB, std::min(TB, T - blk * TB), V, M);
  });
}

// ---- backward-weight: dU[xi][k][c] = sum over tiles of (A gy A^T)[xi][k] * V[xi][c], then dW = G^T dU G
// (A^T = [1 1 1 0; 0 1 -1 -1] as above). Lanes run over channels here, since the products sum over tiles.

constexpr int64_t CB = NR;  // input channels per B panel

// x (N x C x H x W) as zero-padded NHWC: out[n][r][col][c] = x[n][c][r - ph][col - pw] over Hp x Wp
// positions, channel stride cst >= C with the extra channels zero. A tile's channel groups are then
// unit-stride loads, where NCHW would need a gather per value.
void to_nhwc_padded(const float* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t Hp,
                    int64_t Wp, int64_t cst, float* out) {
  parallel_for(N * Hp, 4, [&](int64_t b, int64_t e) {
    for (int64_t nr = b; nr < e; ++nr) {
      int64_t n = nr / Hp, ir = nr % Hp - ph;
      float* o = out + nr * Wp * cst;
      if (ir < 0 || ir >= H) {
        std::memset(o, 0, sizeof(float) * Wp * cst);
        continue;
      }
      std::memset(o, 0, sizeof(float) * pw * cst);
      std::memset(o + (pw + W) * cst, 0, sizeof(float) * (Wp - pw - W) * cst);
      const float* src = x + (n * C * H + ir) * W;  // channel c's row at src + c * H * W
      float* dst = o + pw * cst;
      int64_t c8 = C / 8 * 8, w8 = W / 8 * 8;
      for (int64_t c = 0; c < c8; c += 8) {
        for (int64_t w = 0; w < w8; w += 8) {  // an 8 x 8 block (channels x columns), transposed in registers
          __m256 r[8], u[8];
          for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (c + i) * H * W + w);
          for (int i = 0; i < 8; i += 2) {
            u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
          }
          for (int i = 0; i < 8; i += 4)
            for (int j = 0; j < 2; ++j) {
              r[i + j] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
              r[i + j + 2] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
            }
          // r[0..3] hold columns {0,4}, {2,6}, {1,5}, {3,7} of channels 0-3 (halves), r[4..7] of channels 4-7
          const int col[4] = {0, 2, 1, 3};
          for (int i = 0; i < 4; ++i) {
            _mm256_storeu_ps(dst + (w + col[i]) * cst + c, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
            _mm256_storeu_ps(dst + (w + col[i] + 4) * cst + c, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
          }
        }
        for (int64_t w = w8; w < W; ++w)
          for (int64_t i = 0; i < 8; ++i) dst[w * cst + c + i] = src[(c + i) * H * W + w];
      }
      for (int64_t w = 0; w < W; ++w) {
        for (int64_t c = c8; c < C; ++c) dst[w * cst + c] = src[c * H * W + w];
        for (int64_t c = C; c < cst; ++c) dst[w * cst + c] = 0.f;
      }
    }
  });
}

// Operands of the backward-weight products in NHWC: Xn is x padded as the forward's Xp (channel stride
// cst), Gn is gy padded to whole 2x2 tiles (2TH x 2TW, channel stride kst: outputs past the image have no
// gradient).
struct BwOperands {
  const float* Xn;
  const float* Gn;
  int64_t cst, kst;
};

// For tiles [t0, t0 + tb): Bp[xi][cp][t][CB] = V of input channels cp * CB + lane and, for output channel
// panels [kp0, kp1), Ap[xi][kp][t][MR] = A gy A^T of output channels kp * MR + lane (zero past C and K): the
// GEMMs' panels with tiles as depth.
void transform_block_bw(const Wino& s, const BwOperands& o, int64_t t0, int64_t tb, int64_t kp0, int64_t kp1, float* Ap,
                        float* Bp) {
  const int64_t per = s.TH * s.TW, CP = (s.C + CB - 1) / CB, KP = s.KP(), gw = 2 * s.TW;
  const int64_t a_xi = xi_stride(KP * tb * MR), b_xi = xi_stride(CP * tb * CB);
  const __m256i m6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t i = 0; i < tb; ++i) {
    int64_t t = t0 + i, n = t / per, q = t % per, th = q / s.TW, tw = q % s.TW;
    const float* xb = o.Xn + ((n * s.Hp + 2 * th) * s.Wp + 2 * tw) * o.cst;
    for (int64_t c0 = 0; c0 < CP * CB; c0 += 8) {
      float* v = Bp + ((c0 / CB) * tb + i) * CB + c0 % CB;
      __m256 d[4][4];
      for (int r = 0; r < 4; ++r)
        for (int qq = 0; qq < 4; ++qq) d[r][qq] = _mm256_loadu_ps(xb + (r * s.Wp + qq) * o.cst + c0);
      __m256 tt[4][4];
      for (int qq = 0; qq < 4; ++qq) {
        tt[0][qq] = _mm256_sub_ps(d[0][qq], d[2][qq]);
        tt[1][qq] = _mm256_add_ps(d[1][qq], d[2][qq]);
        tt[2][qq] = _mm256_sub_ps(d[2][qq], d[1][qq]);
        tt[3][qq] = _mm256_sub_ps(d[1][qq], d[3][qq]);
      }
      for (int r = 0; r < 4; ++r) {
        _mm256_store_ps(v + (r * 4 + 0) * b_xi, _mm256_sub_ps(tt[r][0], tt[r][2]));
        _mm256_store_ps(v + (r * 4 + 1) * b_xi, _mm256_add_ps(tt[r][1], tt[r][2]));
        _mm256_store_ps(v + (r * 4 + 2) * b_xi, _mm256_sub_ps(tt[r][2], tt[r][1]));
        _mm256_store_ps(v + (r * 4 + 3) * b_xi, _mm256_sub_ps(tt[r][1], tt[r][3]));
      }
    }
    const float* gb = o.Gn + ((n * 2 * s.TH + 2 * th) * gw + 2 * tw) * o.kst;
    for (int64_t kp = kp0; kp < kp1; ++kp) {
      __m256 y[2][2];  // lanes 6 and 7 hold the next panel's channels; the next tile overwrites them
      for (int r = 0; r < 2; ++r)
        for (int qq = 0; qq < 2; ++qq) y[r][qq] = _mm256_loadu_ps(gb + (r * gw + qq) * o.kst + kp * MR);
      __m256 a[4][2];  // A gy: rows gy0, gy0 + gy1, gy0 - gy1, -gy1
      for (int qq = 0; qq < 2; ++qq) {
        a[0][qq] = y[0][qq];
        a[1][qq] = _mm256_add_ps(y[0][qq], y[1][qq]);
        a[2][qq] = _mm256_sub_ps(y[0][qq], y[1][qq]);
        a[3][qq] = _mm256_sub_ps(zero, y[1][qq]);
      }
      float* out = Ap + (kp * tb + i) * MR;
      for (int r = 0; r < 4; ++r) {
        __m256 m[4] = {a[r][0], _mm256_add_ps(a[r][0], a[r][1]), _mm256_sub_ps(a[r][0], a[r][1]),
                       _mm256_sub_ps(zero, a[r][1])};
        // 8-wide stores whose two extra lanes the next tile overwrites; the block's last tile is masked
        for (int qq = 0; qq < 4; ++qq) {
          if (i + 1 < tb) _mm256_storeu_ps(out + (r * 4 + qq) * a_xi, m[qq]);
          else _mm256_maskstore_ps(out + (r * 4 + qq) * a_xi, m6, m[qq]);
        }
      }
    }
  }
}

// Tiles per block for backward-weight: the depth of each register-block product (longer amortises its C
// update) while one xi's panels, (K + C) x tiles floats, stay in L2.
int64_t block_tiles_bw(const Wino& s) { return std::clamp<int64_t>(65536 / (s.K + s.C), 64, 256); }

constexpr int64_t kBlk = MR * CB;  // one register block of (output, input) channel pairs

void run_backward_weight(const float* x, const float* gy, float* gw, const Wino& s) {
  const int64_t CP = (s.C + CB - 1) / CB, KP = s.KP(), T = s.T(), TB = block_tiles_bw(s);
  const int64_t nblocks = (T + TB - 1) / TB, nt = get_num_threads(), acc_size = 16 * KP * CP * kBlk;
  BwOperands o{nullptr, nullptr, CP * CB, KP * MR + 2};  // kst: an 8-wide load at the last panel stays inside
  Tensor hold_x = empty({s.N * s.plane() * o.cst}, DType::Float32);
  Tensor hold_g = empty({s.N * 4 * s.TH * s.TW * o.kst}, DType::Float32);
  to_nhwc_padded(x, s.N, s.C, s.H, s.W, s.ph, s.pw, s.Hp, s.Wp, o.cst, hold_x.data<float>());
  to_nhwc_padded(gy, s.N, s.K, s.OH, s.OW, 0, 0, 2 * s.TH, 2 * s.TW, o.kst, hold_g.data<float>());
  o.Xn = hold_x.data<float>();
  o.Gn = hold_g.data<float>();
  // dU[xi][kp][cp][kBlk] sums the products over tiles. Few channel pairs: threads split the tiles, each
  // with its own dU, added at the end. Many (dU over 2 MiB, 256 channels and up): threads split the output
  // channels and run every tile into their rows of one dU (each then transforms all of the input, a small
  // cost there), where per-thread copies would cost 16 floats per pair and thread (34 MB at 512 x 512).
  const bool by_tiles = acc_size * 4 <= (2 << 20) || KP < 2 * nt;
  const int64_t parts = std::max<int64_t>(1, std::min(nt, by_tiles ? nblocks : KP));
  const int64_t nacc = by_tiles ? parts : 1;
  Tensor hold_acc = empty({nacc * acc_size}, DType::Float32);
  float* dU = hold_acc.data<float>();
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::unique_ptr<float[], FreeDeleter> abuf, bbuf;
    thread_local size_t acap = 0, bcap = 0;
    float* Ap = grow(abuf, acap, static_cast<size_t>(16 * xi_stride(KP * MR * TB)));
    float* Bp = grow(bbuf, bcap, static_cast<size_t>(16 * xi_stride(CP * CB * TB)));
    alignas(32) float tile[kBlk];
    for (int64_t p = p0; p < p1; ++p) {
      int64_t b0 = by_tiles ? nblocks * p / parts : 0, b1 = by_tiles ? nblocks * (p + 1) / parts : nblocks;
      int64_t kp0 = by_tiles ? 0 : KP * p / parts, kp1 = by_tiles ? KP : KP * (p + 1) / parts;
      float* u = dU + (by_tiles ? p * acc_size : 0);
      for (int64_t blk = b0; blk < b1; ++blk) {
        int64_t t0 = blk * TB, tb = std::min(TB, T - t0);
        const int64_t a_xi = xi_stride(KP * tb * MR), b_xi = xi_stride(CP * tb * CB);
        transform_block_bw(s, o, t0, tb, kp0, kp1, Ap, Bp);
        // xi outermost: one xi's panels stay in L2 across the (kp, cp) products
        for (int64_t xi = 0; xi < 16; ++xi)
          for (int64_t kp = kp0; kp < kp1; ++kp)
            for (int64_t cp = 0; cp < CP; ++cp) {
              sgemm_microkernel_6x16(tb, Ap + xi * a_xi + kp * tb * MR, Bp + xi * b_xi + cp * tb * CB, tile);
              float* d = u + ((xi * KP + kp) * CP + cp) * kBlk;
              for (int64_t j = 0; j < kBlk; j += 8)
                _mm256_store_ps(d + j, blk == b0 ? _mm256_load_ps(tile + j)
                                                 : _mm256_add_ps(_mm256_load_ps(d + j), _mm256_load_ps(tile + j)));
            }
      }
    }
  });
  // gw[k][c] = G^T dU G (dU summed over the parts), G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1], one register
  // block of pairs at a time in dU's memory order, lanes over input channels.
  parallel_for(KP * CP, 1, [&](int64_t b0, int64_t b1) {
    const __m256 h = _mm256_set1_ps(0.5f);
    alignas(32) float u[16][kBlk];
    alignas(32) float w9[9][8];
    for (int64_t blk = b0; blk < b1; ++blk) {
      int64_t kp = blk / CP, cp = blk % CP;
      for (int64_t xi = 0; xi < 16; ++xi) {
        const float* src = dU + ((xi * KP + kp) * CP + cp) * kBlk;
        for (int64_t j = 0; j < kBlk; j += 8) {
          __m256 v = _mm256_load_ps(src + j);
          for (int64_t p = 1; p < nacc; ++p) v = _mm256_add_ps(v, _mm256_load_ps(src + p * acc_size + j));
          _mm256_store_ps(u[xi] + j, v);
        }
      }
      for (int64_t r = 0; r < MR && kp * MR + r < s.K; ++r)
        for (int64_t hc = 0; hc < CB && cp * CB + hc < s.C; hc += 8) {
          __m256 t[3][4];
          for (int j = 0; j < 4; ++j) {
            __m256 u0 = _mm256_load_ps(u[j] + r * CB + hc), u1 = _mm256_load_ps(u[4 + j] + r * CB + hc);
            __m256 u2 = _mm256_load_ps(u[8 + j] + r * CB + hc), u3 = _mm256_load_ps(u[12 + j] + r * CB + hc);
            __m256 s12 = _mm256_mul_ps(h, _mm256_add_ps(u1, u2));
            t[0][j] = _mm256_add_ps(u0, s12);
            t[1][j] = _mm256_mul_ps(h, _mm256_sub_ps(u1, u2));
            t[2][j] = _mm256_add_ps(s12, u3);
          }
          for (int i = 0; i < 3; ++i) {
            __m256 s12 = _mm256_mul_ps(h, _mm256_add_ps(t[i][1], t[i][2]));
            _mm256_store_ps(w9[i * 3 + 0], _mm256_add_ps(t[i][0], s12));
            _mm256_store_ps(w9[i * 3 + 1], _mm256_mul_ps(h, _mm256_sub_ps(t[i][1], t[i][2])));
            _mm256_store_ps(w9[i * 3 + 2], _mm256_add_ps(s12, t[i][3]));
          }
          int64_t k = kp * MR + r, c0 = cp * CB + hc, nc = std::min<int64_t>(8, s.C - c0);
          float* out = gw + (k * s.C + c0) * 9;
          for (int64_t l = 0; l < nc; ++l)
            for (int i = 0; i < 9; ++i) out[l * 9 + i] = w9[i][l];
        }
    }
  });
}

}  // namespace

bool winograd_applicable(const Shape& x, const Shape& w, const ConvGeom& g) {
  if (!packed_sgemm_available() || x.size() != 4 || w.size() != 4 || w[2] != 3 || w[3] != 3 || g.groups != 1)
    return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.stride[i] != 1 || g.dilation[i] != 1 || g.padding[i] < 0 || g.padding[i] > 2) return false;
  if (x[1] < 16 || w[0] < 16) return false;
  // Tile offsets are 32-bit gather indices into the padded input (forward) or output gradient (backward).
  int64_t H = x[2], W = x[3], OH = H + 2 * g.padding[0] - 2, OW = W + 2 * g.padding[1] - 2;
  if (OH < 1 || OW < 1) return false;
  // Too few tiles and the weight transform (16 x C x K floats through memory) outweighs the saved products:
  // batch 1 at 4x4 with 512 channels runs 6 ms against oneDNN's 3.
  if (x[0] * ((OH + 1) / 2) * ((OW + 1) / 2) < 64) return false;
  int64_t planes = x[0] * std::max(x[1], w[0]);
  int64_t area = (std::max(H, OH) + 6) * (std::max(W, OW) + 6);
  return planes * area < std::numeric_limits<int32_t>::max();
}

void winograd_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g) {
  Wino s = make_wino(x.size(0), x.size(1), w.size(0), x.size(2), x.size(3), g.padding[0], g.padding[1]);
  run(x.data<float>(), w.data<float>(), w.size(1), false, b.defined() ? b.data<float>() : nullptr,
      y.data<float>(), s);
}

void winograd_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  Wino s = make_wino(x.size(0), x.size(1), gw.size(0), x.size(2), x.size(3), g.padding[0], g.padding[1]);
  run_backward_weight(x.data<float>(), gy.data<float>(), gw.data<float>(), s);
}

void winograd_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvGeom& g) {
  // gx = conv(gy, w rotated, channels swapped), padded by 2 - p so it is gx's size again.
  Wino s = make_wino(gy.size(0), gy.size(1), w.size(1), gy.size(2), gy.size(3), 2 - g.padding[0],
                     2 - g.padding[1]);
  run(gy.data<float>(), w.data<float>(), w.size(1), true, nullptr, gx.data<float>(), s);
}

#else  // no AVX2/FMA in this build

bool winograd_applicable(const Shape&, const Shape&, const ConvGeom&) { return false; }
void winograd_conv_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}
void winograd_conv_backward_data(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}
void winograd_conv_backward_weight(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}

#endif

}  // namespace flow
