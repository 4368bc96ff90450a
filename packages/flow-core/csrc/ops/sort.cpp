// Sorting family: sort (stable), topk, unique, unique_consecutive. NaN orders above every number, like
// PyTorch.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "index_util.h"

namespace flow {
namespace {

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}
// a before b in ascending order (NaN last)
template <typename A>
bool less_nan(A a, A b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}

// Runs row_fn(in_row, n, out_vals_row, out_idx_row, k) over the slices along `dim`, on contiguous copies
// with `dim` moved last; the results are copied back into `vals`/`inds` (shaped like the input but with
// `k` along dim).
template <typename MakeRowFn>
void along_last(const Tensor& self, int64_t dim, int64_t k, const Tensor& vals, const Tensor& inds,
                MakeRowFn make_row_fn) {
  if (self.dim() == 0) {
    ops::copy_into(vals, self);
    ops::fill_(inds, Scalar(int64_t(0)));
    return;
  }
  int64_t nd = self.dim();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nd; ++i)
    if (i != dim) perm.push_back(i);
  perm.push_back(dim);
  auto permuted = [&](const Tensor& t) {
    Shape s, st;
    for (int64_t p : perm) {
      s.push_back(t.sizes()[p]);
      st.push_back(t.strides()[p]);
    }
    return make_view(t, s, st, t.offset());
  };
  Tensor x = ops::contiguous(permuted(self));
  Shape os = x.sizes();
  os.back() = k;
  Tensor ov = empty(os, self.dtype(), self.device()), oi = empty(os, DType::Int64, self.device());
  int64_t n = self.sizes()[dim];
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows > 0 && k > 0) {
    dispatch_all(self.dtype(), "sort", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>();
      T* vp = ov.data<T>();
      int64_t* ip = oi.data<int64_t>();
      auto row_fn = make_row_fn(tag);
      parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        std::vector<int64_t> idx(n);
        for (int64_t r = b; r < e; ++r) row_fn(xp + r * n, n, vp + r * k, ip + r * k, k, idx);
      });
    });
  }
  ops::copy_into(permuted(vals), ov);
  ops::copy_into(permuted(inds), oi);
}

template <typename T>
struct RowSorter {
  bool descending;
  // Sorts (value, index) pairs, not indices into the row: far fewer cache misses on long rows.
  void operator()(const T* x, int64_t n, T* v, int64_t* ix, int64_t k, std::vector<int64_t>&) const {
    using A = acc_t<T>;
    std::vector<std::pair<A, int64_t>> p(n);
    for (int64_t i = 0; i < n; ++i) p[i] = {A(x[i]), i};
    if (descending)
      std::stable_sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return less_nan<A>(b.first, a.first); });
    else
      std::stable_sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return less_nan<A>(a.first, b.first); });
    for (int64_t i = 0; i < k; ++i) {
      ix[i] = p[i].second;
      v[i] = static_cast<T>(p[i].first);
    }
  }
};

std::vector<TensorMeta> sort_meta(const Tensor& t, int64_t dim, int64_t k) {
  Shape s = t.sizes();
  if (t.dim() > 0) s[dim] = k;
  return {{s, t.dtype(), t.device()}, {s, DType::Int64, t.device()}};
}

// Gradient of values picked by `indices` along dim: scattered back into zeros.
Tensor pick_backward(BackwardCtx& c, const Tensor& g, const Tensor& indices, int64_t dim) {
  Tensor z = ops::zeros(c.input_meta(0).sizes, g.dtype(), g.device());
  return ops::call1("scatter_add", {z, indices, g}, {dim});
}

}  // namespace

FLOW_OP(sort)
    .schema(
        "sort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> (Tensor values, Tensor indices)")
    .traits(kIndexing)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      int64_t d = wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "sort");
      return sort_meta(in[0], d, in[0].dim() == 0 ? 1 : in[0].sizes()[d]);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t d = wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "sort");
      bool desc = a.b("descending");
      int64_t n = in[0].dim() == 0 ? 1 : in[0].sizes()[d];
      along_last(in[0], d, n, out[0], out[1],
                 [desc](auto tag) { return RowSorter<typename decltype(tag)::type>{desc}; });
    })
    .nondiff_outputs({1})
    .save_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t d =
          wrap_dim(c.attrs.i("dim"), std::max<int64_t>(static_cast<int64_t>(c.input_meta(0).sizes.size()), 1), "sort");
      return {pick_backward(c, g[0], c.output(1), d)};
    });

