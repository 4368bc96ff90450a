#include "parallel.h"

#include <cstdlib>

namespace flow {

static int g_num_threads = 0;  // 0: not yet decided

int get_num_threads() {
  if (g_num_threads == 0) {
#ifdef _OPENMP
    g_num_threads = omp_get_max_threads();
#else
    g_num_threads = 1;
#endif
  }
  return g_num_threads;
}

void set_num_threads(int n) {
  g_num_threads = n < 1 ? 1 : n;
#ifdef _OPENMP
  omp_set_num_threads(g_num_threads);
#endif
}

}  // namespace flow
