#include "index_util.h"

#include "../kernels/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

namespace flow::idx {

namespace {
template <typename F>
void dispatch_bytes(int64_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
  }
  fail(ErrorKind::Runtime, "index kernel: unsupported item size ", itemsize);
}

template <typename T>
bool isnan_v(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}
}  // namespace

bool check_range(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg,
                 bool allow_negative, const char* prefix) {
  Tensor c = ops::contiguous(to_long(ix));
  const int64_t* p = c.data<int64_t>();
  int64_t n = c.numel();
  // the bounds as an omp-simd min/max over chunks (a loop that exits at the first bad index stays scalar);
  // only a failing check looks for the first offender, for the message
  const int64_t lo_ok = allow_negative ? -size : 0;
  constexpr int64_t kChunk = 1 << 14;
  const int64_t nc = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> lo(static_cast<size_t>(nc), 0), hi(static_cast<size_t>(nc), 0);
  parallel_for(nc, 8, [&](int64_t c0, int64_t c1) {
    for (int64_t k = c0; k < c1; ++k) {
      int64_t mn = std::numeric_limits<int64_t>::max(), mx = std::numeric_limits<int64_t>::min();
      const int64_t b = k * kChunk, e = std::min(n, b + kChunk);
#pragma omp simd reduction(min : mn) reduction(max : mx)
      for (int64_t i = b; i < e; ++i) {
        mn = std::min(mn, p[i]);
        mx = std::max(mx, p[i]);
      }
      lo[k] = mn, hi[k] = mx;
    }
  });
  int64_t mn = n ? *std::min_element(lo.begin(), lo.end()) : 0, mx = n ? *std::max_element(hi.begin(), hi.end()) : 0;
  if (mn < lo_ok || mx >= size) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = p[i];
      if (v < lo_ok || v >= size) {
        if (custom_msg) fail(kind, custom_msg);
        fail(kind, prefix, "index ", v, " is out of bounds for dimension ", dim, " with size ", size);
      }
    }
  }
  return mn < 0;
}

Tensor wrapped_index(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg,
                     bool allow_negative, const char* prefix) {
  Tensor c = ops::contiguous(to_long(ix));
  if (!check_range(c, size, dim, kind, custom_msg, allow_negative, prefix)) return c;
  Tensor w = empty(c.sizes(), DType::Int64, c.device());
  const int64_t* p = c.data<int64_t>();
  int64_t* q = w.data<int64_t>();
  const int64_t n = c.numel();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) q[i] = p[i] < 0 ? p[i] + size : p[i];
  return w;
}

bool offset_gather(const Tensor& dst, const Tensor& src_r, const Tensor& off_r, int64_t stride, int64_t bound) {
  if (dst.numel() == 0) return true;
  std::atomic<bool> bad{false};
  dispatch_bytes(dst.itemsize(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
    const uint64_t ub = static_cast<uint64_t>(bound);  // a negative offset compares as huge: out of bounds
    for_each_element<3>({&dst, &src_r, &off_r}, dst.sizes(),
                        [sb, ub, &bad](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
      // An offset outside [0, bound) reads element 0 instead and flags the call (checked in the same pass,
      // so a gather reads its index once); the caller then raises.
      bool any_bad = false;
      if (s[0] == sizeof(T) && s[1] == 0 && s[2] == sizeof(int64_t) && sb % sizeof(T) == 0) {
        // along the innermost dim (gather(x, -1, i), take_along_dim): dst[i] = row[idx[i] * stride], with
        // plain scalar loads: AVX2's gather instructions (what `omp simd` makes of this) are microcoded on
        // AMD and 3-4x slower than two loads per cycle
        T* d = reinterpret_cast<T*>(p[0]);
        const T* row = reinterpret_cast<const T*>(p[1]);
        const int64_t* o = reinterpret_cast<const int64_t*>(p[2]);
        const int64_t se = sb / static_cast<int64_t>(sizeof(T));
        for (int64_t i = 0; i < n; ++i) {
          uint64_t v = static_cast<uint64_t>(o[i]);
          bool ok = v < ub;
          any_bad |= !ok;
          d[i] = row[static_cast<int64_t>(ok ? v : 0) * se];
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          uint64_t v = static_cast<uint64_t>(*reinterpret_cast<const int64_t*>(p[2] + i * s[2]));
          bool ok = v < ub;
          any_bad |= !ok;
          *reinterpret_cast<T*>(p[0] + i * s[0]) =
              *reinterpret_cast<const T*>(p[1] + i * s[1] + static_cast<int64_t>(ok ? v : 0) * sb);
        }
      }
      if (any_bad) bad.store(true, std::memory_order_relaxed);
    });
  });
  return !bad.load();
}

