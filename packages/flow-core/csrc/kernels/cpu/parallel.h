// Thread-level parallelism for own loops (OpenMP), with a grain below which we stay serial: a parallel
// region costs microseconds, more than small ops take.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../core/cpu_isa.h"

namespace flow {

constexpr int64_t kParallelGrain = 32768;

int get_num_threads();
void set_num_threads(int n);

// f(begin, end) over [0, n), split across threads when n * cost_per_item is large enough. The split follows
// the threads OpenMP actually grants (OMP_THREAD_LIMIT or OMP_DYNAMIC may give fewer than asked), and an
// exception thrown by f on any thread is rethrown here after the region: one leaving an OpenMP region would
// terminate the process.
// Each f(begin, end) runs as the variant of cpu_isa() (core/cpu_isa.h): every kernel written as a
// parallel_for body is compiled for the baseline, AVX2 and AVX-512 in a portable build.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
#ifdef _OPENMP
  int nt = get_num_threads();
  grain = std::max<int64_t>(grain, 1);
  if (nt > 1 && n > grain && !omp_in_parallel()) {
    int64_t chunks = std::min<int64_t>(nt, (n + grain - 1) / grain);
    std::exception_ptr err;
#pragma omp parallel num_threads(static_cast<int>(chunks))
    {
      int64_t got = omp_get_num_threads(), tid = omp_get_thread_num();
      int64_t per = (n + got - 1) / got;
      int64_t b = tid * per, e = std::min(n, b + per);
      try {
        if (b < e) with_cpu_isa([&] { f(b, e); });
      } catch (...) {
#pragma omp critical(flow_parallel_for_error)
        if (!err) err = std::current_exception();
      }
    }
    if (err) std::rethrow_exception(err);
    return;
  }
#endif
  with_cpu_isa([&] { f(int64_t(0), n); });
}

// f(0, n) serially unless `parallel`, else as parallel_for(n, 1, f): serial or not, f runs as the CPU's kernel
// variant (a loop called directly would run the baseline code and round differently from its parallel self).
template <typename F>
void parallel_for_if(bool parallel, int64_t n, F&& f) {
  parallel_for(n, parallel ? 1 : n, std::forward<F>(f));
}

}  // namespace flow
