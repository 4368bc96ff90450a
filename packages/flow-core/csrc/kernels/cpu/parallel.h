// Thread-level parallelism for own loops (OpenMP), with a grain below which we stay serial: a parallel
// region costs microseconds, more than small ops take.
#pragma once
#include <cstdint>
#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace flow {

constexpr int64_t kParallelGrain = 32768;

int get_num_threads();
void set_num_threads(int n);

// f(begin, end) over [0, n), split across threads when n * cost_per_item is large enough.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
#ifdef _OPENMP
  int nt = get_num_threads();
  if (nt > 1 && n > grain && !omp_in_parallel()) {
    int64_t chunks = std::min<int64_t>(nt, (n + grain - 1) / grain);
#pragma omp parallel num_threads(static_cast<int>(chunks))
    {
      int tid = omp_get_thread_num();
      int64_t per = (n + chunks - 1) / chunks;
      int64_t b = tid * per, e = std::min(n, b + per);
      if (b < e) f(b, e);
    }
    return;
  }
#endif
  f(int64_t(0), n);
}

}  // namespace flow
