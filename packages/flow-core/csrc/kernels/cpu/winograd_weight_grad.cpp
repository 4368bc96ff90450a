// Winograd F(2x2, 3x3) backward-weight: dU[xi][k][c] = sum over tiles of (A gy A^T)[xi][k] * V[xi][c], then
// dW = G^T dU G (A^T = [1 1 1 0; 0 1 -1 -1], B^T and G as in winograd.cpp). Lanes run over channels here,
// since the products sum over tiles.
#include "winograd.h"

#include "winograd_impl.h"

namespace flow {

#ifdef FLOW_WINOGRAD
FLOW_AVX2_BEGIN

namespace {

using namespace winograd_detail;

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
// GEMMs' panels with tiles as depth; successive xi are a_xi and b_xi floats apart.
void transform_block_bw(const Wino& s, const BwOperands& o, int64_t t0, int64_t tb, int64_t kp0, int64_t kp1, float* Ap,
                        int64_t a_xi, float* Bp, int64_t b_xi) {
  const int64_t per = s.TH * s.TW, CP = (s.C + CB - 1) / CB, gw = 2 * s.TW;
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
  ScratchBuffer hold_x(static_cast<size_t>(s.N * s.plane() * o.cst) * sizeof(float));
  ScratchBuffer hold_g(static_cast<size_t>(s.N * 4 * s.TH * s.TW * o.kst) * sizeof(float));
  to_nhwc_padded(x, s.N, s.C, s.H, s.W, s.ph, s.pw, s.Hp, s.Wp, o.cst, hold_x.as<float>());
  to_nhwc_padded(gy, s.N, s.K, s.OH, s.OW, 0, 0, 2 * s.TH, 2 * s.TW, o.kst, hold_g.as<float>());
  o.Xn = hold_x.as<float>();
  o.Gn = hold_g.as<float>();
  // dU[xi][kp][cp][kBlk] sums the products over tiles. Few channel pairs: threads split the tiles, each
  // with its own dU, added at the end. Many (dU over 2 MiB, 256 channels and up): threads split the output
  // channels and run every tile into their rows of one dU (each then transforms all of the input, a small
  // cost there), where per-thread copies would cost 16 floats per pair and thread (34 MB at 512 x 512).
  const bool by_tiles = acc_size * 4 <= (2 << 20) || KP < 2 * nt;
  const int64_t parts = std::max<int64_t>(1, std::min(nt, by_tiles ? nblocks : KP));
  const int64_t nacc = by_tiles ? parts : 1;
  ScratchBuffer hold_acc(static_cast<size_t>(nacc * acc_size) * sizeof(float));
  float* dU = hold_acc.as<float>();
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
        transform_block_bw(s, o, t0, tb, kp0, kp1, Ap, a_xi, Bp, b_xi);
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

void winograd_conv_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvGeom& g) {
  Wino s = make_wino(x.size(0), x.size(1), gw.size(0), x.size(2), x.size(3), g.padding[0], g.padding[1]);
  run_backward_weight(x.data<float>(), gy.data<float>(), gw.data<float>(), s);
}

FLOW_AVX2_END
#else  // no AVX2/FMA in this build

void winograd_conv_backward_weight(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&) {}

#endif

}  // namespace flow
