// Broadcasting binary math beyond the four basic operators: remainder, fmod, pow, maximum/minimum,
// fmax/fmin, atan2, hypot, copysign, floor_divide, xlogy. Python numbers arrive as wrapped 0-dim tensors,
// so each op serves tensor-tensor, tensor-scalar and scalar-tensor calls.
#include <cmath>
#include <type_traits>

#include "binary_util.h"

namespace flow {
namespace {

using binary::any_zero;
using binary::call2;
using binary::float_binary_kernel;
using binary::float_result_type;
using binary::is_wrapped;
using binary::meta_float;
using binary::not_implemented;
using binary::scalar_value;
using binary::where0;
using binary::where0_else;

// Meta for ops computing in result_type that reject bool (remainder, fmod, pow, floor_divide).
MetaFn meta_no_bool(const char* kernel) {
  return [kernel](const TensorList& in, const Attrs& a) {
    auto m = meta_binary(in, a);
    if (m[0].dtype == DType::Bool) not_implemented(kernel, DType::Bool);
    return m;
  };
}

// Integer remainder/fmod/division: the divisor is scanned first so that a zero raises before any write. An
// empty result divides nothing, so it does not raise (as in PyTorch).
void check_int_divisor(const TensorList& in, const Tensor& out, DType ct) {
  if (is_integral(ct, true) && out.numel() > 0)
    FLOW_RUNTIME_CHECK(!any_zero(cast_for_kernel(in[1], ct)), "ZeroDivisionError");
}

// C's fmod without glibc's slow exact loop: x - trunc(x/y)*y in one fma is exact when the quotient is right.
// A rounded division off by one near an integer shows as a remainder out of range; those, inf/NaN and huge
// quotients take std::fmod. Without hardware fma (portable builds) std::fmod is used throughout.
template <typename A>
inline A fmod_fast(A x, A y) {
#ifdef __FMA__
  constexpr A kMaxQ = std::is_same_v<A, float> ? A(1 << 22) : A(int64_t(1) << 50);
  A q = std::trunc(x / y);
  if (std::abs(q) < kMaxQ && std::isfinite(y)) {
    A r = std::fma(-q, y, x);
    if (r == A(0)) return std::copysign(A(0), x);
    if ((r < 0) == (x < 0) && std::abs(r) < std::abs(y)) return r;
  }
#endif
  return std::fmod(x, y);
}

// Python's float %: x - floor(x/y)*y in one fma rounds the exact remainder once, as PyTorch's fmod-then-add
// does; out-of-range results (a quotient off by one) and special values take that reference path.
template <typename A>
inline A remainder_fast(A x, A y) {
#ifdef __FMA__
  constexpr A kMaxQ = std::is_same_v<A, float> ? A(1 << 22) : A(int64_t(1) << 50);
  A q = std::floor(x / y);
  if (std::abs(q) < kMaxQ && std::isfinite(y)) {
    A r = std::fma(-q, y, x);
    if (r == A(0)) return std::copysign(A(0), x);
    if (y > 0 ? (r > 0 && r < y) : (r < 0 && r > y)) return r;
  }
#endif
  A m = std::fmod(x, y);
  return (m != 0 && ((y < 0) != (m < 0))) ? m + y : m;
}

// Python's % (the result takes the divisor's sign) and C's fmod, for integers and floats.
template <bool Python>
void mod_kernel(const char* name, const TensorList& in, const Tensor& out) {
  DType ct = result_type(in);
  check_int_divisor(in, out, ct);
  with_compute_dtype(in, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      if constexpr (std::is_integral_v<A>) {
        binary_loop<T, T>(o, c[0], c[1], [](A x, A y) -> A {
          if (y == 0) return 0;  // unreachable after check_int_divisor; keeps the loop free of UB
          if constexpr (std::is_signed_v<A>)
            if (y == -1) return 0;  // INT_MIN % -1 overflows in C++
          A r = static_cast<A>(x % y);
          if constexpr (Python)
            if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<A>(r + y);
          return r;
        });
      } else {
        binary_loop<T, T>(o, c[0], c[1], [](A x, A y) -> A {
          if constexpr (Python) return remainder_fast(x, y);
          else return fmod_fast(x, y);
        });
      }
    });
  });
}

