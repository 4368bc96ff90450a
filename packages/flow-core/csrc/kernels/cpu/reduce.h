// Reduction plumbing shared by every reduction op. The input is arranged (without a copy in the common
// cases) as a contiguous [blocks, R, inner] array: output element (b, j) reduces the R elements
// src[b, :, j]. Two layouts fall out of it:
//   rows    (inner == 1): each output reduces one contiguous row (trailing dims reduced);
//   columns (inner  > 1): each output reduces one strided column (leading or middle dims reduced).
// `reduce_plan` runs a fold over the plan with several independent accumulators per row (so the
// compiler can vectorise it and float sums lose less precision), and splits R across threads when there
// are too few outputs to keep every thread busy (a full reduction of a large tensor uses all threads).
#pragma once
#include <memory>
#include <vector>

#include "../../ops/functions.h"
#include "parallel.h"

namespace flow {

struct ReducePlan {
  Tensor src;            // contiguous data in the layout below
  int64_t outer = 1;     // number of output elements (blocks * inner)
  int64_t R = 1;         // elements reduced into each output
  int64_t blocks = 1;    // leading kept extent (columns layout only; 1 for rows)
  int64_t inner = 1;     // trailing kept extent (1: rows layout)
  bool columns = false;  // inner > 1: src is [blocks, R, inner] (reduce down columns) instead of [outer, R]
  Shape out_sizes;       // with keepdim
  Shape out_sizes_squeezed;
};

// dims empty => all dims. Raises IndexError for bad dims and RuntimeError for repeated ones (naming `op`).
std::vector<bool> reduce_mask(const Tensor& t, const std::vector<int64_t>& dims, const char* op);
ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask);
// keep_order: the R index must follow the logical row-major order of the reduced dims (index-returning
// reductions over several dims); otherwise a permuted dense input is read in memory order.
ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask, bool keep_order);
// Output meta of a reduction over `dims` (empty: all).
std::vector<TensorMeta> meta_reduce(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim, DType dt,
                                    const char* op);
// Kernel-level helpers (no autograd): a permuted view, and a contiguous copy unless already contiguous.
Tensor permute_view(const Tensor& t, const std::vector<int64_t>& perm);
Tensor contiguous_copy(const Tensor& t);
// Output sizes of a reduction described by `mask`.
Shape reduced_sizes(const Shape& sizes, const std::vector<bool>& mask, bool keepdim);

namespace reduce_detail {

// Elements reach `fold` as acc_t<T> (float for half/bfloat16).
template <typename T>
inline acc_t<T> load(const T& v) {
  return static_cast<acc_t<T>>(v);
}

// fold over x[0..n) with K independent accumulators (vectorisable), combined pairwise at the end.
template <typename T, typename A, typename Fold, typename Combine>
inline A fold_lanes(const T* x, int64_t n, A init, const Fold& fold, const Combine& combine) {
  constexpr int K = sizeof(A) <= 4 ? 16 : 8;
  if (n < 2 * K) {
    A acc = init;
    for (int64_t i = 0; i < n; ++i) acc = fold(acc, load<T>(x[i]));
    return acc;
  }
  A a[K];
  for (int k = 0; k < K; ++k) a[k] = init;
  int64_t i = 0;
  for (; i + K <= n; i += K) {
#pragma omp simd
    for (int k = 0; k < K; ++k) a[k] = fold(a[k], load<T>(x[i + k]));
  }
  // The tail has fewer than K elements; an int count says so to GCC, which otherwise assumes it may run
  // to the end of the address space and warns (-Waggressive-loop-optimizations) once n is a known constant.
  for (int k = 0, rest = static_cast<int>(n - i); k < rest; ++k) a[0] = fold(a[0], load<T>(x[i + k]));
  for (int w = K / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) a[k] = combine(a[k], a[k + w]);
  return a[0];
}

// A row in blocks (two-level summation keeps float sums of long rows accurate).
template <typename T, typename A, typename Fold, typename Combine>
inline A fold_row(const T* x, int64_t n, A init, const Fold& fold, const Combine& combine) {
  constexpr int64_t kBlock = 8192;
  if (n <= kBlock) return fold_lanes<T, A>(x, n, init, fold, combine);
  A acc = fold_lanes<T, A>(x, kBlock, init, fold, combine);
  for (int64_t s = kBlock; s < n; s += kBlock)
    acc = combine(acc, fold_lanes<T, A>(x + s, std::min(kBlock, n - s), init, fold, combine));
  return acc;
}

// acc[j] = fold(acc[j], x[j]) for j in [0, n): the column layout's inner loop.
template <typename T, typename A, typename Fold>
inline void fold_cols(A* acc, const T* x, int64_t n, const Fold& fold) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) acc[j] = fold(acc[j], load<T>(x[j]));
}

