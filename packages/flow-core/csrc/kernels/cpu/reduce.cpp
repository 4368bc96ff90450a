#include "reduce.h"

#include <algorithm>
#include <numeric>

namespace flow {

std::vector<bool> reduce_mask(const Tensor& t, const std::vector<int64_t>& dims, const char* op) {
  std::vector<bool> m(t.dim(), dims.empty());
  bool scalar_dim_seen = false;  // a 0-d tensor's dims 0 and -1 name one dim: repeating it is an error too
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    const bool seen = t.dim() == 0 ? scalar_dim_seen : static_cast<bool>(m[w]);
    FLOW_RUNTIME_CHECK(!seen, op, ": dim ", w, " appears multiple times in the list of dims");
    if (t.dim() == 0) scalar_dim_seen = true;
    else m[w] = true;
  }
  return m;
}

Shape reduced_sizes(const Shape& sizes, const std::vector<bool>& mask, bool keepdim) {
  Shape s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!mask[i]) s.push_back(sizes[i]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

std::vector<TensorMeta> meta_reduce(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim, DType dt,
                                    const char* op) {
  return {{reduced_sizes(t.sizes(), reduce_mask(t, dims, op), keepdim), dt, t.device()}};
}

Tensor permute_view(const Tensor& t, const std::vector<int64_t>& perm) {
  Shape sz, st;
  for (int64_t d : perm) {
    sz.push_back(t.sizes()[d]);
    st.push_back(t.strides()[d]);
  }
  return make_view(t, sz, st, t.offset());
}

Tensor contiguous_copy(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty(t.sizes(), t.dtype(), t.device());
  ops::copy_into(c, t);
  return c;
}

namespace {

// Tries to describe `t` (dims `order`, outermost first, size-1 dims dropped) as [blocks, R, inner] over its
// own memory. Succeeds when those dims are dense in that order and the reduced ones form one run.
bool plan_in_place(const Tensor& t, const std::vector<int64_t>& order, const std::vector<bool>& mask, ReducePlan& p) {
  const Shape& sz = t.sizes();
  const Shape& st = t.strides();
  int64_t expect = 1;
  for (size_t k = order.size(); k-- > 0;) {
    if (st[order[k]] != expect) return false;
    expect *= sz[order[k]];
  }
  // kept* reduced* kept*
  int phase = 0;
  int64_t blocks = 1, R = 1, inner = 1;
  for (int64_t d : order) {
    if (mask[d]) {
      if (phase == 2) return false;
      phase = 1;
      R *= sz[d];
    } else if (phase == 0) {
      blocks *= sz[d];
    } else {
      phase = 2;
      inner *= sz[d];
    }
  }
  if (phase == 0) inner = 1;  // nothing reduced: rows of one element each
  p.src = make_view(t, {t.numel()}, {1}, t.offset());
  p.R = R;
  if (inner == 1) {
    p.blocks = 1;
    p.inner = 1;
    p.columns = false;
  } else {
    p.blocks = blocks;
    p.inner = inner;
    p.columns = true;
  }
  return true;
}

}  // namespace

ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask, bool keep_order) {
  ReducePlan p;
  std::vector<int64_t> kept, red, order;
  p.R = 1;
  p.outer = 1;
  for (int64_t i = 0; i < t.dim(); ++i) {
    (mask[i] ? red : kept).push_back(i);
    (mask[i] ? p.R : p.outer) *= t.sizes()[i];
    if (t.sizes()[i] != 1) order.push_back(i);
  }
  p.out_sizes = reduced_sizes(t.sizes(), mask, true);
  p.out_sizes_squeezed = reduced_sizes(t.sizes(), mask, false);
  const int64_t R = p.R;
  if (t.numel() == 0) {
    p.src = empty({0}, t.dtype(), t.device());
    return p;
  }
  if (!keep_order) {
    // memory order (a transposed input is read as stored), unless that reorders the kept dims
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
    int64_t last = -1;
    bool ok = true;
    for (int64_t d : order)
      if (!mask[d]) {
        ok &= d > last;
        last = d;
      }
    if (!ok) {
      order.clear();
      for (int64_t i = 0; i < t.dim(); ++i)
        if (t.sizes()[i] != 1) order.push_back(i);
    }
  }
  if (plan_in_place(t, order, mask, p)) {
    p.R = R;
    return p;
  }
  std::vector<int64_t> perm(kept);
  perm.insert(perm.end(), red.begin(), red.end());
  p.src = contiguous_copy(permute_view(t, perm));
  p.blocks = 1;
  p.inner = 1;
  p.columns = false;
  return p;
}

ReducePlan plan_reduction(const Tensor& t, const std::vector<bool>& mask) { return plan_reduction(t, mask, false); }

}  // namespace flow
