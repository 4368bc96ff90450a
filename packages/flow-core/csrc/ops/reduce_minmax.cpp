// Selecting reductions: amax/amin, max/min (full and along a dim, with indices), argmax/argmin, and the
// logical ones: all/any, count_nonzero. NaN propagates like PyTorch (a NaN is the max and the min).
#include "reduce.h"

namespace flow {
namespace {

// The better of acc and x for max (Max=true) or min: NaN wins, then strictly better.
// The better of acc and x for max (Max=true) or min: NaN wins (a NaN acc is kept since no comparison with
// it holds), else strictly better. Branch-free so that it vectorises.
template <bool Max, typename A>
inline A pick(A acc, A x) {
  if constexpr (Max) return (x > acc || x != x) ? x : acc;
  else return (x < acc || x != x) ? x : acc;
}

template <typename A, bool Max>
constexpr A worst() {
  if constexpr (std::is_same_v<A, bool>) return !Max;
  else if constexpr (std::is_floating_point_v<A>)
    return Max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
  else return Max ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
}

void check_nonempty(const Tensor& t, const std::vector<bool>& mask, const char* op) {
  if (t.numel() != 0) return;
  for (int64_t d = 0; d < t.dim(); ++d)
    FLOW_INDEX_CHECK(!(mask[d] && t.sizes()[d] == 0), op, "(): Expected reduction dim ", d, " to have non-zero size.");
}

template <bool Max>
void extreme_kernel(const Tensor& in, const Tensor& out, const std::vector<bool>& mask, const char* op) {
  ReducePlan p = plan_reduction(in, mask);
  Tensor o = out.is_contiguous() ? out : empty(out.sizes(), out.dtype(), out.device());
  dispatch_all(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    auto f = [](A a, A x) { return pick<Max, A>(a, x); };
    reduce_plan<T, A>(p, o.data<T>(), worst<A, Max>(), f, f, [](A a, int64_t) { return a; });
  });
  if (!o.is_same(out)) ops::copy_into(out, o);
}

// Value and index (along the reduced group, first occurrence) of the max/min of each group.
template <bool Max>
void extreme_index_kernel(const Tensor& in, const Tensor* values, const Tensor& indices, const std::vector<bool>& mask,
                          const char* op) {
  ReducePlan p = plan_reduction(in, mask, /*keep_order=*/true);
  const int64_t outer = p.outer, R = p.R;
  Tensor idx = indices.is_contiguous() ? indices : empty(indices.sizes(), DType::Int64, indices.device());
  Tensor val;
  if (values) val = values->is_contiguous() ? *values : empty(values->sizes(), values->dtype(), values->device());
  if (outer == 0) return;
  dispatch_all(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* x = p.src.template data<T>();
    int64_t* oi = idx.data<int64_t>();
    T* ov = values ? val.template data<T>() : nullptr;
    auto better = [](A cand, A best) {  // strictly better (first occurrence wins ties)
      if constexpr (std::is_floating_point_v<A>) {
        if (best != best) return false;
        if (cand != cand) return true;
      }
      if constexpr (Max) return cand > best;
      else return cand < best;
    };
    // contiguous row: the extreme value by a vectorised fold, then the first position holding it
    auto scan = [&](const T* row, int64_t n, int64_t, A& bv, int64_t& bi) {
      auto f = [](A a, A v) { return pick<Max, A>(a, v); };
      bv = reduce_detail::fold_row<T, A>(row, n, static_cast<A>(row[0]), f, f);
      const bool nan = bv != bv;
      bi = 0;
      while (bi < n - 1 && !(nan ? static_cast<A>(row[bi]) != static_cast<A>(row[bi]) : static_cast<A>(row[bi]) == bv))
        ++bi;
    };
    if (!p.columns) {
      const int nt = get_num_threads();
      if (nt > 1 && outer < nt && outer * R > kParallelGrain) {
        // few long rows: chunk each row, keep the best of the chunks (earliest on ties)
        int64_t nc = std::max<int64_t>(1, std::min<int64_t>(nt, R / (kParallelGrain / 4)));
        int64_t len = (R + nc - 1) / nc;
        nc = (R + len - 1) / len;
        std::vector<A> pv(outer * nc);
        std::vector<int64_t> pi(outer * nc);
        parallel_for(outer * nc, 1, [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c) {
            int64_t j = c / nc, s = (c % nc) * len, n = std::min(R, s + len) - s;
            A bv = static_cast<A>(x[j * R + s]);
            int64_t bi = 0;
            scan(x + j * R + s, n, 1, bv, bi);
            pv[c] = bv;
            pi[c] = bi + s;
          }
        });
        for (int64_t j = 0; j < outer; ++j) {
          A bv = pv[j * nc];
          int64_t bi = pi[j * nc];
          for (int64_t k = 1; k < nc; ++k)
            if (better(pv[j * nc + k], bv)) {
              bv = pv[j * nc + k];
              bi = pi[j * nc + k];
            }
          oi[j] = bi;
          if (ov) ov[j] = static_cast<T>(bv);
        }
        return;
      }
      parallel_for(outer, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) {
          A bv = static_cast<A>(x[j * R]);
          int64_t bi = 0;
          scan(x + j * R, R, 1, bv, bi);
          oi[j] = bi;
          if (ov) ov[j] = static_cast<T>(bv);
        }
      });
      return;
    }
    const int64_t inner = p.inner;
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / R), [&](int64_t b, int64_t e) {
      // walk down the rows of each block for the columns [b, e) of the flattened (block, column) range
      std::vector<A> bv(e - b);
      for (int64_t j = b; j < e; ++j) bv[j - b] = static_cast<A>(x[(j / inner) * R * inner + j % inner]);
      std::fill(oi + b, oi + e, 0);
      for (int64_t i = 1; i < R; ++i)
        for (int64_t j = b; j < e; ++j) {
          A v = static_cast<A>(x[((j / inner) * R + i) * inner + j % inner]);
          if (better(v, bv[j - b])) {
            bv[j - b] = v;
            oi[j] = i;
          }
        }
      if (ov)
        for (int64_t j = b; j < e; ++j) ov[j] = static_cast<T>(bv[j - b]);
    });
  });
  if (!idx.is_same(indices)) ops::copy_into(indices, idx);
  if (values && !val.is_same(*values)) ops::copy_into(*values, val);
}

