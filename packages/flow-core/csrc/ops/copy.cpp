// Data movement: copy_ (broadcasting, casting), clone, contiguous, to_dtype, fill_.
#include <cstring>

#include "../kernels/cpu/loops.h"
#include "functions.h"

namespace flow {
namespace {

void copy_kernel(const Tensor& dst, const Tensor& src) {
  FLOW_RUNTIME_CHECK(src.dim() <= dst.dim(), "copy_: source of shape ", shape_str(src.sizes()),
                     " cannot be broadcast to ", shape_str(dst.sizes()));
  broadcast_shapes(dst.sizes(), src.sizes(), "copy_");  // raises on mismatch
  for (int64_t i = 0; i < src.dim(); ++i) {
    int64_t sd = src.sizes()[i], dd = dst.sizes()[dst.dim() - src.dim() + i];
    FLOW_RUNTIME_CHECK(sd == dd || sd == 1, "copy_: the size of the source (", shape_str(src.sizes()),
                       ") must match the destination (", shape_str(dst.sizes()), ")");
  }
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && src.sizes() == dst.sizes()) {
    if (dst.raw_data() == src.raw_data()) return;
    char* d = static_cast<char*>(dst.raw_data());
    const char* s = static_cast<const char*>(src.raw_data());
    int64_t nbytes = dst.numel() * dst.itemsize();
    parallel_for(nbytes, int64_t(1) << 20, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, e - b); });
    return;
  }
  dispatch_all(dst.dtype(), "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(src.dtype(), "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      for_each_element<2>({&dst, &src}, dst.sizes(), [](std::array<char*, 2> p, std::array<int64_t, 2> st, int64_t n) {
        if constexpr (std::is_same_v<D, bool>) {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<bool*>(p[0] + i * st[0]) =
                static_cast<double>(static_cast<acc_t<S>>(*reinterpret_cast<const S*>(p[1] + i * st[1]))) != 0.0;
        } else {
          using A = acc_t<S>;
          if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
            // contiguous runs (e.g. the rows of a transposed tensor made contiguous)
            if constexpr (std::is_same_v<D, S>) {
              std::memmove(p[0], p[1], n * sizeof(D));  // memmove: a copy_ between overlapping views
            } else {
              D* d = reinterpret_cast<D*>(p[0]);
              const S* s = reinterpret_cast<const S*>(p[1]);
#pragma omp simd
              for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(static_cast<A>(s[i]));
            }
          } else {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<D*>(p[0] + i * st[0]) =
                  static_cast<D>(static_cast<A>(*reinterpret_cast<const S*>(p[1] + i * st[1])));
          }
        }
      });
    });
  });
}

std::vector<TensorMeta> same_meta(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

}  // namespace

// copy(self, src): a tensor shaped and typed like self holding src's values; its in-place form is copy_.
FLOW_OP(copy)
    .schema("copy(Tensor self, Tensor src) -> Tensor")
    .traits(kElementwise)
    .meta(same_meta)
    .inplace_variant()
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[1]); })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor(), c.needs(1) ? g[0] : Tensor()};
    });

FLOW_OP(clone)
    .schema("clone(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(same_meta)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[0]); })
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {g[0]}; });

FLOW_OP(contiguous)
    .schema("contiguous(Tensor self) -> Tensor")
    .traits(kUnary)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      if (in[0].is_contiguous()) return {in[0]};
      Tensor out = empty(in[0].sizes(), in[0].dtype(), in[0].device());
      copy_kernel(out, in[0]);
      return {out};
    })
    .meta(same_meta)
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {g[0]}; });

FLOW_OP(to_dtype)
    .schema("to_dtype(Tensor self, ScalarType dtype) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), a.dtype(0), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { copy_kernel(out[0], in[0]); })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::to_dtype(g[0], c.input_meta(0).dtype)};
    });

FLOW_OP(fill)
    .schema("fill(Tensor self, Scalar value) -> Tensor")
    .traits(kElementwise | kCreation)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      Tensor v = ops::scalar_tensor(a.s(0), out[0].dtype());
      copy_kernel(out[0], v);
    })
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor()};
    });

}  // namespace flow
