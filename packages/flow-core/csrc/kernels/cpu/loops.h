// Elementwise iteration over N operands of one (broadcast) shape. Operand 0 is the output. Dimensions are
// coalesced, then the flat index range is split across threads; `run(ptrs, strides, n)` is called for each
// innermost run of n elements, with byte strides per operand. Fast paths for contiguous and
// scalar-broadcast operands are left to `run`, which sees the strides.
#pragma once
#include <algorithm>
#include <array>
#include <vector>

#include "../../core/tensor.h"
#include "parallel.h"

namespace flow {

template <int N>
struct ElementwiseGeometry {
  std::vector<int64_t> shape;                 // coalesced, innermost last
  std::vector<std::array<int64_t, N>> strides;  // bytes, per dim per operand
  std::array<char*, N> base;
  int64_t numel = 1;
};

// Byte strides of `t` broadcast to `shape` (0 along broadcast dims).
inline std::vector<int64_t> broadcast_byte_strides(const Tensor& t, const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  size_t off = shape.size() - t.sizes().size();
  int64_t isz = t.itemsize();
  for (size_t i = 0; i < t.sizes().size(); ++i) st[off + i] = t.sizes()[i] == 1 ? 0 : t.strides()[i] * isz;
  return st;
}

template <int N>
ElementwiseGeometry<N> make_geometry(const std::array<const Tensor*, N>& ops, const Shape& shape) {
  ElementwiseGeometry<N> g;
  std::array<std::vector<int64_t>, N> st;
  for (int k = 0; k < N; ++k) {
    st[k] = broadcast_byte_strides(*ops[k], shape);
    g.base[k] = static_cast<char*>(ops[k]->raw_data());
  }
  // Walk the dims in the output's memory order (outermost = largest stride), so an output laid out in a
  // permuted order (channels-last, transposed) and inputs laid out like it coalesce into long unit-stride
  // runs. A contiguous output keeps the logical order, and so does one with a stride-0 dim (an expanded
  // fill, or the offset-indexed view of a scatter, whose duplicate targets must be written in index order).
  std::vector<size_t> order(shape.size());
  bool reorder = true;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    if (shape[i] > 1 && st[0][i] == 0) reorder = false;
  }
  if (reorder) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return st[0][a] > st[0][b]; });
  // drop size-1 dims, then merge dims that are contiguous with each other for every operand
  for (size_t i : order) {
    if (shape[i] == 1) continue;
    std::array<int64_t, N> s;
    for (int k = 0; k < N; ++k) s[k] = st[k][i];
    if (!g.shape.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        if (g.strides.back()[k] != s[k] * shape[i]) merge = false;
      if (merge) {
        g.shape.back() *= shape[i];
        g.strides.back() = s;
        continue;
      }
    }
    g.shape.push_back(shape[i]);
    g.strides.push_back(s);
  }
  if (g.shape.empty()) {
    g.shape.push_back(1);
    g.strides.push_back({});
    g.strides.back().fill(0);
  }
  g.numel = shape_numel(shape);
  return g;
}

// Calls run(ptrs, strides, n) over the index range [begin, end) of the geometry.
template <int N, typename Run>
void loop_range(const ElementwiseGeometry<N>& g, int64_t begin, int64_t end, Run& run) {
  const int nd = static_cast<int>(g.shape.size());
  const int64_t inner = g.shape[nd - 1];
  std::array<int64_t, N> inner_st = g.strides[nd - 1];
  // multi-index of `begin` over the outer dims
  std::vector<int64_t> idx(nd, 0);
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % g.shape[d];
    rem /= g.shape[d];
  }
  std::array<char*, N> ptrs;
  for (int k = 0; k < N; ++k) {
    int64_t o = 0;
    for (int d = 0; d < nd; ++d) o += idx[d] * g.strides[d][k];
    ptrs[k] = g.base[k] + o;
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = std::min(inner - idx[nd - 1], end - pos);
    run(ptrs, inner_st, n);
    pos += n;
    if (pos >= end) break;
    // advance: inner dim wraps to 0, carry into outer dims
    for (int k = 0; k < N; ++k) ptrs[k] += n * inner_st[k] - inner * inner_st[k];
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      for (int k = 0; k < N; ++k) ptrs[k] += g.strides[d][k];
      if (++idx[d] < g.shape[d]) break;
      for (int k = 0; k < N; ++k) ptrs[k] -= g.shape[d] * g.strides[d][k];
      idx[d] = 0;
    }
  }
}

template <int N, typename Run>
void for_each_element(const std::array<const Tensor*, N>& ops, const Shape& shape, Run run,
                      int64_t grain = kParallelGrain) {
  if (shape_numel(shape) == 0) return;
  ElementwiseGeometry<N> g = make_geometry<N>(ops, shape);
  parallel_for(g.numel, grain, [&](int64_t b, int64_t e) {
    Run local = run;
    loop_range<N>(g, b, e, local);
  });
}

// ---- typed elementwise kernels ------------------------------------------------------------------------
// out[i] = f(a[i]) with In loaded as acc_t<In> and the result stored as Out.
template <typename Out, typename In, typename F>
void unary_loop(const Tensor& out, const Tensor& a, F f) {
  using A = acc_t<In>;
  for_each_element<2>({&out, &a}, out.sizes(), [f](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      // omp simd for the same reason as binary_loop's below (x ** 2 ran one element per cycle without it)
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<A>(x[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            static_cast<Out>(f(static_cast<A>(*reinterpret_cast<const In*>(p[1] + i * s[1]))));
    }
  });
}

// out[i] = f(a[i], b[i]) (a, b broadcast to out's shape), computing in acc_t<In>. The contiguous and
// scalar-broadcast runs carry `omp simd`: our -O2 build only vectorises loops its very cheap cost model
// accepts, which rejects these (out may alias an input, so they would need a runtime overlap check).
// Every element is independent, so vectorising is exact even when out is one of the inputs (in place).
template <typename Out, typename In, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using A = acc_t<In>;
  for_each_element<3>({&out, &a, &b}, out.sizes(), [f](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    constexpr int64_t zo = sizeof(Out), zi = sizeof(In);
    if (s[0] == zo && s[1] == zi && s[2] == zi) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<A>(x[i]), static_cast<A>(y[i])));
    } else if (s[0] == zo && s[1] == zi && s[2] == 0) {
      const A yv = static_cast<A>(*y);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<A>(x[i]), yv));
    } else if (s[0] == zo && s[1] == 0 && s[2] == zi) {
      const A xv = static_cast<A>(*x);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(xv, static_cast<A>(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            static_cast<Out>(f(static_cast<A>(*reinterpret_cast<const In*>(p[1] + i * s[1])),
                               static_cast<A>(*reinterpret_cast<const In*>(p[2] + i * s[2]))));
    }
  });
}

// out[i] = f(a[i], b[i], c[i]) with each input of its own type (loaded as acc_t).
template <typename Out, typename TA, typename TB, typename TC, typename F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  for_each_element<4>({&out, &a, &b, &c}, out.sizes(),
                      [f](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<Out*>(p[0] + i * s[0]) =
          static_cast<Out>(f(static_cast<acc_t<TA>>(*reinterpret_cast<const TA*>(p[1] + i * s[1])),
                             static_cast<acc_t<TB>>(*reinterpret_cast<const TB*>(p[2] + i * s[2])),
                             static_cast<acc_t<TC>>(*reinterpret_cast<const TC*>(p[3] + i * s[3]))));
  });
}

}  // namespace flow
