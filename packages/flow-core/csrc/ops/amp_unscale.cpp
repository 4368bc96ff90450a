#include <atomic>
#include <cmath>

#include "../kernels/cpu/parallel.h"
#include "amp.h"
#include "functions.h"

namespace flow::amp {

bool non_finite_check_and_unscale(const TensorList& grads, double inv_scale) {
  std::atomic<bool> found{false};
  for (const Tensor& g : grads) {
    if (!g.defined() || g.numel() == 0) continue;
    FLOW_RUNTIME_CHECK(g.has_storage() && g.device().type == DeviceType::CPU,
                       "_amp_non_finite_check_and_unscale_: expected CPU tensors with storage");
    Tensor work = g.is_contiguous() ? g : ops::contiguous(g);
    dispatch_floating(g.dtype(), "_amp_non_finite_check_and_unscale_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      T* p = work.data<T>();
      const A inv = static_cast<A>(inv_scale);
      parallel_for(work.numel(), 1 << 15, [&](int64_t b, int64_t e) {
        bool bad = false;
        for (int64_t i = b; i < e; ++i) {
          A v = static_cast<A>(p[i]);
          bad |= !std::isfinite(v);
          p[i] = static_cast<T>(v * inv);
        }
        if (bad) found.store(true, std::memory_order_relaxed);
      });
    });
    if (!work.is_same(g)) ops::copy_into(g, work);
    g.bump_version();
  }
  return found.load();
}

}  // namespace flow::amp