FLOW_OP(topk)
    .schema(
        "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)")
    .traits(kIndexing)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      int64_t d = wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "topk");
      int64_t n = in[0].dim() == 0 ? 1 : in[0].sizes()[d], k = a.i("k");
      FLOW_RUNTIME_CHECK(k >= 0 && k <= n, "selected index k out of range");
      return sort_meta(in[0], d, k);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t d = wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "topk");
      int64_t k = a.i("k");
      bool largest = a.b("largest");
      if (in[0].dim() == 0 && k == 0) return;
      along_last(in[0], d, k, out[0], out[1], [largest](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        return [largest](const T* x, int64_t n, T* v, int64_t* ix, int64_t kk, std::vector<int64_t>&) {
          using P = std::pair<A, int64_t>;
          // ties keep the lower index first
          auto cmp_l = [](const P& a, const P& b) {
            return less_nan<A>(b.first, a.first) || (!less_nan<A>(a.first, b.first) && a.second < b.second);
          };
          auto cmp_s = [](const P& a, const P& b) {
            return less_nan<A>(a.first, b.first) || (!less_nan<A>(b.first, a.first) && a.second < b.second);
          };
          thread_local std::vector<P> p;  // reused across rows and calls
          auto select = [&](auto better) {
            if (kk <= 32 && kk * 8 <= n) {
              // a small k: one pass keeping the best kk in order; most elements lose to the current kk-th
              // at the first comparison
              p.resize(static_cast<size_t>(kk));
              int64_t cnt = 0;
              A thr = A(0);  // the kept kk-th value once kk are kept: one comparison rejects most elements
              for (int64_t i = 0; i < n; ++i) {
                P e{A(x[i]), i};
                if (cnt == kk && (largest ? e.first < thr : e.first > thr)) continue;  // false for NaNs
                if (cnt == kk && !better(e, p[kk - 1])) continue;
                int64_t j = cnt < kk ? cnt++ : kk - 1;
                for (; j > 0 && better(e, p[j - 1]); --j) p[j] = p[j - 1];
                p[j] = e;
                thr = p[cnt - 1].first;
              }
            } else {
              p.resize(static_cast<size_t>(n));
              for (int64_t i = 0; i < n; ++i) p[i] = {A(x[i]), i};
              std::partial_sort(p.begin(), p.begin() + kk, p.end(), better);
            }
          };
          if (largest) select(cmp_l);
          else select(cmp_s);
          for (int64_t i = 0; i < kk; ++i) {
            ix[i] = p[i].second;
            v[i] = static_cast<T>(p[i].first);
          }
        };
      });
    })
    .nondiff_outputs({1})
    .save_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t d =
          wrap_dim(c.attrs.i("dim"), std::max<int64_t>(static_cast<int64_t>(c.input_meta(0).sizes.size()), 1), "topk");
      return {pick_backward(c, g[0], c.output(1), d)};
    });

namespace {
// unique over elements (dim < 0) or over slices along dim; consecutive: only merge neighbours.
TensorList unique_impl(const Tensor& self, bool sorted, int64_t dim, bool consecutive) {
  (void)sorted;  // the CPU result is always sorted (PyTorch's CPU kernel sorts too)
  Tensor x;
  int64_t n, m;
  Shape moved_sizes;
  if (dim < 0) {
    x = ops::contiguous(self);
    n = x.numel();
    m = 1;
  } else {
    int64_t nd = self.dim();
    std::vector<int64_t> perm{dim};
    for (int64_t i = 0; i < nd; ++i)
      if (i != dim) perm.push_back(i);
    Shape s, st;
    for (int64_t p : perm) {
      s.push_back(self.sizes()[p]);
      st.push_back(self.strides()[p]);
    }
    moved_sizes = s;
    x = ops::contiguous(make_view(self, s, st, self.offset()));
    n = s[0];
    m = n == 0 ? shape_numel(Shape(s.begin() + 1, s.end())) : x.numel() / n;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t(0));
  std::vector<int64_t> group_start;  // positions in `order` where a new group starts
  Tensor inverse = empty({n}, DType::Int64);
  int64_t* inv = inverse.data<int64_t>();
  dispatch_all(self.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* p = x.data<T>();
    auto row_less = [&](int64_t a, int64_t b) {
      for (int64_t j = 0; j < m; ++j) {
        A va = A(p[a * m + j]), vb = A(p[b * m + j]);
        if (less_nan<A>(va, vb)) return true;
        if (less_nan<A>(vb, va)) return false;
      }
      return false;
    };
    auto row_eq = [&](int64_t a, int64_t b) {
      for (int64_t j = 0; j < m; ++j)
        if (!(A(p[a * m + j]) == A(p[b * m + j]))) return false;
      return true;
    };
    if (!consecutive) std::stable_sort(order.begin(), order.end(), row_less);
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !row_eq(order[i - 1], order[i])) group_start.push_back(i);
      inv[order[i]] = static_cast<int64_t>(group_start.size()) - 1;
    }
  });
  int64_t u = static_cast<int64_t>(group_start.size());
  Tensor counts = empty({u}, DType::Int64);
  int64_t* cp = counts.data<int64_t>();
  for (int64_t g = 0; g < u; ++g) cp[g] = (g + 1 < u ? group_start[g + 1] : n) - group_start[g];
  Tensor values;
  int64_t isz = x.itemsize();
  if (dim < 0) {
    values = empty({u}, self.dtype());
    for (int64_t g = 0; g < u; ++g)
      std::memcpy(static_cast<char*>(values.raw_data()) + g * isz,
                  static_cast<const char*>(x.raw_data()) + order[group_start[g]] * isz, isz);
    inverse = make_view(inverse, self.sizes(), contiguous_strides(self.sizes()), 0);
  } else {
    Shape vs = moved_sizes;
    vs[0] = u;
    Tensor vm = empty(vs, self.dtype());
    for (int64_t g = 0; g < u; ++g)
      std::memcpy(static_cast<char*>(vm.raw_data()) + g * m * isz,
                  static_cast<const char*>(x.raw_data()) + order[group_start[g]] * m * isz, m * isz);
    // move dim 0 back to `dim`
    std::vector<int64_t> back;
    for (int64_t i = 1; i <= dim; ++i) back.push_back(i);
    back.insert(back.begin() + dim, 0);
    Shape s, st;
    for (int64_t i = 0; i < vm.dim(); ++i) {
      int64_t src = i == dim ? 0 : (i < dim ? i + 1 : i);
      s.push_back(vm.sizes()[src]);
      st.push_back(vm.strides()[src]);
    }
    values = ops::contiguous(make_view(vm, s, st, 0));
  }
  return {values, inverse, counts};
}
}  // namespace

