#include "parallel.h"

#include <dirent.h>
#include <pthread.h>

#include <cstdlib>

#include "../../core/error.h"

namespace flow {

static int g_num_threads = 0;  // 0: not yet decided
static bool g_parent_had_threads = false, g_forked_child = false;

// GNU OpenMP is not fork-safe: a child forked after OpenMP started its threads inherits a pool whose threads
// did not survive the fork, and its first parallel region (ours or oneDNN's) waits for them forever. Such
// children (multiprocessing's default start method, DataLoader workers) run on one thread, as PyTorch's
// workers do. A parent with a single thread cannot have started a pool, so its children keep their threads.
static void count_threads_before_fork() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  } else {
    n = 2;  // cannot tell: assume the worst
  }
  g_parent_had_threads = n > 1;
}
static void serial_after_fork() {
  if (!g_parent_had_threads) return;
  g_forked_child = true;
  g_num_threads = 1;
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}
static const int g_atfork_registered = pthread_atfork(count_threads_before_fork, nullptr, serial_after_fork);

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
  FLOW_RUNTIME_CHECK(!(g_forked_child && n > 1), "set_num_threads: a process forked from one that ran OpenMP ",
                     "threads cannot start its own (GNU OpenMP is not fork-safe: it would hang); it runs on one ",
                     "thread. Start processes with the 'spawn' method to use ", n, " threads in them");
  g_num_threads = n < 1 ? 1 : n;
#ifdef _OPENMP
  omp_set_num_threads(g_num_threads);
#endif
}

}  // namespace flow
