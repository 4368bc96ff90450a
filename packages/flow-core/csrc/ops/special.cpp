// Special functions as elementwise ops: igamma/igammac, i0 and oneflow.special's i0e/i1/i1e/ndtri/erfcx/
// xlog1py/zeta, the Gamma sampler's reparameterization gradient, and the integer gcd/lcm and nextafter.
// The scalar mathematics lives in special_math.cpp; each op evaluates it in double and rounds once.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "binary_util.h"
#include "special_math.h"
#include "unary_common.h"

namespace flow {
namespace {

using binary::call2;
using binary::float_binary_kernel;
using binary::meta_float;
using binary::not_implemented;
using binary::where0_else;
namespace sm = special_math;

// out = f(x) for a double-precision scalar function, in the op's floating dtype.
template <typename F>
void special_unary(const char* name, const Tensor& in, const Tensor& out, F f) {
  unary_float_kernel(name, in, out, [f](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    return [f](A x) -> A { return static_cast<A>(f(static_cast<double>(x))); };
  });
}

// out = f(x, y) likewise, broadcasting, in the promoted floating dtype.
template <typename F>
void special_binary(const char* name, const TensorList& in, const Tensor& out, F f) {
  float_binary_kernel(name, in, out, [f](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    return [f](A x, A y) -> A { return static_cast<A>(f(static_cast<double>(x), static_cast<double>(y))); };
  });
}

Tensor special1(const char* op, const Tensor& x) { return ops::call1(op, {x}); }
Tensor zero_mask(const Tensor& x) { return call2("eq", x, ops::wrapped_scalar(Scalar(int64_t(0)))); }

// d/dx P(a, x) = x^(a-1) e^-x / Gamma(a), formed in logs.
Tensor gamma_density(const Tensor& a, const Tensor& x) {
  Tensor log_x = special1("log", x);
  return ops::exp(ops::sub(ops::sub(ops::mul(ops::add(a, Scalar(-1.0)), log_x), x), special1("lgamma", a)));
}

TensorList igamma_backward(BackwardCtx& c, const TensorList& g, bool upper) {
  if (c.needs(0))
    fail(ErrorKind::NotImplemented, "the derivative for '", upper ? "igammac" : "igamma",
         ": input' is not implemented.");
  Tensor d = gamma_density(c.input(0), c.input(1));
  return {Tensor(), ops::mul(g[0], upper ? ops::neg(d) : d)};
}

// The scaled Bessel functions' derivatives: d/dx [e^-|x| I(x)] = e^-|x| I'(x) - sign(x) e^-|x| I(x).
Tensor minus_sign_times(const Tensor& x, const Tensor& v) { return ops::neg(ops::mul(ops::sign(x), v)); }

// I1'(x) = I0(x) - I1(x) / x, and likewise for the scaled pair; both are 1/2 at x = 0.
Tensor i1_derivative(const Tensor& x, const Tensor& i0, const Tensor& i1) {
  Tensor safe_x = ops::where(zero_mask(x), ops::ones_like(x), x);
  Tensor d = ops::sub(i0, ops::div(i1, safe_x));
  return ops::where(zero_mask(x), ops::full_like(d, Scalar(0.5)), d);
}

// C++'s promotion of T in arithmetic (int for the narrow types) and its unsigned twin, for wrapping negation.
template <typename T>
using promoted_t = std::conditional_t<(sizeof(T) <= sizeof(int32_t)), int32_t, int64_t>;
template <typename P>
P wrapping_abs(P v) {
  using U = std::make_unsigned_t<P>;
  return v < 0 ? static_cast<P>(U(0) - static_cast<U>(v)) : v;
}

// gcd as c10 computes it (Euclid on absolute values in the promoted arithmetic, stored back in T), so the
// most negative value wraps as in PyTorch; a -1 divisor is answered without the trapping INT_MIN % -1.
template <typename T>
T gcd_int(T a, T b) {
  using P = promoted_t<T>;
  a = static_cast<T>(wrapping_abs(static_cast<P>(a)));
  b = static_cast<T>(wrapping_abs(static_cast<P>(b)));
  while (a != 0) {
    T c = a;
    a = std::is_signed_v<T> && a == T(-1) ? T(0) : static_cast<T>(static_cast<P>(b) % static_cast<P>(a));
    b = c;
  }
  return b;
}

// |a / gcd * b| in the promoted arithmetic (wrapping on overflow), then narrowed, as PyTorch.
template <typename T>
T lcm_int(T a, T b) {
  using P = promoted_t<T>;
  using U = std::make_unsigned_t<P>;
  T g = gcd_int(a, b);
  if (g == 0) return T(0);
  // a / -1 only arises for the most negative a; its sign is dropped by the final abs anyway
  const P pa = static_cast<P>(a);
  P q = std::is_signed_v<T> && g == T(-1) ? wrapping_abs(pa) : static_cast<P>(pa / static_cast<P>(g));
  return static_cast<T>(wrapping_abs(static_cast<P>(static_cast<U>(q) * static_cast<U>(static_cast<P>(b)))));
}

MetaFn meta_integer(const char* kernel) {
  return [kernel](const TensorList& in, const Attrs& a) {
    auto m = meta_binary(in, a);
    if (!is_integral(m[0].dtype, false)) not_implemented(kernel, m[0].dtype);
    return m;
  };
}

template <bool kLcm>
void integer_kernel(const char* name, const TensorList& in, const Tensor& out) {
  DType ct = out.dtype();
  with_compute_dtype(in, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_integral(ct, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>)
        binary_loop<T, T>(o, c[0], c[1],
                          [](auto a, auto b) { return kLcm ? lcm_int(T(a), T(b)) : gcd_int(T(a), T(b)); });
    }, false);
  });
}