// amax/amin and full max/min backward: the gradient is shared evenly among the elements equal to the result.
Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& result, const std::vector<bool>& mask,
                         bool keepdim, bool nan_equal) {
  const Shape& s = x.sizes();
  Tensor r = restore_reduced(result, s, mask, keepdim, false);
  Tensor gk = restore_reduced(g, s, mask, keepdim, false);
  Tensor m = ops::call1("_reduce_eq_mask", {x, r}, {nan_equal});
  std::vector<int64_t> dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) dims.push_back(static_cast<int64_t>(d));
  Tensor count = dims.empty() ? m : ops::sum(m, dims, true);
  if (x.dim() == 0) count = m;
  return ops::mul(ops::div(gk, count), m);
}

// amax/amin's mask, after torch's checks for an empty input: no dims (all of them) is a RuntimeError, and an
// empty reduction dim is named as the caller wrote it (torch keeps a negative index here, unlike max(dim)).
std::vector<bool> amax_mask(const Tensor& t, const Attrs& a, const char* op) {
  const std::vector<int64_t>& dims = a.ints("dim");
  std::vector<bool> m = reduce_mask(t, dims, op);
  if (t.numel() != 0) return m;
  FLOW_RUNTIME_CHECK(!dims.empty(), op,
                     "(): Expected reduction dim to be specified for input.numel() == 0. "
                     "Specify the reduction dim with the 'dim' argument.");
  for (int64_t d : dims)  // reduce_mask has checked the range; size() wraps a negative d
    FLOW_INDEX_CHECK(t.size(d) != 0, op, "(): Expected reduction dim ", d, " to have non-zero size.");
  return m;
}

}  // namespace

