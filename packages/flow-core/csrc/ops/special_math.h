// Scalar special functions in double precision, shared by the elementwise ops that evaluate them
// (unary_gamma.cpp: the log-gamma family; special.cpp: incomplete gamma, Bessel I, ndtri, erfcx, zeta).
// Every function takes and returns IEEE values with PyTorch's special cases (NaN outside the domain, the
// limits at the domain's ends) and never raises.
#pragma once
#include <cstdint>

namespace flow::special_math {

inline constexpr double kPi = 3.14159265358979323846;

double lgamma_d(double x);
double digamma_d(double x);
// The Hurwitz zeta function sum_{k>=0} (k + q)^-x.
double hurwitz_zeta(double x, double q);

// The regularized incomplete gamma functions: P(a, x) (upper false) or Q(a, x) = 1 - P(a, x).
double igamma(double a, double x, bool upper);
// d sample / d alpha of a standard Gamma(alpha) sample x: the implicit reparameterization gradient
// -(dP/dalpha) / (dP/dx) at (alpha, x).
double standard_gamma_grad(double alpha, double x);

// The modified Bessel functions of the first kind I0 (order 0) and I1 (order 1); with scaled,
// exp(-|x|) * I(x), which stays finite where I overflows.
double bessel_i(int order, double x, bool scaled);

// The inverse of the standard normal CDF.
double ndtri(double p);
// The scaled complementary error function exp(x^2) * erfc(x).
double erfcx(double x);

// The orthogonal polynomial of `kind` and degree n (truncated toward zero; 0 for n < 0) at x. Kinds:
// 0-3 Chebyshev T, U, V, W; 4-7 the shifted Chebyshev T*, U*, V*, W* (of 2x - 1); 8 Hermite H (physicists');
// 9 Hermite He (probabilists'); 10 Laguerre L; 11 Legendre P.
double orthogonal_polynomial(int kind, double x, double n);

}  // namespace flow::special_math
