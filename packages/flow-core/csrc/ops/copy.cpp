// Data movement: copy_ (broadcasting, casting), clone, contiguous, to_dtype, fill_.
#include <algorithm>
#include <cstring>
#include <vector>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "../core/half_vec.h"
#include "../kernels/cpu/loops.h"
#include "functions.h"

namespace flow {
namespace {

#ifdef __AVX2__
// dst[c * dst_ld + r] = src[r * src_ld + c] for an 8 x 8 block of 4-byte elements (bits moved as floats).
inline void transpose8x8_f32(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
  __m256 r0 = _mm256_loadu_ps(src + 0 * src_ld), r1 = _mm256_loadu_ps(src + 1 * src_ld);
  __m256 r2 = _mm256_loadu_ps(src + 2 * src_ld), r3 = _mm256_loadu_ps(src + 3 * src_ld);
  __m256 r4 = _mm256_loadu_ps(src + 4 * src_ld), r5 = _mm256_loadu_ps(src + 5 * src_ld);
  __m256 r6 = _mm256_loadu_ps(src + 6 * src_ld), r7 = _mm256_loadu_ps(src + 7 * src_ld);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst + 0 * dst_ld, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + 1 * dst_ld, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * dst_ld, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * dst_ld, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * dst_ld, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * dst_ld, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * dst_ld, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * dst_ld, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

// A same-dtype copy between layouts that walk memory along different dims: dst has unit stride along dim
// `a`, src along dim `b` (the contiguous copy of w.t(), of attention's k.transpose(-2, -1), ...). Walking
// either tensor in order makes every access to the other a stride jump (a cache line per element), so the
// (a, b) plane is copied in T x T tiles. Returns false when the layouts do
// not fit (then the generic loop runs).
bool copy_transposed(const Tensor& dst, const Tensor& src) {
  constexpr int64_t T = 32;
  if (dst.dtype() != src.dtype() || dst.sizes() != src.sizes() || dst.numel() < 4 * T * T) return false;
  const int64_t nd = dst.dim(), isz = dst.itemsize();
  const Shape& sz = dst.sizes();
  int64_t a = -1, b = -1;
  for (int64_t d = 0; d < nd; ++d) {
    if (sz[d] == 1) continue;
    if (dst.strides()[d] == 1) a = d;
    if (src.strides()[d] == 1) b = d;
  }
  if (a < 0 || b < 0 || a == b || sz[a] < T || sz[b] < T) return false;
  // the other dims, walked by a flat index (their strides in elements)
  std::vector<int64_t> osz, ods, oss;
  for (int64_t d = nd - 1; d >= 0; --d)
    if (d != a && d != b && sz[d] != 1) {
      osz.push_back(sz[d]);
      ods.push_back(dst.strides()[d]);
      oss.push_back(src.strides()[d]);
    }
  const int64_t na = sz[a], nb = sz[b], dsb = dst.strides()[b], ssa = src.strides()[a];
  const int64_t ta = (na + T - 1) / T, tb = (nb + T - 1) / T;
  const int64_t outer = dst.numel() / (na * nb);
  auto run = [&](auto tag) {
    using U = decltype(tag);  // an unsigned integer of the element's width: the copy moves bits
    U* dp = static_cast<U*>(dst.raw_data());
    const U* sp = static_cast<const U*>(src.raw_data());
    parallel_for(outer * ta * tb, std::max<int64_t>(1, kParallelGrain / (T * T)), [&](int64_t w0, int64_t w1) {
      for (int64_t w = w0; w < w1; ++w) {
        int64_t o = w / (ta * tb), r = w % (ta * tb);
        int64_t i0 = (r / tb) * T, j0 = (r % tb) * T;
        int64_t doff = 0, soff = 0;
        for (size_t k = 0; k < osz.size(); ++k) {
          int64_t idx = o % osz[k];
          o /= osz[k];
          doff += idx * ods[k];
          soff += idx * oss[k];
        }
        const int64_t ni = std::min(i0 + T, na) - i0, nj = std::min(j0 + T, nb) - j0;
#ifdef __AVX2__
        if constexpr (sizeof(U) == 4) {
          if (ni == T && nj == T) {  // whole tiles: 8 x 8 blocks transposed in registers
            for (int64_t bi = 0; bi < T; bi += 8)
              for (int64_t bj = 0; bj < T; bj += 8)
                transpose8x8_f32(reinterpret_cast<const float*>(sp + soff + (i0 + bi) * ssa + j0 + bj), ssa,
                                 reinterpret_cast<float*>(dp + doff + (j0 + bj) * dsb + i0 + bi), dsb);
            continue;
          }
        }
#endif
        // through a local tile: rows read whole from src, columns written whole to dst, so no line has to
        // stay cached between uses (power-of-two strides would map them all to one cache set)
        U tile[T * T];
        for (int64_t i = 0; i < ni; ++i) {
          const U* srow = sp + soff + (i0 + i) * ssa + j0;
          for (int64_t j = 0; j < nj; ++j) tile[i * T + j] = srow[j];
        }
        for (int64_t j = 0; j < nj; ++j) {
          U* drow = dp + doff + (j0 + j) * dsb + i0;
          for (int64_t i = 0; i < ni; ++i) drow[i] = tile[i * T + j];
        }
      }
    });
  };
  switch (isz) {
    case 1: run(uint8_t()); return true;
    case 2: run(uint16_t()); return true;
    case 4: run(uint32_t()); return true;
    case 8: run(uint64_t()); return true;
    default: return false;
  }
}

void copy_kernel(const Tensor& dst, const Tensor& src) {
  FLOW_RUNTIME_CHECK(src.dim() <= dst.dim(), "copy_: source of shape ", shape_str(src.sizes()),
                     " cannot be broadcast to ", shape_str(dst.sizes()));
  broadcast_shapes(dst.sizes(), src.sizes(), "copy_");  // raises on mismatch
  for (int64_t i = 0; i < src.dim(); ++i) {
    int64_t sd = src.sizes()[i], dd = dst.sizes()[dst.dim() - src.dim() + i];
    FLOW_RUNTIME_CHECK(sd == dd || sd == 1, "copy_: the size of the source (", shape_str(src.sizes()),
                       ") must match the destination (", shape_str(dst.sizes()), ")");
  }
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && src.sizes() == dst.sizes()) {
    if (dst.raw_data() == src.raw_data()) return;
    char* d = static_cast<char*>(dst.raw_data());
    const char* s = static_cast<const char*>(src.raw_data());
    int64_t nbytes = dst.numel() * dst.itemsize();
    parallel_for(nbytes, int64_t(1) << 20, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, e - b); });
    return;
  }
  if (copy_transposed(dst, src)) return;
  dispatch_all(dst.dtype(), "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(src.dtype(), "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      for_each_element<2>({&dst, &src}, dst.sizes(), [](std::array<char*, 2> p, std::array<int64_t, 2> st, int64_t n) {
        if constexpr (std::is_same_v<D, bool>) {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<bool*>(p[0] + i * st[0]) =
                static_cast<double>(static_cast<acc_t<S>>(*reinterpret_cast<const S*>(p[1] + i * st[1]))) != 0.0;
        } else {
          using A = acc_t<S>;
          if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
            // contiguous runs (e.g. the rows of a transposed tensor made contiguous)
            if constexpr (std::is_same_v<D, S>) {
              std::memmove(p[0], p[1], n * sizeof(D));  // memmove: a copy_ between overlapping views
            } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>) {
              float_to_half_run(reinterpret_cast<const float*>(p[1]), reinterpret_cast<Half*>(p[0]), n);
            } else if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>) {
              half_to_float_run(reinterpret_cast<const Half*>(p[1]), reinterpret_cast<float*>(p[0]), n);
            } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, BFloat16>) {
              float_to_bfloat16_run(reinterpret_cast<const float*>(p[1]), reinterpret_cast<BFloat16*>(p[0]), n);
            } else {
              D* d = reinterpret_cast<D*>(p[0]);
              const S* s = reinterpret_cast<const S*>(p[1]);
#pragma omp simd
              for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(static_cast<A>(s[i]));
            }
          } else if (st[0] == sizeof(D) && st[1] == -static_cast<int64_t>(sizeof(S))) {
            // a reversed run (flip's view along its innermost dim)
            D* d = reinterpret_cast<D*>(p[0]);
            const S* s = reinterpret_cast<const S*>(p[1]);
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(static_cast<A>(s[-i]));
          } else if (st[0] == sizeof(D) && st[1] == 0) {
            // a run of one broadcast value (fill_, an expanded scalar, a bias along its rows): `omp simd`, as
            // the -O2 build's cost model leaves fill loops scalar (one store per cycle, 3-4x slower)
            D* d = reinterpret_cast<D*>(p[0]);
            const D v = static_cast<D>(static_cast<A>(*reinterpret_cast<const S*>(p[1])));
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) d[i] = v;
          } else {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<D*>(p[0] + i * st[0]) =
                  static_cast<D>(static_cast<A>(*reinterpret_cast<const S*>(p[1] + i * st[1])));
          }
        }
      });
    });
  });
}

