// Reductions over dims: sum (more join this file per family).
#include "../kernels/cpu/reduce.h"
#include "elementwise.h"

namespace flow {
namespace {

std::vector<int64_t> dims_attr(const Attrs& a, size_t k) { return a.none(k) ? std::vector<int64_t>{} : a.ints(k); }

// Sum's dtype: integral (and bool) inputs accumulate in int64 unless a dtype is given.
DType sum_dtype(const Tensor& t, const Attrs& a, size_t dtype_idx) {
  if (!a.none(dtype_idx)) return a.dtype(dtype_idx);
  return is_floating(t.dtype()) ? t.dtype() : DType::Int64;
}

}  // namespace

std::vector<TensorMeta> meta_reduce(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim, DType dt,
                                    const char* op) {
  auto m = reduce_mask(t, dims, op);
  Shape s;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (!m[i]) s.push_back(t.sizes()[i]);
    else if (keepdim) s.push_back(1);
  }
  return {{s, dt, t.device()}};
}

FLOW_OP(sum)
    .schema("sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
    .traits(kReduction)
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_reduce(in[0], dims_attr(a, 0), a.b(1), sum_dtype(in[0], a, 2), "sum");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      DType dt = sum_dtype(in[0], a, 2);
      Tensor src = cast_for_kernel(in[0], dt);
      ReducePlan p = plan_reduction(src, reduce_mask(src, dims_attr(a, 0), "sum"));
      Tensor o = out[0].is_contiguous() && out[0].dtype() == dt ? out[0] : empty(out[0].sizes(), dt, out[0].device());
      dispatch_all(dt, "sum", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
        reduce_plan<T, A>(p, o.data<T>(), A(0), [](A x, A y) { return static_cast<A>(x + y); },
                          [](A x, int64_t) { return x; });
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& in_sizes = c.input_meta(0).sizes;
      Tensor gr = g[0];
      if (!c.attrs.b(1) && static_cast<int64_t>(in_sizes.size()) != gr.dim()) {
        // re-insert reduced dims
        auto dims = dims_attr(c.attrs, 0);
        std::vector<bool> m(in_sizes.size(), dims.empty());
        for (int64_t d : dims) m[wrap_dim(d, in_sizes.size(), "sum")] = true;
        Shape ks;
        for (size_t i = 0; i < in_sizes.size(); ++i) ks.push_back(m[i] ? 1 : in_sizes[i]);
        gr = ops::reshape(gr, ks);
      }
      return {ops::expand(gr, in_sizes)};
    });

}  // namespace flow
