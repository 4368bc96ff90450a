// The incomplete gamma functions (series below the bulk, Legendre's continued fraction above it), the
// implicit-reparameterization gradient of Gamma samples, the modified Bessel functions I0 and I1 (power
// series, then Hankel's asymptotic expansion), the normal quantile (a rational start refined by Halley
// steps) and the scaled complementary error function (direct, then a continued fraction).
#include <cmath>
#include <limits>

#include "special_math.h"

namespace flow::special_math {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Summation stops once a term no longer changes the sum; the cap only guards against a runaway loop (the
// series needs about 9 * sqrt(a) terms where x is near a, so a cap this size serves a up to ~1e8).
constexpr double kTermTol = 1e-17;
constexpr int kMaxTerms = 100000;

// lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), Stirling's series' remainder, for a >= 10 (where the
// terms kept leave an error near 2e-14 at a = 10, shrinking as a^-11).
double stirling_remainder(double a) {
  const double r = 1 / a, r2 = r * r;
  return r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 / 1188))));
}

// log(x^a e^-x / Gamma(a)): the common factor of both expansions, kept in logs so large a does not overflow.
// For large a the direct form subtracts terms near a log a, losing a * 1e-16 absolutely (1e-9 relative
// error at a = 1e7); written around x = a, as -a (t - log1p(t)) + log(a / (2 pi)) / 2 - remainder with
// t = (x - a) / a, the large terms cancel analytically instead.
double log_prefactor(double a, double x) {
  if (a < 10) return a * std::log(x) - x - lgamma_d(a);
  const double t = (x - a) / a;
  return -a * (t - std::log1p(t)) + 0.5 * std::log(a / (2 * kPi)) - stirling_remainder(a);
}

// P(a, x) = x^a e^-x / Gamma(a) * sum_n x^n / (a (a + 1) ... (a + n)): all terms positive, fast for x < a + 1.
double lower_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < kMaxTerms; ++n) {
    term *= x / (a + n);
    sum += term;
    if (term <= sum * kTermTol) break;
  }
  return sum * std::exp(log_prefactor(a, x));
}

// Q(a, x) by the continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))),
// evaluated top-down (modified Lentz), fast for x >= a + 1.
double upper_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxTerms; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return h * std::exp(log_prefactor(a, x));
}

}  // namespace

double igamma(double a, double x, bool upper) {
  const double one = upper ? 0.0 : 1.0, zero = upper ? 1.0 : 0.0;  // the values where P is 1 and 0
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? one : kNaN;
  if (x == 0) return zero;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : zero;
  if (std::isinf(x)) return one;
  // Each side computes the smaller of P and Q directly, so the other is 1 - (small) without cancellation.
  if (x < a + 1) {
    const double p = lower_series(a, x);
    return upper ? 1 - p : p;
  }
  const double q = upper_fraction(a, x);
  return upper ? q : 1 - q;
}

double standard_gamma_grad(double alpha, double x) {
  if (std::isnan(alpha) || std::isnan(x) || !(alpha > 0) || std::isinf(alpha) || std::isinf(x)) return kNaN;
  if (x <= 0) return 0.0;  // an underflowed sample: x ~ (u Gamma(alpha + 1))^(1 / alpha) flattens in alpha
  // dP/dalpha by a central difference of the double-precision P (or Q past the bulk, where P rounds to 1).
  // P varies in alpha on the scale of min(alpha, sqrt(alpha)); a step 1e-5 of that balances the
  // difference's truncation and rounding errors near 1e-10, far below float32's resolution.
  const bool upper = x > alpha + 1;
  const double h = 1e-5 * (alpha < 1 ? alpha : std::sqrt(alpha));
  double dp = (igamma(alpha + h, x, upper) - igamma(alpha - h, x, upper)) / (2 * h);
  if (upper) dp = -dp;
  // dP/dx is the Gamma density; divide by it in logs so a density near the double range's ends stays exact
  const double log_pdf = (alpha - 1) * std::log(x) - x - lgamma_d(alpha);
  return -dp * std::exp(-log_pdf);
}