std::vector<TensorMeta> same_meta(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

}  // namespace

// copy(self, src): a tensor shaped and typed like self holding src's values; its in-place form is copy_.
FLOW_OP(copy)
    .schema("copy(Tensor self, Tensor src) -> Tensor")
    .traits(kElementwise)
    .meta(same_meta)
    .inplace_variant()
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[1]); })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor(), c.needs(1) ? g[0] : Tensor()};
    });

FLOW_OP(clone)
    .schema("clone(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(same_meta)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[0]); })
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {g[0]}; });

FLOW_OP(contiguous)
    .schema("contiguous(Tensor self) -> Tensor")
    .traits(kUnary)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      if (in[0].is_contiguous()) return {in[0]};
      Tensor out = empty(in[0].sizes(), in[0].dtype(), in[0].device());
      copy_kernel(out, in[0]);
      return {out};
    })
    .meta(same_meta)
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {g[0]}; });

FLOW_OP(to_dtype)
    .schema("to_dtype(Tensor self, ScalarType dtype) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), a.dtype("dtype"), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[0]); })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::to_dtype(g[0], c.input_meta(0).dtype)};
    });

// The values of self in memory Python can read (item, numpy, tolist): self itself for a tensor with storage.
// It exists so that interception sees those reads: a global tensor's handler gathers its shards, a graph
// tracer refuses the data-dependent read.
FLOW_OP(_materialize)
    .schema("_materialize(Tensor self) -> Tensor")
    .traits(kNonDifferentiable)
    .meta(same_meta)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList { return {in[0]}; })
    .compute(DeviceType::Meta, [](const TensorList&, const Attrs&) -> TensorList {
      fail(ErrorKind::NotImplemented, "Cannot read the values of a meta tensor; it has no data");
    });

namespace ops {
void fill_cpu(const Tensor& dst, Scalar v) {
  if (dst.numel() == 0) return;
  if (!dst.is_contiguous()) {  // copy_'s kernel walks any strides and vectorises a broadcast scalar
    copy_kernel(dst, ops::scalar_tensor(v, dst.dtype()));
    return;
  }
  // a dense fill needs no scalar tensor, geometry or strided loop: creation ops call this on every tensor
  dispatch_all(dst.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T x = v.to<T>();
    T* p = dst.data<T>();
    parallel_for(dst.numel(), int64_t(1) << 16, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, x); });
  });
}
}  // namespace ops

FLOW_OP(fill)
    .schema("fill(Tensor self, Scalar value) -> Tensor")
    .traits(kElementwise | kCreation | kAliasedOutputOk)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      check_scalar_fits(a.s("value"), out[0].dtype());
      ops::fill_cpu(out[0], a.s("value"));
    })
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor()};
    });

}  // namespace flow
