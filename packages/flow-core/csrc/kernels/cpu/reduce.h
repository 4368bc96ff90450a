// Reduction plumbing shared by every reduction op: the input is arranged so that each output element
// reduces either one contiguous row (`rows` layout) or one strided column of a contiguous block
// (`columns` layout, when only leading dims are reduced), without a copy in the common cases.
#pragma once
#include <vector>

#include "../../ops/functions.h"
#include "parallel.h"

namespace flow {

struct ReducePlan {
  Tensor src;         // contiguous data in the layout below
  int64_t outer = 1;  // number of output elements
  int64_t R = 1;      // elements reduced into each output
  bool columns = false;  // src is [R, outer] (reduce down columns) instead of [outer, R]
  Shape out_sizes;       // with keepdim
  Shape out_sizes_squeezed;
};

// dims empty => all dims. Raises IndexError for bad dims (naming `op`).
std::vector<bool> reduce_mask(const Tensor& t, const std::vector<int64_t>& dims, const char* op);
ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask);
// Output meta of a reduction over `dims` (empty: all).
std::vector<TensorMeta> meta_reduce(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim, DType dt,
                                    const char* op);

// out[j] = finish(fold(init, x over the j-th group), R); T is the element type, A the accumulator.
template <typename T, typename A, typename Fold, typename Finish, typename O>
void reduce_plan(const ReducePlan& p, O* out, A init, Fold fold, Finish finish) {
  const T* x = p.src.template data<T>();
  const int64_t outer = p.outer, R = p.R;
  if (!p.columns) {
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        const T* row = x + j * R;
        A acc = init;
        for (int64_t i = 0; i < R; ++i) acc = fold(acc, static_cast<A>(static_cast<acc_t<T>>(row[i])));
        out[j] = static_cast<O>(finish(acc, R));
      }
    });
  } else {
    parallel_for(outer, std::max<int64_t>(16, kParallelGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
      std::vector<A> acc(e - b, init);
      for (int64_t i = 0; i < R; ++i) {
        const T* row = x + i * outer;
        for (int64_t j = b; j < e; ++j) acc[j - b] = fold(acc[j - b], static_cast<A>(static_cast<acc_t<T>>(row[j])));
      }
      for (int64_t j = b; j < e; ++j) out[j] = static_cast<O>(finish(acc[j - b], R));
    });
  }
}

}  // namespace flow