// The next representable value after x towards y, on the bit pattern of a 16-bit or wider IEEE type.
template <typename T>
T next_after(T x, T y) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(x, y);
  } else {
    float fx = static_cast<float>(x), fy = static_cast<float>(y);
    if (std::isnan(fx) || std::isnan(fy)) return T(fx + fy);
    if (fx == fy) return y;
    uint16_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (fx == 0) bits = static_cast<uint16_t>((fy < 0 ? 0x8000 : 0) | 1);  // the smallest subnormal towards y
    else if ((fx < fy) == (fx > 0)) ++bits;                              // away from zero
    else --bits;
    return T::from_bits(bits);
  }
}

}  // namespace

FLOW_OP(igamma)
    .schema("igamma(Tensor self, Tensor(strict) other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("igamma_cpu", false))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_binary("igamma", in, out[0], [](double a, double x) { return sm::igamma(a, x, false); });
    })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) { return igamma_backward(c, g, false); });

FLOW_OP(igammac)
    .schema("igammac(Tensor self, Tensor(strict) other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("igammac_cpu", false))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_binary("igammac", in, out[0], [](double a, double x) { return sm::igamma(a, x, true); });
    })
    .save_inputs({0, 1})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) { return igamma_backward(c, g, true); });

// PyTorch's private op behind Gamma-family rsample gradients: self is the concentration, output the sample.
FLOW_OP(_standard_gamma_grad)
    .schema("_standard_gamma_grad(Tensor self, Tensor output) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_float("_standard_gamma_grad_cpu", false))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_binary("_standard_gamma_grad", in, out[0], sm::standard_gamma_grad);
    });

FLOW_OP(i0)
    .schema("i0(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("i0", in[0], out[0], [](double x) { return sm::bessel_i(0, x, false); });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], special1("_special_i1", c.input(0)))};
    });

FLOW_OP(_special_i0e)
    .schema("_special_i0e(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("special_i0e", in[0], out[0], [](double x) { return sm::bessel_i(0, x, true); });
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      return {ops::mul(g[0], ops::add(special1("_special_i1e", x), minus_sign_times(x, c.output(0))))};
    });

FLOW_OP(_special_i1)
    .schema("_special_i1(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("special_i1", in[0], out[0], [](double x) { return sm::bessel_i(1, x, false); });
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      return {ops::mul(g[0], i1_derivative(x, special1("i0", x), c.output(0)))};
    });

FLOW_OP(_special_i1e)
    .schema("_special_i1e(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("special_i1e", in[0], out[0], [](double x) { return sm::bessel_i(1, x, true); });
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0), y = c.output(0);
      Tensor d = ops::add(i1_derivative(x, special1("_special_i0e", x), y), minus_sign_times(x, y));
      return {ops::mul(g[0], d)};
    });