// Integer power by squaring, wrapping on overflow like PyTorch; negative exponents give 0 except for bases 1/-1.
template <typename A>
A int_pow(A base, A exp) {
  if constexpr (std::is_signed_v<A>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? A(-1) : A(1);
      return 0;
    }
  }
  using U = std::make_unsigned_t<std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>>;
  U r = 1, b = static_cast<U>(base);
  auto e = exp;
  while (e) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<A>(r);
}

bool bool_pow_shortcut(const TensorList& in) {
  if (!is_wrapped(in[1]) || !in[1].has_storage()) return false;
  double e = scalar_value(in[1]).to_double();
  return e == 0.0 || e == 1.0;
}

std::vector<TensorMeta> meta_pow(const TensorList& in, const Attrs& a) {
  auto m = meta_binary(in, a);
  // bool ** 0 / bool ** 1 are defined (a fill and a copy), like PyTorch's scalar-exponent shortcuts
  if (m[0].dtype == DType::Bool && !bool_pow_shortcut(in)) not_implemented("pow", DType::Bool);
  // Tensor ** python_int: PyTorch rejects negative exponents for integral results up front.
  if (is_integral(m[0].dtype) && is_wrapped(in[1]) && in[1].has_storage()) {
    Scalar e = scalar_value(in[1]);
    FLOW_RUNTIME_CHECK(!(e.is_int() && e.to_int() < 0), "Integers to negative integer powers are not allowed.");
    check_scalar_fits(e, m[0].dtype);
  }
  return m;
}

void pow_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  DType ct = result_type(in);
  if (ct == DType::Bool) {
    FLOW_RUNTIME_CHECK(bool_pow_shortcut(in), "\"pow\" not implemented for 'Bool'");
    if (scalar_value(in[1]).to_double() == 0.0) ops::copy_into(out[0], ops::scalar_tensor(Scalar(true), DType::Bool));
    else ops::copy_into(out[0], in[0]);
    return;
  }
  with_compute_dtype(in, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(ct, "pow", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      if constexpr (std::is_integral_v<A>) {
        binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return int_pow<A>(x, y); });
      } else if (c[1].dim() == 0 && c[0].sizes() == o.sizes()) {
        // tensor ** scalar: one unary pass, with the common exponents strength-reduced
        const A e = static_cast<A>(*c[1].data<T>());
        if (e == A(2)) unary_loop<T, T>(o, c[0], [](A x) { return x * x; });
        else if (e == A(3)) unary_loop<T, T>(o, c[0], [](A x) { return x * x * x; });
        else if (e == A(0.5)) unary_loop<T, T>(o, c[0], [](A x) { return std::sqrt(x); });
        else if (e == A(1)) unary_loop<T, T>(o, c[0], [](A x) { return x; });
        else if (e == A(-1)) unary_loop<T, T>(o, c[0], [](A x) { return A(1) / x; });
        else if (e == A(-2)) unary_loop<T, T>(o, c[0], [](A x) { return A(1) / (x * x); });
        else if (e == A(-0.5)) unary_loop<T, T>(o, c[0], [](A x) { return A(1) / std::sqrt(x); });  // as torch
        else unary_loop<T, T>(o, c[0], [e](A x) { return std::pow(x, e); });
      } else {
        binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return std::pow(x, y); });
      }
    });
  });
}

Tensor wrapped(Scalar s) { return ops::wrapped_scalar(s); }
Tensor wrapped0() { return ops::wrapped_scalar(Scalar(int64_t(0))); }