#define FLOW_AMAX_OP(NAME, MAX)                                                                                       \
  FLOW_OP(NAME)                                                                                                       \
      .schema(#NAME "(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor")                                      \
      .traits(kReduction)                                                                                             \
      .combiner(MAX ? Combiner::Max : Combiner::Min)                                                                  \
      .dims_attr("dim")                                                                                               \
      .meta([](const TensorList& in, const Attrs& a) {                                                                \
    auto m = amax_mask(in[0], a, #NAME);                                                                              \
    return std::vector<TensorMeta>{{reduced_sizes(in[0].sizes(), m, a.b("keepdim")), in[0].dtype(), in[0].device()}}; \
  })                                                                                                                  \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                                      \
    auto m = amax_mask(in[0], a, #NAME);                                                                              \
    extreme_kernel<MAX>(in[0], out[0], m, #NAME);                                                                     \
  })                                                                                                                  \
      .save_inputs({0})                                                                                               \
      .save_outputs({0})                                                                                              \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                                               \
    Tensor x = c.input(0);                                                                                            \
    return {evenly_distribute(g[0], x, c.output(0), mask_for_sizes(x.sizes(), c.attrs.ints("dim"), #NAME),            \
                              c.attrs.b("keepdim"), false)};                                                          \
  });

FLOW_AMAX_OP(amax, true)
FLOW_AMAX_OP(amin, false)

#define FLOW_FULL_EXTREME_OP(NAME, MAX)                                                              \
  FLOW_OP(NAME)                                                                                      \
      .schema(#NAME "(Tensor self) -> Tensor")                                                       \
      .traits(kReduction)                                                                            \
      .combiner(MAX ? Combiner::Max : Combiner::Min)                                                 \
      .dims_attr("dim")                                                                              \
      .meta([](const TensorList& in, const Attrs&) {                                                 \
    FLOW_RUNTIME_CHECK(in[0].numel() > 0, #NAME                                                      \
                       "(): Expected reduction dim to be specified for "                             \
                       "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");    \
    return std::vector<TensorMeta>{{Shape{}, in[0].dtype(), in[0].device()}};                        \
  })                                                                                                 \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {                       \
    FLOW_RUNTIME_CHECK(in[0].numel() > 0, #NAME                                                      \
                       "(): Expected reduction dim to be specified for "                             \
                       "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");    \
    extreme_kernel<MAX>(in[0], out[0], std::vector<bool>(in[0].dim(), true), #NAME);                 \
  })                                                                                                 \
      .save_inputs({0})                                                                              \
      .save_outputs({0})                                                                             \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                              \
    Tensor x = c.input(0);                                                                           \
    return {evenly_distribute(g[0], x, c.output(0), std::vector<bool>(x.dim(), true), false, true)}; \
  });

FLOW_FULL_EXTREME_OP(max, true)
FLOW_FULL_EXTREME_OP(min, false)

namespace {

std::vector<TensorMeta> dim_extreme_meta(const TensorList& in, const Attrs& a, const char* op) {
  const Tensor& t = in[0];
  auto m = reduce_mask(t, {a.i("dim")}, op);
  check_nonempty(t, m, op);
  Shape s = reduced_sizes(t.sizes(), m, a.b("keepdim"));
  return {{s, t.dtype(), t.device()}, {s, DType::Int64, t.device()}};
}

}  // namespace

#define FLOW_DIM_EXTREME_OP(NAME, OPNAME, MAX)                                                               \
  FLOW_OP(NAME)                                                                                              \
      .schema(#NAME "(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")         \
      .traits(kReduction)                                                                                    \
      .dims_attr("dim")                                                                                      \
      .meta([](const TensorList& in, const Attrs& a) { return dim_extreme_meta(in, a, OPNAME); })            \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                             \
    auto m = reduce_mask(in[0], {a.i("dim")}, OPNAME);                                                       \
    check_nonempty(in[0], m, OPNAME);                                                                        \
    extreme_index_kernel<MAX>(in[0], &out[0], out[1], m, OPNAME);                                            \
  })                                                                                                         \
      .save_outputs({1})                                                                                     \
      .nondiff_outputs({1})                                                                                  \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                                      \
    const Shape& s = c.input_meta(0).sizes;                                                                  \
    return {ops::call1("value_selecting_reduction_backward", {g[0], c.output(1)},                            \
                       {c.attrs.i("dim"), std::vector<int64_t>(s.begin(), s.end()), c.attrs.b("keepdim")})}; \
  });

FLOW_DIM_EXTREME_OP(max_dim, "max", true)
FLOW_DIM_EXTREME_OP(min_dim, "min", false)