FLOW_OP(_special_ndtri)
    .schema("_special_ndtri(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("special_ndtri", in[0], out[0], sm::ndtri);
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // 1 / phi(ndtri(p)) = sqrt(2 pi) e^(y^2 / 2)
      Tensor y = c.output(0);
      return {
          ops::mul(g[0], ops::mul(ops::exp(ops::mul(ops::mul(y, y), Scalar(0.5))), Scalar(std::sqrt(2 * sm::kPi))))};
    });

FLOW_OP(_special_erfcx)
    .schema("_special_erfcx(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_unary("special_erfcx", in[0], out[0], sm::erfcx);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // d/dx e^(x^2) erfc(x) = 2 x erfcx(x) - 2 / sqrt(pi)
      Tensor d = ops::add(ops::mul(ops::mul(c.input(0), c.output(0)), Scalar(2.0)), Scalar(-2 / std::sqrt(sm::kPi)));
      return {ops::mul(g[0], d)};
    });

FLOW_OP(_special_xlog1py)
    .schema("_special_xlog1py(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("xlog1py_cpu", true))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      float_binary_kernel("xlog1py", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x, A y) -> A {
          if (std::isnan(y)) return y;
          if (x == A(0)) return A(0);
          return x * std::log1p(y);
        };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor a = c.input(0), b = c.input(1), ga, gb;
      if (c.needs(0)) {
        // as xlogy: no gradient where the 0 * log(0) = 0 convention, not log1p(y), made the value
        Tensor z = call2("logical_and", zero_mask(a), call2("le", b, ops::wrapped_scalar(Scalar(-1.0))));
        ga = where0_else(z, call2("_special_xlog1py", g[0], b));
      }
      if (c.needs(1)) gb = ops::div(ops::mul(g[0], a), ops::add(b, Scalar(1.0)));
      return {ga, gb};
    });

FLOW_OP(_special_zeta)
    .schema("_special_zeta(Tensor self, Tensor other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta(meta_float("zeta_cpu", true))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      special_binary("zeta", in, out[0], sm::hurwitz_zeta);
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      if (c.needs(0)) fail(ErrorKind::NotImplemented, "the derivative for 'zeta' is not implemented.");
      // d/dq zeta(x, q) = -x zeta(x + 1, q)
      Tensor x = c.input(0);
      Tensor d = ops::neg(ops::mul(x, call2("_special_zeta", ops::add(x, Scalar(1.0)), c.input(1))));
      return {Tensor(), ops::mul(g[0], d)};
    });

// torch.special's orthogonal polynomials (Chebyshev T/U/V/W and shifted, Hermite H/He, Laguerre, Legendre),
// one op with the family as an attribute; like PyTorch's, not differentiable.
FLOW_OP(_special_polynomial)
    .schema("_special_polynomial(Tensor self, Tensor n, int kind) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(a.i("kind") >= 0 && a.i("kind") <= 11, "_special_polynomial: unknown kind ", a.i("kind"));
      return meta_float("special_polynomial_cpu", true)(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const int kind = static_cast<int>(a.i("kind"));
      special_binary("special_polynomial", in, out[0],
                     [kind](double x, double n) { return sm::orthogonal_polynomial(kind, x, n); });
    });

FLOW_OP(gcd)
    .schema("gcd(Tensor self, Tensor(strict) other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_integer("gcd_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      integer_kernel<false>("gcd", in, out[0]);
    })
    .inplace_variant();

FLOW_OP(lcm)
    .schema("lcm(Tensor self, Tensor(strict) other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary | kNonDifferentiable)
    .meta(meta_integer("lcm_cpu"))
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { integer_kernel<true>("lcm", in, out[0]); })
    .inplace_variant();

FLOW_OP(nextafter)
    .schema("nextafter(Tensor self, Tensor(strict) other) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_binary(in, a);
      if (!is_floating(m[0].dtype) || m[0].dtype == DType::BFloat16) not_implemented("nextafter_cpu", m[0].dtype);
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      DType ct = out[0].dtype();
      with_compute_dtype(in, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
        dispatch_floating(ct, "nextafter", [&](auto tag) {
          using T = typename decltype(tag)::type;
          binary_loop<T, T>(o, c[0], c[1], [](auto x, auto y) { return next_after(T(x), T(y)); });
        });
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // PyTorch passes the gradient to self unchanged; other gets zeros
      return {g[0], c.needs(1) ? ops::zeros_like(g[0]) : Tensor()};
    });

}  // namespace flow