// acc[0..n) = fold over `rows` rows (row stride `ld`) of the columns x[0..n). Narrow full-width columns
// (n == ld < 32) are folded as one contiguous stream into 64-ish lanes, then the lanes of each column combined.
template <typename T, typename A, typename Fold, typename Combine>
inline void cols_partial(const T* x, int64_t rows, int64_t ld, int64_t n, A init, const Fold& fold,
                         const Combine& combine, A* acc) {
  if (n == ld && n < 32 && rows >= 2 * (64 / n)) {
    const int64_t m = 64 / n, w = m * n, groups = rows / m;
    for (int64_t k = 0; k < w; ++k) acc[k] = init;
    for (int64_t g = 0; g < groups; ++g) fold_cols<T, A>(acc, x + g * w, w, fold);
    for (int64_t r = groups * m; r < rows; ++r) fold_cols<T, A>(acc, x + r * n, n, fold);
    for (int64_t k = 1; k < m; ++k)
      for (int64_t j = 0; j < n; ++j) acc[j] = combine(acc[j], acc[k * n + j]);
    return;
  }
  for (int64_t j = 0; j < n; ++j) acc[j] = init;
  for (int64_t r = 0; r < rows; ++r) fold_cols<T, A>(acc, x + r * ld, n, fold);
}

}  // namespace reduce_detail

// out[j] = finish(fold(init, x over the j-th group), R); T is the element type, A the accumulator;
// fold(A, acc_t<T>) -> A.
// `combine(A, A)` merges two partial accumulators (it must agree with `fold`; init must be its identity).
template <typename T, typename A, typename Fold, typename Combine, typename Finish, typename O>
void reduce_plan(const ReducePlan& p, O* out, A init, Fold fold, Combine combine, Finish finish) {
  using namespace reduce_detail;
  const int64_t outer = p.outer, R = p.R;
  if (outer == 0) return;
  if (R == 0) {
    for (int64_t j = 0; j < outer; ++j) out[j] = static_cast<O>(finish(init, R));
    return;
  }
  const T* x = p.src.template data<T>();
  const int nt = get_num_threads();
  const int64_t total = outer * R;
  if (!p.columns) {
    if (nt > 1 && outer < 2 * nt && total > kParallelGrain) {
      // few long rows: split each row into chunks, reduce chunks in parallel, combine serially
      int64_t nc = std::max<int64_t>(1, std::min<int64_t>((2 * nt + outer - 1) / outer, R / (kParallelGrain / 4)));
      int64_t len = (R + nc - 1) / nc;
      nc = (R + len - 1) / len;
      std::unique_ptr<A[]> part(new A[outer * nc]);  // (not vector: vector<bool> has no data())
      parallel_for(outer * nc, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t j = c / nc, k = c % nc;
          int64_t s = k * len, n = std::min(R, s + len) - s;
          part[c] = fold_row<T, A>(x + j * R + s, n, init, fold, combine);
        }
      });
      for (int64_t j = 0; j < outer; ++j) {
        A acc = part[j * nc];
        for (int64_t k = 1; k < nc; ++k) acc = combine(acc, part[j * nc + k]);
        out[j] = static_cast<O>(finish(acc, R));
      }
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j)
        out[j] = static_cast<O>(finish(fold_row<T, A>(x + j * R, R, init, fold, combine), R));
    });
    return;
  }
  // columns: work units are (block, column tile, row chunk); rows are chunked only when the other two
  // do not give every thread work
  const int64_t inner = p.inner, blocks = p.blocks;
  constexpr int64_t kTile = 2048;
  const int64_t tw = std::min(inner, kTile);
  const int64_t tiles = (inner + kTile - 1) / kTile;
  const int64_t units = blocks * tiles;
  int64_t nc = 1;
  if (nt > 1 && units < 2 * nt && total > kParallelGrain)
    nc = std::max<int64_t>(1, std::min<int64_t>((2 * nt + units - 1) / units, R / 16));
  const int64_t len = (R + nc - 1) / nc;
  nc = (R + len - 1) / len;
  std::unique_ptr<A[]> part(nc > 1 ? new A[units * nc * tw] : nullptr);
  parallel_for(units * nc, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, len * tw)),
               [&](int64_t b, int64_t e) {
    std::unique_ptr<A[]> acc(new A[std::max<int64_t>(tw, 64)]);
    for (int64_t u = b; u < e; ++u) {
      int64_t c = u % nc, t = u / nc, blk = t / tiles, j0 = (t % tiles) * kTile;
      int64_t n = std::min(inner, j0 + kTile) - j0;
      int64_t r0 = c * len, rows = std::min(R, r0 + len) - r0;
      cols_partial<T, A>(x + (blk * R + r0) * inner + j0, rows, inner, n, init, fold, combine, acc.get());
      if (nc == 1) {
        O* o = out + blk * inner + j0;
        for (int64_t j = 0; j < n; ++j) o[j] = static_cast<O>(finish(acc[j], R));
      } else {
        std::copy(acc.get(), acc.get() + n, part.get() + u * tw);
      }
    }
  });
  if (nc == 1) return;
  for (int64_t t = 0; t < units; ++t) {
    int64_t blk = t / tiles, j0 = (t % tiles) * kTile, n = std::min(inner, j0 + kTile) - j0;
    O* o = out + blk * inner + j0;
    for (int64_t j = 0; j < n; ++j) {
      A a = part[(t * nc) * tw + j];
      for (int64_t c = 1; c < nc; ++c) a = combine(a, part[(t * nc + c) * tw + j]);
      o[j] = static_cast<O>(finish(a, R));
    }
  }
}

// The common case where combining two accumulators is the fold itself (sum, prod, max, all, ...).
template <typename T, typename A, typename Fold, typename Finish, typename O>
void reduce_plan(const ReducePlan& p, O* out, A init, Fold fold, Finish finish) {
  reduce_plan<T, A>(p, out, init, fold, fold, finish);
}

}  // namespace flow
