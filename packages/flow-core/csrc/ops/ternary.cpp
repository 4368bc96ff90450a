// Broadcasting ternary ops: where(condition, self, other), lerp(self, end, weight), addcmul and addcdiv.
// Python numbers arrive as wrapped 0-dim tensors (where(c, x, 0.0), lerp(a, b, 0.5)).
#include <cmath>

#include "binary_util.h"

namespace flow {
namespace {

using binary::is_wrapped;
using binary::not_implemented;
using binary::scalar_value;
using binary::where0;
using binary::where0_else;

Shape broadcast3(const TensorList& in, size_t first, const char* op) {
  return broadcast_shapes(broadcast_shapes(in[first].sizes(), in[first + 1].sizes(), op), in[first + 2].sizes(), op);
}

// out = f(a, b, c) with all four of type T; fast paths for contiguous operands with c contiguous or a scalar.
template <typename T, typename F>
void ternary_same(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  using A = acc_t<T>;
  for_each_element<4>({&out, &a, &b, &c}, out.sizes(),
                      [f](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
    constexpr int64_t z = sizeof(T);
    if (s[0] == z && s[1] == z && s[2] == z && (s[3] == z || s[3] == 0)) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      const T* y = reinterpret_cast<const T*>(p[2]);
      const T* w = reinterpret_cast<const T*>(p[3]);
      if (s[3] == 0) {
        const A wv = static_cast<A>(*w);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(f(static_cast<A>(x[i]), static_cast<A>(y[i]), wv));
      } else {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i)
          o[i] = static_cast<T>(f(static_cast<A>(x[i]), static_cast<A>(y[i]), static_cast<A>(w[i])));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<T*>(p[0] + i * s[0]) =
          static_cast<T>(f(static_cast<A>(*reinterpret_cast<const T*>(p[1] + i * s[1])),
                           static_cast<A>(*reinterpret_cast<const T*>(p[2] + i * s[2])),
                           static_cast<A>(*reinterpret_cast<const T*>(p[3] + i * s[3]))));
  });
}

// Runs body(o, cast inputs) in dtype ct, writing `out` directly or through a temporary of dtype ct.
template <typename Body>
void in_dtype(const TensorList& in, const Tensor& out, DType ct, Body&& body) {
  with_compute_dtype(in, out, ct, ct, body);
}

// ---- where ------------------------------------------------------------------------------------------------
std::vector<TensorMeta> meta_where(const TensorList& in, const Attrs&) {
  FLOW_RUNTIME_CHECK(in[0].dtype() == DType::Bool,
                     "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                     torch_type_name(in[0].dtype()));
  DType d = result_type({in[1], in[2]});
  // a Python number must fit the result (PyTorch's check; it skips 16-bit float results)
  if (d != DType::Float16 && d != DType::BFloat16)
    for (int k = 1; k <= 2; ++k)
      if (is_wrapped(in[k]) && in[k].has_storage()) check_scalar_fits(scalar_value(in[k]), d);
  return {{broadcast3(in, 0, "where"), d, common_device(in, "where")}};
}

void where_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DType ct = meta_where(in, a)[0].dtype;
  Tensor o = out[0].dtype() == ct ? out[0] : empty(out[0].sizes(), ct, out[0].device());
  Tensor x = cast_for_kernel(in[1], ct), y = cast_for_kernel(in[2], ct);
  const Tensor& cond = in[0];
  dispatch_all(ct, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_element<4>({&o, &cond, &x, &y}, o.sizes(),
                        [](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
      constexpr int64_t z = sizeof(T);
      if (s[0] == z && s[1] == 1 && s[2] == z && s[3] == z) {
        T* op = reinterpret_cast<T*>(p[0]);
        const bool* c = reinterpret_cast<const bool*>(p[1]);
        const T* xp = reinterpret_cast<const T*>(p[2]);
        const T* yp = reinterpret_cast<const T*>(p[3]);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) op[i] = c[i] ? xp[i] : yp[i];
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
  if (!o.is_same(out[0])) ops::copy_into(out[0], o);
}

// ---- lerp -------------------------------------------------------------------------------------------------
std::vector<TensorMeta> meta_lerp(const TensorList& in, const Attrs&) {
  const Tensor& self = in[0];
  bool scalar_weight = is_wrapped(in[2]);
  if (!is_floating(self.dtype()))
    not_implemented(scalar_weight ? "lerp_kernel_scalar" : "lerp_kernel_tensor", self.dtype());
  FLOW_RUNTIME_CHECK(is_wrapped(in[1]) || in[1].dtype() == self.dtype(), "expected dtype ",
                     torch_type_name(self.dtype()), " for `end` but got dtype ", torch_type_name(in[1].dtype()));
  FLOW_RUNTIME_CHECK(scalar_weight || in[2].dim() == 0 || in[2].dtype() == self.dtype(), "expected dtype ",
                     torch_type_name(self.dtype()), " for `weight` but got dtype ", torch_type_name(in[2].dtype()));
  return {{broadcast3(in, 0, "lerp"), self.dtype(), common_device(in, "lerp")}};
}

void lerp_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DType ct = meta_lerp(in, a)[0].dtype;
  in_dtype(in, out[0], ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_floating(ct, "lerp", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      // PyTorch's two-sided formula: exact at weight 0 and 1; a scalar weight picks its side once
      auto lo = [](A s, A e, A w) -> A { return s + w * (e - s); };
      auto hi = [](A s, A e, A w) -> A { return e - (e - s) * (A(1) - w); };
      if (c[2].numel() == 1) {
        if (std::abs(static_cast<A>(*c[2].data<T>())) < A(0.5)) ternary_same<T>(o, c[0], c[1], c[2], lo);
        else ternary_same<T>(o, c[0], c[1], c[2], hi);
      } else {
        ternary_same<T>(o, c[0], c[1], c[2],
                        [lo, hi](A s, A e, A w) -> A { return std::abs(w) < A(0.5) ? lo(s, e, w) : hi(s, e, w); });
      }
    });
  });
}

TensorList lerp_backward(BackwardCtx& c, const TensorList& g) {
  Tensor w = c.input(2);
  Tensor gs, ge, gw;
  if (is_wrapped(w)) {
    double wv = scalar_value(w).to_double();
    if (c.needs(0)) gs = ops::mul(g[0], Scalar(1.0 - wv));
    if (c.needs(1)) ge = ops::mul(g[0], Scalar(wv));
  } else {
    if (c.needs(0)) gs = ops::mul(g[0], ops::sub(ops::wrapped_scalar(Scalar(int64_t(1))), w));
    if (c.needs(1)) ge = ops::mul(g[0], w);
  }
  if (c.needs(2)) gw = ops::mul(g[0], ops::sub(c.input(1), c.input(0)));
  return {gs, ge, gw};
}

// ---- addcmul / addcdiv -----------------------------------------------------------------------------------
template <bool Div>
std::vector<TensorMeta> meta_addc(const TensorList& in, const Attrs&) {
  DType rt = result_type(in);
  if constexpr (Div) {
    FLOW_RUNTIME_CHECK(
        is_floating(rt),
        "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
        "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
        "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
        "tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value "
        "* tensor1 / tensor2), for all dtypes.");
  } else {
    if (rt == DType::Bool) not_implemented("addcmul_cpu_out", rt);
  }
  return {{broadcast3(in, 0, Div ? "addcdiv" : "addcmul"), rt, common_device(in, Div ? "addcdiv" : "addcmul")}};
}

template <bool Div>
void addc_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DType ct = meta_addc<Div>(in, a)[0].dtype;
  Scalar value = a.s("value");
  in_dtype(in, out[0], ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(ct, Div ? "addcdiv" : "addcmul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const A v = std::is_integral_v<A> ? static_cast<A>(value.to_int()) : static_cast<A>(value.to_double());
      // tensor2 is the third operand, so a scalar divisor hits ternary_same's broadcast fast path
      if constexpr (Div) ternary_same<T>(o, c[0], c[1], c[2], [v](A x, A y, A z) -> A { return x + v * y / z; });
      else ternary_same<T>(o, c[0], c[1], c[2], [v](A x, A y, A z) -> A { return static_cast<A>(x + v * y * z); });
    });
  });
}