#define FLOW_ARG_EXTREME_OP(NAME, MAX)                                                                             \
  FLOW_OP(NAME)                                                                                                    \
      .schema(#NAME "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")                                  \
      .traits(kReduction | kNonDifferentiable)                                                                     \
      .dims_attr("dim")                                                                                            \
      .meta([](const TensorList& in, const Attrs& a) {                                                             \
    const Tensor& t = in[0];                                                                                       \
    FLOW_RUNTIME_CHECK(t.dtype() != DType::Bool, #NAME "(): does not support bool input");                         \
    if (a.none("dim")) {                                                                                           \
      FLOW_INDEX_CHECK(t.numel() > 0, #NAME "(): Expected reduction dim to be specified for input.numel() == 0."); \
      return std::vector<TensorMeta>{{a.b("keepdim") ? Shape(t.dim(), 1) : Shape{}, DType::Int64, t.device()}};    \
    }                                                                                                              \
    auto m = reduce_mask(t, {a.i("dim")}, #NAME);                                                                  \
    check_nonempty(t, m, #NAME);                                                                                   \
    return std::vector<TensorMeta>{{reduced_sizes(t.sizes(), m, a.b("keepdim")), DType::Int64, t.device()}};       \
  }).cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                                     \
    const Tensor& t = in[0];                                                                                       \
    std::vector<bool> m = a.none("dim") ? std::vector<bool>(t.dim(), true) : reduce_mask(t, {a.i("dim")}, #NAME);  \
    FLOW_INDEX_CHECK(t.numel() > 0 || !a.none("dim"),                                                              \
                     #NAME "(): Expected reduction dim to be specified for input.numel() == 0.");                  \
    check_nonempty(t, m, #NAME);                                                                                   \
    extreme_index_kernel<MAX>(t, nullptr, out[0], m, #NAME);                                                       \
  });

FLOW_ARG_EXTREME_OP(argmax, true)
FLOW_ARG_EXTREME_OP(argmin, false)

// ---- backward helpers ---------------------------------------------------------------------------------
// mask (in self's dtype) of self == other (broadcast); NaN matches NaN when nan_equal.
FLOW_OP(_reduce_eq_mask)
    .schema("_reduce_eq_mask(Tensor self, Tensor other, bool nan_equal=False) -> Tensor")
    .traits(kBackwardHelper | kElementwise | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) {
      FLOW_RUNTIME_CHECK(broadcast_shapes(in[0].sizes(), in[1].sizes(), "_reduce_eq_mask") == in[0].sizes(),
                         "_reduce_eq_mask: other ", shape_str(in[1].sizes()), " must broadcast to self ",
                         shape_str(in[0].sizes()));
      return std::vector<TensorMeta>{{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      bool nan_equal = a.b("nan_equal");
      Tensor other = cast_for_kernel(in[1], in[0].dtype());
      dispatch_all(in[0].dtype(), "_reduce_eq_mask", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        binary_loop<T, T>(out[0], in[0], other,
                          [nan_equal](A x, A y) { return static_cast<A>(x == y || (nan_equal && x != x && y != y)); });
      });
    });

namespace {

// Element k of the reduced tensor (row-major) belongs to position (k / inner, indices[k], k % inner) of the
// full one ([outer, n, inner] around dim). scatter: full[pos] = red[k] (full zero-filled); else red[k] = full[pos].
// Both tensors are contiguous and of one dtype.
void select_along_dim(const Tensor& full, const Tensor& red, const Tensor& indices, int64_t dim, bool scatter) {
  Tensor idx = contiguous_copy(indices);
  const int64_t nd = full.dim();
  const int64_t n = nd == 0 ? 1 : full.sizes()[dim];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= full.sizes()[d];
  FLOW_RUNTIME_CHECK(idx.numel() == red.numel(), "value_selecting_reduction_backward: indices of ", idx.numel(),
                     " elements for a reduced tensor of ", red.numel());
  FLOW_RUNTIME_CHECK(idx.dtype() == DType::Int64, "value_selecting_reduction_backward: expected int64 indices, got ",
                     dtype_name(idx.dtype()));
  FLOW_RUNTIME_CHECK(red.numel() * n == full.numel(), "value_selecting_reduction_backward: a reduced tensor of ",
                     red.numel(), " elements does not come from ", shape_str(full.sizes()), " reduced over dim ", dim);
  const int64_t* ix = idx.data<int64_t>();
  for (int64_t k = 0; k < idx.numel(); ++k)
    FLOW_INDEX_CHECK(ix[k] >= 0 && ix[k] < n, "value_selecting_reduction_backward: index ", ix[k],
                     " is out of bounds for dimension ", dim, " with size ", n);
  dispatch_all(full.dtype(), "value_selecting_reduction_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* f = full.data<T>();
    T* r = red.data<T>();
    if (scatter) std::fill(f, f + full.numel(), T(0));
    for (int64_t k = 0; k < red.numel(); ++k) {
      int64_t pos = ((k / inner) * n + ix[k]) * inner + k % inner;
      if (scatter) f[pos] = r[k];
      else r[k] = f[pos];
    }
  });
}

}  // namespace

// The gradient of a value-selecting reduction along dim (max/min(dim), ...): grad scattered to `indices`.
FLOW_OP(value_selecting_reduction_backward)
    .schema(
        "value_selecting_reduction_backward(Tensor grad, Tensor indices, int dim, int[] sizes, bool keepdim) -> Tensor")
    .traits(kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      const auto& s = a.ints("sizes");
      return std::vector<TensorMeta>{{Shape(s.begin(), s.end()), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t dim = out[0].dim() == 0 ? 0 : wrap_dim(a.i("dim"), out[0].dim(), "value_selecting_reduction_backward");
      Tensor g = contiguous_copy(cast_for_kernel(in[0], out[0].dtype()));
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype(), out[0].device());
      select_along_dim(o, g, in[1], dim, true);
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& gg) -> TensorList {
      return {ops::call1("_reduce_select", {gg[0], c.input(1)}, {c.attrs.i("dim"), c.attrs.b("keepdim")}), Tensor()};
    });

// out = self gathered at `indices` along dim (indices has self's shape with dim reduced, kept when keepdim).
FLOW_OP(_reduce_select)
    .schema("_reduce_select(Tensor self, Tensor indices, int dim, bool keepdim) -> Tensor")
    .traits(kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t dim = in[0].dim() == 0 ? 0 : wrap_dim(a.i("dim"), in[0].dim(), "_reduce_select");
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype(), out[0].device());
      select_along_dim(contiguous_copy(in[0]), o, in[1], dim, false);
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& s = c.input_meta(0).sizes;
      return {ops::call1("value_selecting_reduction_backward", {g[0], c.input(1)},
                         {c.attrs.i("dim"), std::vector<int64_t>(s.begin(), s.end()), c.attrs.b("keepdim")}),
              Tensor()};
    });

// ---- logical reductions -------------------------------------------------------------------------------
namespace {

// all/any: dim=None reduces everything, an empty dim list nothing (like PyTorch).
std::vector<bool> logical_mask(const Tensor& t, const Attrs& a, const char* op) {
  if (a.none("dim")) return std::vector<bool>(t.dim(), true);
  if (a.ints("dim").empty()) return std::vector<bool>(t.dim(), false);
  return reduce_mask(t, a.ints("dim"), op);
}

template <bool All>
void logical_kernel(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  const Tensor& t = in[0];
  ReducePlan p = plan_reduction(t, logical_mask(t, a, op));
  Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype(), out[0].device());
  dispatch_all(t.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using E = acc_t<T>;
    auto fin = [](bool v, int64_t) { return v; };
    auto comb = [](bool x, bool y) { return All ? (x && y) : (x || y); };
    auto fold = [](bool acc, E x) { return All ? (acc && x != E(0)) : (acc || x != E(0)); };
    dispatch_all(o.dtype(), op, [&](auto otag) {
      using O = typename decltype(otag)::type;
      reduce_plan<T, bool>(p, o.data<O>(), All, fold, comb, fin);
    });
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

}  // namespace

#define FLOW_LOGICAL_OP(NAME, ALL)                                                              \
  FLOW_OP(NAME)                                                                                 \
      .schema(#NAME "(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor")             \
      .traits(kReduction | kNonDifferentiable)                                                  \
      .combiner(ALL ? Combiner::All : Combiner::Any)                                            \
      .dims_attr("dim")                                                                         \
      .meta([](const TensorList& in, const Attrs& a) {                                          \
    const Tensor& t = in[0];                                                                    \
    DType dt = t.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;                          \
    return std::vector<TensorMeta>{                                                             \
        {reduced_sizes(t.sizes(), logical_mask(t, a, #NAME), a.b("keepdim")), dt, t.device()}}; \
  }).cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                  \
    logical_kernel<ALL>(in, out, a, #NAME);                                                     \
  });

FLOW_LOGICAL_OP(all, true)
FLOW_LOGICAL_OP(any, false)

FLOW_OP(count_nonzero)
    .schema("count_nonzero(Tensor self, int[]? dim=None) -> Tensor")
    .traits(kReduction | kNonDifferentiable)
    .combiner(Combiner::Sum)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_reduce(in[0], dims_attr(a, "dim"), false, DType::Int64, "count_nonzero");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const Tensor& t = in[0];
      ReducePlan p = plan_reduction(t, reduce_mask(t, dims_attr(a, "dim"), "count_nonzero"));
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), DType::Int64, out[0].device());
      dispatch_all(t.dtype(), "count_nonzero", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using E = acc_t<T>;
        reduce_plan<T, int64_t>(p, o.data<int64_t>(), int64_t(0), [](int64_t acc, E x) { return acc + (x != E(0)); },
                                [](int64_t x, int64_t y) { return x + y; }, [](int64_t v, int64_t) { return v; });
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    });

namespace ops {
Tensor amax(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim) {
  return call1("amax", {t}, {dims, keepdim});
}
Tensor amin(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim) {
  return call1("amin", {t}, {dims, keepdim});
}
}  // namespace ops

}  // namespace flow