TensorList pow_backward(BackwardCtx& c, const TensorList& g) {
  Tensor self = c.input(0), ex = c.input(1);
  Tensor ga, gb;
  if (c.needs(0)) {
    if (is_wrapped(ex)) {
      Scalar e = scalar_value(ex);
      if (e.to_double() == 0.0) {
        ga = ops::zeros_like(g[0]);
      } else {
        Scalar em1 = e.is_float() ? Scalar(e.to_double() - 1.0) : Scalar(e.to_int() - 1);
        ga = ops::mul(ops::mul(g[0], ops::call1("pow", {self, wrapped(em1)})), e);
      }
    } else {
      Tensor d = ops::mul(ex, ops::call1("pow", {self, ops::sub(ex, wrapped(Scalar(int64_t(1))))}));
      ga = where0_else(call2("eq", ex, wrapped0()), ops::mul(g[0], d));
    }
  }
  if (c.needs(1)) {
    Tensor result = c.output(0);
    Tensor logb;
    if (is_wrapped(self)) logb = wrapped(Scalar(std::log(scalar_value(self).to_double())));
    else logb = ops::call1("log", {ops::to_dtype(self, result.dtype())});
    // d/de b^e = b^e log b, defined as 0 where b == 0 and e >= 0 (PyTorch's convention)
    Tensor zero_base = call2("logical_and", call2("eq", self, wrapped0()), call2("ge", ex, wrapped0()));
    gb = ops::mul(g[0], where0_else(zero_base, ops::mul(result, logb)));
  }
  return {ga, gb};
}

// maximum/minimum propagate NaN; fmax/fmin ignore it. Written as selects so that the loop vectorises.
template <bool Max, bool IgnoreNan>
void minmax_kernel(const char* name, const TensorList& in, const Tensor& out) {
  DType ct = result_type(in);
  with_compute_dtype(in, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_all(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      binary_loop<T, T>(o, c[0], c[1], [](A x, A y) -> A {
        A m = Max ? (x > y ? x : y) : (x < y ? x : y);  // a NaN x gives y; a NaN y gives y
        if constexpr (std::is_floating_point_v<A>) {
          if constexpr (IgnoreNan) return y != y ? x : m;
          else return x != x ? x : m;
        }
        return m;
      });
    });
  });
}

// PyTorch's maximum/minimum backward: ties split the gradient, NaN comparisons pass it to both.
template <bool Max>
TensorList minmax_backward(BackwardCtx& c, const TensorList& g) {
  Tensor a = c.input(0), b = c.input(1);
  Tensor tie = call2("eq", a, b);
  Tensor shared = ops::where(tie, ops::mul(g[0], Scalar(0.5)), g[0]);
  const char* a_loses = Max ? "lt" : "gt";
  const char* b_loses = Max ? "gt" : "lt";
  return {c.needs(0) ? where0_else(call2(a_loses, a, b), shared) : Tensor(),
          c.needs(1) ? where0_else(call2(b_loses, a, b), shared) : Tensor()};
}

template <bool Max>
TensorList fminmax_backward(BackwardCtx& c, const TensorList& g) {
  Tensor a = c.input(0), b = c.input(1);
  // self wins where it compares favourably or other is NaN
  Tensor self_wins = call2("logical_or", call2(Max ? "ge" : "le", a, b), call2("ne", b, b));
  return {c.needs(0) ? where0(self_wins, g[0]) : Tensor(), c.needs(1) ? where0_else(self_wins, g[0]) : Tensor()};
}

}  // namespace

FLOW_OP(remainder)
    .schema("remainder(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_no_bool("remainder_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      mod_kernel<true>("remainder", in, out[0]);
    })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gb;
      if (c.needs(1))
        gb = ops::neg(ops::mul(g[0], ops::call1("div", {c.input(0), c.input(1)}, {std::string("floor")})));
      return {c.needs(0) ? g[0] : Tensor(), gb};
    });

FLOW_OP(fmod)
    .schema("fmod(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_no_bool("fmod_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { mod_kernel<false>("fmod", in, out[0]); })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gb;
      if (c.needs(1))
        gb = ops::neg(ops::mul(g[0], ops::call1("div", {c.input(0), c.input(1)}, {std::string("trunc")})));
      return {c.needs(0) ? g[0] : Tensor(), gb};
    });