void offset_scatter(const Tensor& dst_r, const Tensor& src_r, const Tensor& off_r, int64_t stride, Reduce r,
                    const Shape& sizes, bool dest_disjoint) {
  if (shape_numel(sizes) == 0) return;
  if (r == Reduce::Assign) {
    dispatch_bytes(dst_r.itemsize(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
      for_each_element<3>({&dst_r, &src_r, &off_r}, sizes,
                          [sb](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t o = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
          *reinterpret_cast<T*>(p[0] + i * s[0] + o * sb) = *reinterpret_cast<const T*>(p[1] + i * s[1]);
        }
      });
    });
    return;
  }
  // Reductions: several elements may hit one target. When the scattered dim is the innermost of `sizes`
  // and the only one along which dst_r stays put, each run of sizes[-1] elements (a line) has targets of
  // its own, so whole lines go to threads (duplicates stay in index order within one thread); otherwise
  // everything runs on one thread.
  const int64_t nd = static_cast<int64_t>(sizes.size()), line = nd > 0 ? sizes[nd - 1] : 1;
  bool by_lines = dest_disjoint && nd > 0 && dst_r.dim() == nd && dst_r.stride(nd - 1) == 0;
  for (int64_t d = 0; d + 1 < nd; ++d)
    if (sizes[d] > 1 && dst_r.stride(d) == 0) by_lines = false;
  dispatch_all(dst_r.dtype(), "scatter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t sb = stride * static_cast<int64_t>(sizeof(T));
    auto with_op = [&](auto combine) {
      auto run = [sb, combine](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t o = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
          T* d = reinterpret_cast<T*>(p[0] + i * s[0] + o * sb);
          combine(d, static_cast<A>(*reinterpret_cast<const T*>(p[1] + i * s[1])));
        }
      };
      if (!by_lines) {
        for_each_element<3>({&dst_r, &src_r, &off_r}, sizes, run, std::numeric_limits<int64_t>::max());
        return;
      }
      // make_geometry keeps the logical order here (dst_r has a stride-0 dim), so element ranges that
      // start and end on line boundaries hold whole lines
      ElementwiseGeometry<3> g = make_geometry<3>({&dst_r, &src_r, &off_r}, sizes);
      parallel_for(g.numel / line, std::max<int64_t>(1, kParallelGrain / line), [&](int64_t l0, int64_t l1) {
        auto local = run;
        loop_range<3>(g, l0 * line, l1 * line, local);
      });
    };
    if constexpr (std::is_same_v<T, bool>) {
      if (r == Reduce::Add || r == Reduce::Mean || r == Reduce::Max) with_op([](T* d, A v) { *d = *d || v; });
      else with_op([](T* d, A v) { *d = *d && v; });
    } else {
      switch (r) {
        case Reduce::Add:
        case Reduce::Mean: return with_op([](T* d, A v) { *d = static_cast<T>(static_cast<A>(*d) + v); });
        case Reduce::Mul: return with_op([](T* d, A v) { *d = static_cast<T>(static_cast<A>(*d) * v); });
        case Reduce::Max:
          return with_op([](T* d, A v) {
            if (isnan_v(v) || v > static_cast<A>(*d)) *d = static_cast<T>(v);
          });
        case Reduce::Min:
          return with_op([](T* d, A v) {
            if (isnan_v(v) || v < static_cast<A>(*d)) *d = static_cast<T>(v);
          });
        default: break;
      }
    }
  });
}

Reduce parse_reduce(const std::string& s, bool scatter_reduce) {
  if (scatter_reduce) {
    if (s == "sum") return Reduce::Add;
    if (s == "prod") return Reduce::Mul;
    if (s == "mean") return Reduce::Mean;
    if (s == "amax") return Reduce::Max;
    if (s == "amin") return Reduce::Min;
    fail(ErrorKind::Runtime, "reduce argument must be either sum, prod, mean, amax or amin, got ", s);
  }
  if (s == "add") return Reduce::Add;
  if (s == "multiply") return Reduce::Mul;
  fail(ErrorKind::Runtime, "reduce argument must be either add or multiply.");
}

}  // namespace flow::idx