FLOW_OP(unique)
    .schema(
        "unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None) -> "
        "(Tensor, Tensor, Tensor)")
    .traits(kIndexing | kDataDependentShape | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      int64_t dim = a.none("dim") ? -1 : wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "unique");
      if (dim >= 0 && in[0].dim() == 0) dim = -1;
      return unique_impl(in[0], a.b("sorted"), dim, false);
    });

FLOW_OP(unique_consecutive)
    .schema(
        "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> "
        "(Tensor, Tensor, Tensor)")
    .traits(kIndexing | kDataDependentShape | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      int64_t dim = a.none("dim") ? -1 : wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "unique_consecutive");
      if (dim >= 0 && in[0].dim() == 0) dim = -1;
      return unique_impl(in[0], true, dim, true);
    });

}  // namespace flow

namespace flow {

// Insertion points by binary search (searchsorted/bucketize's kernel): for each value, the first index of
// its row of `sorted_sequence` (1-D: one row for every value) whose element is >= it (left) or > it
// (right). As in PyTorch's search, a comparison with NaN is false, so the search passes NaN boundaries
// and a NaN value lands after every boundary.
FLOW_OP(_searchsorted)
    .schema("_searchsorted(Tensor sorted_sequence, Tensor values, bool right=False) -> Tensor")
    .traits(kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &s = in[0], &v = in[1];
      FLOW_RUNTIME_CHECK(s.dim() >= 1, "searchsorted: boundaries must have at least one dim");
      if (s.dim() > 1) {
        bool ok = v.dim() == s.dim();
        for (int64_t d = 0; ok && d + 1 < s.dim(); ++d) ok = v.size(d) == s.size(d);
        FLOW_RUNTIME_CHECK(ok, "searchsorted: the leading dims of boundaries and values must match, got ",
                           shape_str(s.sizes()), " and ", shape_str(v.sizes()));
      }
      return {{v.sizes(), DType::Int64, common_device(in, "searchsorted")}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const bool right = a.b("right");
      DType dt = promote_types(in[0].dtype(), in[1].dtype());
      Tensor s = ops::contiguous(ops::to_dtype(in[0], dt)), v = ops::contiguous(ops::to_dtype(in[1], dt));
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), DType::Int64, out[0].device());
      const int64_t M = s.size(-1), n = v.numel();
      const int64_t K = s.dim() == 1 ? std::max<int64_t>(n, 1) : (v.dim() ? v.size(-1) : 1);
      dispatch_all(dt, "searchsorted", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const T *sp = s.data<T>(), *vp = v.data<T>();
        int64_t* op = o.data<int64_t>();
        parallel_for(n, 4096, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const T* row = s.dim() == 1 ? sp : sp + (i / K) * M;
            const A x = static_cast<A>(vp[i]);
            int64_t lo = 0, hi = M;
            while (lo < hi) {  // invariant: the answer lies in [lo, hi]
              const int64_t mid = lo + (hi - lo) / 2;
              const A y = static_cast<A>(row[mid]);
              const bool go_right = right ? !(y > x) : !(y >= x);  // torch's tests: NaNs compare false
              if (go_right) lo = mid + 1;
              else hi = mid;
            }
            op[i] = lo;
          }
        });
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    });

}  // namespace flow