FLOW_OP(floor_divide)
    .schema("floor_divide(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_no_bool("div_floor_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      // div's kernel with rounding_mode='floor'; integer zero divisors raise before anything is written
      check_int_divisor(in, out[0], result_type(in));
      const OpDef& div = FLOW_OPDEF("div");
      Attrs a{AttrValue(std::string("floor"))};
      a.schema = &div.schema;
      div.out_kernel[static_cast<int>(out[0].device().type)](in, out, a);
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      // piecewise constant, but PyTorch refuses rather than return zeros (use div(..., rounding_mode='floor'))
      fail(ErrorKind::Runtime, "derivative for aten::floor_divide is not implemented");
    });

FLOW_OP(pow)
    .schema("pow(Tensor self, Tensor exponent) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_pow)
    .cpu_out(pow_kernel)
    .save_inputs({0, 1})
    .save_outputs({0}, {{1}})  // only the exponent's gradient reads the result
    .inplace_variant()
    .backward(pow_backward);

FLOW_OP(maximum)
    .schema("maximum(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      minmax_kernel<true, false>("maximum", in, out[0]);
    })
    .save_inputs({0, 1})
    .backward(minmax_backward<true>);

FLOW_OP(minimum)
    .schema("minimum(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      minmax_kernel<false, false>("minimum", in, out[0]);
    })
    .save_inputs({0, 1})
    .backward(minmax_backward<false>);

FLOW_OP(fmax)
    .schema("fmax(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      minmax_kernel<true, true>("fmax", in, out[0]);
    })
    .save_inputs({0, 1})
    .backward(fminmax_backward<true>);

FLOW_OP(fmin)
    .schema("fmin(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      minmax_kernel<false, true>("fmin", in, out[0]);
    })
    .save_inputs({0, 1})
    .backward(fminmax_backward<false>);

FLOW_OP(atan2)
    .schema("atan2(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("atan2_cpu", true))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      float_binary_kernel("atan2", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A y, A x) { return std::atan2(y, x); };
      });
    })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor a = c.input(0), b = c.input(1);
      Tensor gr = ops::div(g[0], ops::add(ops::mul(a, a), ops::mul(b, b)));
      return {c.needs(0) ? ops::mul(gr, b) : Tensor(), c.needs(1) ? ops::neg(ops::mul(gr, a)) : Tensor()};
    });

FLOW_OP(hypot)
    .schema("hypot(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("hypot_cpu", false))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      float_binary_kernel("hypot", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x, A y) { return std::hypot(x, y); };
      });
    })
    .save_inputs({0, 1})
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gr = ops::div(g[0], c.output(0));
      return {c.needs(0) ? ops::mul(gr, c.input(0)) : Tensor(), c.needs(1) ? ops::mul(gr, c.input(1)) : Tensor()};
    });

FLOW_OP(copysign)
    .schema("copysign(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("copysign_cpu", true))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      float_binary_kernel("copysign", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x, A y) { return std::copysign(x, y); };
      });
    })
    .save_inputs({0})
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor ga;
      if (c.needs(0)) {
        Tensor self = c.input(0);
        // d/dx copysign(x, y) = sign agreement, 0 at x == 0
        ga = ops::mul(g[0], where0_else(call2("eq", self, wrapped0()), ops::div(c.output(0), self)));
      }
      return {ga, c.needs(1) ? ops::zeros_like(g[0]) : Tensor()};
    });

FLOW_OP(xlogy)
    .schema("xlogy(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("xlogy_cpu", true))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      float_binary_kernel("xlogy", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x, A y) -> A {
          if (std::isnan(y)) return y;
          if (x == A(0)) return A(0);
          return x * std::log(y);
        };
      });
    })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor a = c.input(0), b = c.input(1);
      Tensor ga, gb;
      if (c.needs(0)) {
        Tensor z = call2("logical_and", call2("eq", a, wrapped0()), call2("le", b, wrapped0()));
        ga = where0_else(z, call2("xlogy", g[0], b));
      }
      if (c.needs(1)) gb = ops::div(ops::mul(g[0], a), b);
      return {ga, gb};
    });

}  // namespace flow