Tensor times(const Tensor& t, Scalar v) { return v.to_double() == 1.0 ? t : ops::mul(t, v); }

}  // namespace

FLOW_OP(where)
    .schema("where(Tensor condition, Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_where)
    .cpu_out(where_kernel)
    .save_inputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor cond = c.input(0);
      return {Tensor(), c.needs(1) ? where0(cond, g[0]) : Tensor(), c.needs(2) ? where0_else(cond, g[0]) : Tensor()};
    });

FLOW_OP(lerp)
    .schema("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_lerp)
    .cpu_out(lerp_kernel)
    .save_inputs({0, 1, 2})
    .inplace_variant()
    .backward(lerp_backward);

FLOW_OP(addcmul)
    .schema("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_addc<false>)
    .cpu_out(addc_kernel<false>)
    .save_inputs({1, 2})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Scalar v = c.attrs.s("value");
      return {c.needs(0) ? g[0] : Tensor(), c.needs(1) ? times(ops::mul(g[0], c.input(2)), v) : Tensor(),
              c.needs(2) ? times(ops::mul(g[0], c.input(1)), v) : Tensor()};
    });

FLOW_OP(addcdiv)
    .schema("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_addc<true>)
    .cpu_out(addc_kernel<true>)
    .save_inputs({1, 2})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Scalar v = c.attrs.s("value");
      Tensor t1 = c.input(1), t2 = c.input(2);
      Tensor g1, g2;
      if (c.needs(1)) g1 = times(ops::div(g[0], t2), v);
      if (c.needs(2)) g2 = ops::neg(times(ops::div(ops::mul(g[0], t1), ops::mul(t2, t2)), v));
      return {c.needs(0) ? g[0] : Tensor(), g1, g2};
    });

}  // namespace flow