double bessel_i(int order, double x, bool scaled) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  double r;
  if (ax <= 20) {
    // sum_k (x/2)^(2k + order) / (k! (k + order)!): positive terms, accurate to a few ulps
    const double q = 0.25 * x * x;
    double term = order == 0 ? 1.0 : 0.5 * ax, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= q / (k * (k + order));
      sum += term;
      if (term <= sum * kTermTol) break;
    }
    r = scaled ? sum * std::exp(-ax) : sum;
  } else {
    // I(x) ~ e^x / sqrt(2 pi x) * sum_k t_k with t_k = t_(k-1) ((2k - 1)^2 - 4 order^2) / (8 k x); past 20
    // its smallest term is below 1e-18, so it is summed until then (or until terms stop shrinking)
    const double mu = 4.0 * order * order;
    double term = 1, sum = 1;
    for (int k = 1; k < 100; ++k) {
      const double next = term * ((2.0 * k - 1) * (2.0 * k - 1) - mu) / (8.0 * k * ax);
      if (std::fabs(next) >= std::fabs(term)) break;
      term = next;
      sum += term;
      if (std::fabs(term) <= std::fabs(sum) * kTermTol) break;
    }
    const double log_scale = -0.5 * std::log(2 * kPi * ax);
    // e^x / sqrt(2 pi x) as one exp: I0 stays finite a little past where e^x alone overflows
    r = sum * std::exp(scaled ? log_scale : ax + log_scale);
  }
  return order == 1 && x < 0 ? -r : r;
}

double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) return 2 * std::exp(x * x) - erfcx(-x);  // erfc(-x) = 2 - erfc(x); overflows to inf past -26.6
  if (x < 2) return std::exp(x * x) * std::erfc(x);
  // sqrt(pi) erfcx(x) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), evaluated bottom-up: this depth
  // reaches double precision from x = 2 (80 levels) and converges faster as x grows
  const int depth = x < 3 ? 80 : x < 5 ? 40 : 20;
  double t = 0;
  for (int k = depth; k > 0; --k) t = 0.5 * k / (x + t);
  return 1 / (std::sqrt(kPi) * (x + t));
}

double orthogonal_polynomial(int kind, double x, double nd) {
  if (std::isnan(x) || std::isnan(nd)) return kNaN;
  const double nt = std::trunc(nd);
  if (nt < 0) return 0.0;
  if (nt == 0) return 1.0;
  if (kind >= 4 && kind <= 7) {  // shifted Chebyshev: the plain ones at 2x - 1
    kind -= 4;
    x = 2 * x - 1;
  }
  if (kind <= 3 && std::fabs(x) < 1 && nt > 6) {
    // Chebyshev polynomials inside (-1, 1) in closed trigonometric form: O(1) for any degree
    const double th = std::acos(x);
    switch (kind) {
      case 0: return std::cos(nt * th);
      case 1: return std::sin((nt + 1) * th) / std::sin(th);
      case 2: return std::cos((nt + 0.5) * th) / std::cos(0.5 * th);
      default: return std::sin((nt + 0.5) * th) / std::sin(0.5 * th);
    }
  }
  const int64_t n = static_cast<int64_t>(nt);
  // p0 = P_0, p1 = P_1, then the three-term recurrence of each family (O(n) steps)
  double p0 = 1, p1;
  switch (kind) {
    case 0: p1 = x; break;
    case 1: p1 = 2 * x; break;
    case 2: p1 = 2 * x - 1; break;
    case 3: p1 = 2 * x + 1; break;
    case 8: p1 = 2 * x; break;
    case 9: p1 = x; break;
    case 10: p1 = 1 - x; break;
    default: p1 = x; break;
  }
  for (int64_t k = 1; k < n; ++k) {
    const double kd = static_cast<double>(k);
    double next;
    switch (kind) {
      case 8: next = 2 * x * p1 - 2 * kd * p0; break;
      case 9: next = x * p1 - kd * p0; break;
      case 10: next = ((2 * kd + 1 - x) * p1 - kd * p0) / (kd + 1); break;
      case 11: next = ((2 * kd + 1) * x * p1 - kd * p0) / (kd + 1); break;
      default: next = 2 * x * p1 - p0; break;
    }
    p0 = p1;
    p1 = next;
  }
  return p1;
}

double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  // Work in the lower half, where the quantile is <= 0 (1 - p is exact for p >= 0.5).
  const bool upper = p > 0.5;
  const double q = upper ? 1 - p : p;
  // Abramowitz & Stegun 26.2.23 (error below 4.5e-4) as the start...
  const double t = std::sqrt(-2 * std::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  // ...then Halley steps on Phi(x) = q, whose convergence is cubic. The step needs (Phi(x) - q) / phi(x),
  // which is sqrt(2 pi) (erfcx(-x / sqrt 2) / 2 - q e^(x^2 / 2)) without Phi or phi under- or overflowing.
  const double sqrt_2pi = std::sqrt(2 * kPi);
  for (int i = 0; i < 4; ++i) {
    const double u = sqrt_2pi * (0.5 * erfcx(-x / std::sqrt(2.0)) - std::exp(std::log(q) + 0.5 * x * x));
    x -= u / (1 + 0.5 * x * u);
  }
  return upper ? -x : x;
}

}  // namespace flow::special_math
