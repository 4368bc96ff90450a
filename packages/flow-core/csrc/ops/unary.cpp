// Elementwise unary math. Each op: one functor for the forward, its backward written with registered ops
// (so double backward works). Integer inputs promote to the default float dtype for the transcendental
// ops; abs/sign/floor/ceil/round/trunc/square/neg keep integer dtypes, as in PyTorch.
// Ternaries on floats block vectorisation while FP-exception flags must be preserved (GCC's default
// -ftrapping-math; clang defaults to off); we never read those flags. O2: the extension is built with -Os
// (nanobind's default), whose inlining limits keep the functors below out of the vectorised loops.
#pragma GCC optimize("O2", "no-trapping-math")
#include <cmath>

#include "unary_vec.h"

namespace flow {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kPi = 3.14159265358979323846;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double k2OverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtPiOver2 = 0.88622692545275801365;

// erfinv: Giles' single-precision rational start, refined by two Newton steps on erf (double precision).
inline double erfinv_d(double y) {
  if (!(y > -1.0 && y < 1.0)) {
    if (y == 1.0) return std::numeric_limits<double>::infinity();
    if (y == -1.0) return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int k = 0; k < 2; ++k) x -= (std::erf(x) - y) / (k2OverSqrtPi * std::exp(-x * x));
  return x;
}

template <typename A>
A erfinv_t(A y) {
  return static_cast<A>(erfinv_d(static_cast<double>(y)));
}

// PyTorch's round(decimals): half-to-even at 10^-decimals.
template <typename A>
A round_decimals(A x, int64_t decimals, A ten_pow) {
  if (decimals == 0) return std::nearbyint(x);
  if (decimals > 0) return std::nearbyint(x * ten_pow) / ten_pow;
  return std::nearbyint(x / ten_pow) * ten_pow;
}

}  // namespace

#define FLOW_UNARY_FLOAT_OP(NAME, EXPR, SAVE_IN, SAVE_OUT, GRAD)               \
  FLOW_OP(NAME)                                                                \
      .schema(#NAME "(Tensor self) -> Tensor")                                 \
      .traits(kElementwise | kUnary)                                           \
      .meta(meta_unary_float)                                                  \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) { \
    unary_float_kernel(#NAME, in[0], out[0], [](auto tag) {                    \
      using A = acc_t<typename decltype(tag)::type>;                           \
      return [](A x) FLOW_VEC_LAMBDA -> A { return EXPR; };                    \
    });                                                                        \
  })                                                                           \
      .save_inputs(SAVE_IN)                                                    \
      .save_outputs(SAVE_OUT)                                                  \
      .inplace_variant()                                                       \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {GRAD}; });

#define FLOW_NOSAVE \
  std::vector<int> {}
#define FLOW_SAVE0 std::vector<int>{0}
#define X c.input(0)
#define Y c.output(0)
#define G g[0]

// exp of float32 runs the vectorised polynomial; the other dtypes use libm.
FLOW_OP(exp)
    .schema("exp(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      if (in[0].dtype() == DType::Float32 && out[0].dtype() == DType::Float32)
        return simd_unary<float>(out[0], in[0], [](float x) { return vec::exp_f32(x); });
      unary_float_kernel("exp", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return std::exp(x); };
      });
    })
    .save_outputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {ops::mul(G, Y)}; });

FLOW_UNARY_FLOAT_OP(log, vlog<A>(x), FLOW_SAVE0, FLOW_NOSAVE, ops::div(G, X))
FLOW_UNARY_FLOAT_OP(exp2, std::exp2(x), FLOW_NOSAVE, FLOW_SAVE0, ops::mul(ops::mul(G, Y), Scalar(kLn2)))
FLOW_UNARY_FLOAT_OP(expm1, std::expm1(x), FLOW_NOSAVE, FLOW_SAVE0, ops::mul(G, ops::add(Y, Scalar(int64_t(1)))))
FLOW_UNARY_FLOAT_OP(log2, std::log2(x), FLOW_SAVE0, FLOW_NOSAVE, ops::div(G, ops::mul(X, Scalar(kLn2))))
FLOW_UNARY_FLOAT_OP(log10, std::log10(x), FLOW_SAVE0, FLOW_NOSAVE, ops::div(G, ops::mul(X, Scalar(kLn10))))
FLOW_UNARY_FLOAT_OP(log1p, std::log1p(x), FLOW_SAVE0, FLOW_NOSAVE, ops::div(G, ops::add(X, Scalar(int64_t(1)))))
FLOW_UNARY_FLOAT_OP(sqrt, std::sqrt(x), FLOW_NOSAVE, FLOW_SAVE0, ops::div(G, ops::mul(Y, Scalar(int64_t(2)))))
FLOW_UNARY_FLOAT_OP(rsqrt, A(1) / std::sqrt(x), FLOW_NOSAVE, FLOW_SAVE0,
                    ops::mul(ops::mul(G, ops::mul(ops::square(Y), Y)), Scalar(-0.5)))
