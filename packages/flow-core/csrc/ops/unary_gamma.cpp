// The log-gamma function and its derivatives: lgamma, digamma (psi) and polygamma(n, x), with PyTorch's
// special values (digamma(+-0) = -+inf, NaN at negative integers). digamma and trigamma follow the Cephes
// series (recurrence up to 10, then the asymptotic expansion; reflection below 0 / 0.5); higher orders use
// (-1)^(n+1) n! zeta(n + 1, x) with Cephes' Hurwitz zeta (Euler-Maclaurin summation).
#include <cmath>
#include <limits>

#include "special_math.h"
#include "unary_common.h"

namespace flow {
namespace special_math {

double lgamma_d(double x) {
  int sign;
  return ::lgamma_r(x, &sign);  // the reentrant form: std::lgamma writes the global signgam
}

double digamma_d(double x) {
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    double q, r = std::modf(x, &q);
    return digamma_d(1 - x) - kPi / std::tan(kPi * r);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  static const double A[] = {8.33333333333333333333E-2,  -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                             -4.16666666666666666667E-3, 3.96825396825396825397E-3,  -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x), p = A[0];
    for (int i = 1; i < 7; ++i) p = p * z + A[i];
    y = z * p;
  }
  return result + std::log(x) - 0.5 / x - y;
}

double hurwitz_zeta(double x, double q) {
  const double machep = 1.11022302462515654042E-16;
  static const double A[] = {12.0,
                             -720.0,
                             30240.0,
                             -1209600.0,
                             47900160.0,
                             -1.8924375803183791606e9,
                             7.47242496e10,
                             -2.950130727918164224e12,
                             1.1646782814350067249e14,
                             -4.5979787224074726105e15,
                             1.8152105401943546773e17,
                             -7.1661652561756670113e18};
  if (x == 1) return std::numeric_limits<double>::infinity();
  if (x < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (x != std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  }
  double s = std::pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -x);
    s += b;
    if (std::fabs(b / s) < machep) return s;
  }
  const double w = a;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  a = 1;
  double k = 0;
  for (int j = 0; j < 12; ++j) {
    a *= x + k;
    b /= w;
    double t = a * b / A[j];
    s += t;
    if (std::fabs(t / s) < machep) return s;
    k += 1;
    a *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}

}  // namespace special_math

namespace {

using special_math::digamma_d;
using special_math::hurwitz_zeta;
using special_math::kPi;
using special_math::lgamma_d;

double trigamma_d(double x) {
  double sign = 1, result = 0;
  if (x < 0.5) {
    sign = -1;
    const double s = std::sin(kPi * x);
    result -= kPi * kPi / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  const double ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x;
  return sign * result;
}

double polygamma_d(int64_t n, double x) {
  if (n == 0) return digamma_d(x);
  if (n == 1) return trigamma_d(x);
  return ((n % 2) ? 1.0 : -1.0) * std::exp(lgamma_d(n + 1.0)) * hurwitz_zeta(n + 1.0, x);
}

template <typename F>
void gamma_kernel(const char* name, const Tensor& in, const Tensor& out, F f) {
  unary_float_kernel(name, in, out, [f](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    return [f](A x) -> A { return static_cast<A>(f(static_cast<double>(x))); };
  });
}

}  // namespace

FLOW_OP(lgamma)
    .schema("lgamma(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      gamma_kernel("lgamma", in[0], out[0], lgamma_d);
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], ops::call1("digamma", {c.input(0)}))};
    });

FLOW_OP(digamma)
    .schema("digamma(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_float)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      // a lambda, not the function pointer: inlined into the kernel variant, as polygamma(0, x)'s call is
      gamma_kernel("digamma", in[0], out[0], [](double x) { return digamma_d(x); });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], ops::call1("_polygamma", {c.input(0)}, {int64_t(1)}))};
    });

FLOW_OP(_polygamma)
    .schema("_polygamma(Tensor self, int n) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs& a) {
      FLOW_RUNTIME_CHECK(a.i("n") >= 0, "polygamma(n, x) does not support negative n.");
      return meta_unary_float(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const int64_t n = a.i("n");
      gamma_kernel("polygamma", in[0], out[0], [n](double x) { return polygamma_d(n, x); });
    })
    .save_inputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], ops::call1("_polygamma", {c.input(0)}, {c.attrs.i("n") + 1}))};
    });

}  // namespace flow
