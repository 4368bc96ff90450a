#include "reduce.h"

namespace flow {

std::vector<bool> reduce_mask(const Tensor& t, const std::vector<int64_t>& dims, const char* op) {
  std::vector<bool> m(t.dim(), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    if (t.dim() == 0) continue;
    FLOW_RUNTIME_CHECK(!m[w], op, ": dim ", w,
                       " appears multiple times in the list of dims");
    m[w] = true;
  }
  return m;
}

ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask) {
  ReducePlan p;
  std::vector<int64_t> kept, red;
  for (int64_t i = 0; i < t.dim(); ++i) {
    (mask[i] ? red : kept).push_back(i);
    p.out_sizes.push_back(mask[i] ? 1 : t.sizes()[i]);
    if (!mask[i]) p.out_sizes_squeezed.push_back(t.sizes()[i]);
    (mask[i] ? p.R : p.outer) *= t.sizes()[i];
  }
  // leading dims reduced, trailing kept, contiguous input: reduce down columns without a copy
  bool leading = !red.empty() && !kept.empty() && red.back() < kept.front();
  if (leading && t.is_contiguous()) {
    p.src = t;
    p.columns = true;
    return p;
  }
  std::vector<int64_t> perm(kept);
  perm.insert(perm.end(), red.begin(), red.end());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  Tensor s = identity ? t : ops::permute(t, perm);
  if (!s.is_contiguous()) {
    Tensor c = empty(s.sizes(), s.dtype(), s.device());
    ops::copy_into(c, s);
    s = c;
  }
  p.src = s;
  return p;
}

}  // namespace flow