FLOW_UNARY_FLOAT_OP(reciprocal, A(1) / x, FLOW_NOSAVE, FLOW_SAVE0, ops::mul(ops::neg(G), ops::square(Y)))
FLOW_UNARY_FLOAT_OP(sin, std::sin(x), FLOW_SAVE0, FLOW_NOSAVE, ops::mul(G, ops::unary("cos", X)))
FLOW_UNARY_FLOAT_OP(cos, std::cos(x), FLOW_SAVE0, FLOW_NOSAVE, ops::mul(G, ops::neg(ops::unary("sin", X))))
FLOW_UNARY_FLOAT_OP(tan, std::tan(x), FLOW_NOSAVE, FLOW_SAVE0,
                    ops::mul(G, ops::add(ops::square(Y), Scalar(int64_t(1)))))
FLOW_UNARY_FLOAT_OP(asin, std::asin(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::mul(G, ops::rsqrt(ops::rsub(Scalar(int64_t(1)), ops::square(X)))))
FLOW_UNARY_FLOAT_OP(acos, std::acos(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::neg(ops::mul(G, ops::rsqrt(ops::rsub(Scalar(int64_t(1)), ops::square(X))))))
FLOW_UNARY_FLOAT_OP(atan, std::atan(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::div(G, ops::add(ops::square(X), Scalar(int64_t(1)))))
FLOW_UNARY_FLOAT_OP(sinh, std::sinh(x), FLOW_SAVE0, FLOW_NOSAVE, ops::mul(G, ops::unary("cosh", X)))
FLOW_UNARY_FLOAT_OP(cosh, std::cosh(x), FLOW_SAVE0, FLOW_NOSAVE, ops::mul(G, ops::unary("sinh", X)))
FLOW_UNARY_FLOAT_OP(asinh, std::asinh(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::mul(G, ops::rsqrt(ops::add(ops::square(X), Scalar(int64_t(1))))))
FLOW_UNARY_FLOAT_OP(acosh, std::acosh(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::mul(G, ops::rsqrt(ops::add(ops::square(X), Scalar(int64_t(-1))))))
FLOW_UNARY_FLOAT_OP(atanh, std::atanh(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::div(G, ops::rsub(Scalar(int64_t(1)), ops::square(X))))
FLOW_UNARY_FLOAT_OP(erf, verf<A>(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::mul(G, ops::mul(ops::exp(ops::neg(ops::square(X))), Scalar(k2OverSqrtPi))))
FLOW_UNARY_FLOAT_OP(erfc, std::erfc(x), FLOW_SAVE0, FLOW_NOSAVE,
                    ops::mul(G, ops::mul(ops::exp(ops::neg(ops::square(X))), Scalar(-k2OverSqrtPi))))
FLOW_UNARY_FLOAT_OP(erfinv, erfinv_t(x), FLOW_NOSAVE, FLOW_SAVE0,
                    ops::mul(G, ops::mul(ops::exp(ops::square(Y)), Scalar(kSqrtPiOver2))))

// frac is float-only in PyTorch (no promotion).
FLOW_OP(frac)
    .schema("frac(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs&) { return meta_float_only(in, "frac_cpu"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      unary_float_kernel("frac", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return x - std::trunc(x); };
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {G}; });

// The argument of a real number: pi below zero, else 0 (NaN stays NaN). Integer and bool inputs give the default
// float dtype, as PyTorch's. Piecewise constant, so its gradient is zero (not g * 0, which would pass NaNs on).
FLOW_OP(angle)
    .schema("angle(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      unary_float_kernel("angle", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return x < A(0) ? A(kPi) : (x == x ? A(0) : x); };
      });
    })
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::zeros_like(g[0])}; });

// ---- ops that keep integer dtypes ---------------------------------------------------------------------

FLOW_OP(neg)
    .schema("neg(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(in[0].dtype() != DType::Bool,
                         "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                         "a mask, use the `~` or `logical_not()` operator instead.");
      return meta_unary_same(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      FLOW_RUNTIME_CHECK(in[0].dtype() != DType::Bool,
                         "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                         "a mask, use the `~` or `logical_not()` operator instead.");
      unary_numeric_kernel("neg", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return static_cast<A>(-x); };
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::neg(G)}; });

FLOW_OP(abs)
    .schema("abs(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs&) { return meta_numeric_only(in, "abs_cpu"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      unary_numeric_kernel("abs", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        if constexpr (std::is_unsigned_v<A>) return [](A x) -> A { return x; };
        else if constexpr (std::is_integral_v<A>) return [](A x) -> A { return static_cast<A>(x < 0 ? -x : x); };
        else return [](A x) -> A { return std::abs(x); };
      });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList { return {ops::mul(G, ops::sign(X))}; });

// sign: -1/0/1 (NaN gives 0, like PyTorch); bool stays bool.
FLOW_OP(sign)
    .schema("sign(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_same)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      DType ct = out[0].dtype();
      with_compute_dtype({in[0]}, out[0], ct, ct, [&](const Tensor& o, const TensorList& cin) {
        dispatch_all(ct, "sign", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = acc_t<T>;
          if constexpr (std::is_same_v<A, bool>) unary_loop<T, T>(o, cin[0], [](A x) -> A { return x; });
          else unary_loop<T, T>(o, cin[0], [](A x) -> A { return static_cast<A>((A(0) < x) - (x < A(0))); });
        });
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::zeros_like(G)}; });

#define FLOW_ROUNDING_OP(NAME, KERNEL_NAME, FN)                                                    \
  FLOW_OP(NAME)                                                                                    \
      .schema(#NAME "(Tensor self) -> Tensor")                                                     \
      .traits(kElementwise | kUnary)                                                               \
      .meta([](const TensorList& in, const Attrs&) { return meta_numeric_only(in, KERNEL_NAME); }) \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {                     \
    unary_numeric_kernel(#NAME, in[0], out[0], [](auto tag) {                                      \
      using A = acc_t<typename decltype(tag)::type>;                                               \
      if constexpr (std::is_integral_v<A>) return [](A x) -> A { return x; };                      \
      else return [](A x) -> A { return FN(x); };                                                  \
    });                                                                                            \
  })                                                                                               \
      .inplace_variant()                                                                           \
      .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::zeros_like(G)}; });

FLOW_ROUNDING_OP(floor, "floor_vml_cpu", std::floor)
FLOW_ROUNDING_OP(ceil, "ceil_vml_cpu", std::ceil)
FLOW_ROUNDING_OP(trunc, "trunc_vml_cpu", std::trunc)

FLOW_OP(round)
    .schema("round(Tensor self, *, int decimals=0) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) {
      if (a.i("decimals") != 0 && !is_floating(in[0].dtype())) fail_not_implemented("round_cpu", in[0].dtype());
      return meta_numeric_only(in, "round_vml_cpu");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t decimals = a.i("decimals");
      unary_numeric_kernel("round", in[0], out[0], [decimals](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        if constexpr (std::is_integral_v<A>) {
          return [](A x) -> A { return x; };
        } else {
          A ten_pow = static_cast<A>(std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals)));
          return [decimals, ten_pow](A x) -> A { return round_decimals(x, decimals, ten_pow); };
        }
      });
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::zeros_like(G)}; });

// square: x * x; bool squares to int64 as in PyTorch (pow(bool, 2)).
FLOW_OP(square)
    .schema("square(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs&) {
      DType d = in[0].dtype() == DType::Bool ? DType::Int64 : in[0].dtype();
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      unary_numeric_kernel("square", in[0], out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A x) -> A { return static_cast<A>(x * x); };
      });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(G, ops::mul(X, Scalar(int64_t(2))))};
    });

#undef X
#undef Y
#undef G

}  // namespace flow
