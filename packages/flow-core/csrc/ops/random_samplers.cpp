// Samplers whose output follows a parameter tensor elementwise: poisson(rates), binomial(count, prob) and
// _standard_gamma(alpha) (with its reparameterization gradient). They are rejection samplers that need a
// varying amount of randomness per element, so element i draws from its own Philox sub-stream (counter
// offset + i, sub-counter j = 0, 1, ...): like the fixed-size fills in random.cpp, its value depends only on
// (seed, offset, i), never on the thread count or on what other elements needed. Parameters are read in
// double and each sample computed in double, then rounded to the output dtype.
#include <cmath>
#include <limits>

#include "random.h"
#include "special_math.h"
#include "unary_common.h"

namespace flow {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Element i's uniforms: Philox blocks (offset + i, j) for j = 0, 1, ... The draw reserves n blocks, so the
// counters offset .. offset + n - 1 belong to it alone, with any sub-counter.
class ElementStream {
 public:
  ElementStream(const PhiloxStream& s, int64_t i) : c_(s.offset + static_cast<uint64_t>(i)), seed_(s.seed) {}
  // uniform in (0, 1), open at both ends (so logs and powers need no guard), from 32 random bits: one Philox
  // block serves four draws, which is where these samplers spend their time
  double uniform() {
    if (used_ == 4) {
      block_ = philox4x32_10({uint32_t(c_), uint32_t(c_ >> 32), j_++, 0u}, uint32_t(seed_), uint32_t(seed_ >> 32));
      used_ = 0;
    }
    return (static_cast<double>(block_[used_++]) + 0.5) * (1.0 / 4294967296.0);
  }
  double normal() {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    return r * std::cos(kTwoPi * uniform());
  }

 private:
  uint64_t c_, seed_;
  uint32_t j_ = 0;
  PhiloxBlock block_{};
  int used_ = 4;
};

using special_math::lgamma_d;

// Marsaglia and Tsang's squeeze-and-reject method for alpha >= 1; alpha < 1 via Gamma(alpha + 1) U^(1/alpha).
double sample_gamma(ElementStream& es, double alpha) {
  if (!(alpha > 0)) return 0.0;  // 0, negative, NaN: the caller clamps to the smallest normal, as PyTorch
  if (std::isinf(alpha)) return alpha;
  double boost = 1.0;
  if (alpha < 1) {
    boost = std::pow(es.uniform(), 1.0 / alpha);
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = es.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = es.uniform(), x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v * boost;
  }
}

// Poisson: multiplying uniforms until the product falls below e^-lambda for small rates; Hormann's
// transformed rejection with squeeze (PTRS) from 10 on, whose cost does not grow with the rate.
double sample_poisson(ElementStream& es, double lam) {
  if (lam == 0 || std::isnan(lam) || std::isinf(lam)) return lam;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = es.uniform();
    int64_t k = 0;
    while (prod > limit) {
      prod *= es.uniform();
      ++k;
    }
    return static_cast<double>(k);
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = es.uniform() - 0.5, v = es.uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -lam + k * loglam - lgamma_d(k + 1))
      return k;
  }
}

// Binomial(n, p) for p <= 1/2: waiting times between successes (geometric) while n p < 10, else Hormann's
// BTRS rejection, whose cost does not grow with n.
double binomial_small_p(ElementStream& es, double n, double p) {
  if (n * p < 10) {
    const double log_q = std::log1p(-p);
    double successes = 0, trials = 0;
    for (;;) {
      trials += std::max(1.0, std::ceil(std::log(es.uniform()) / log_q));
      if (trials > n) return successes;
      successes += 1;
    }
  }
  const double q = 1 - p, spq = std::sqrt(n * p * q);
  const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
  const double vr = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, lpq = std::log(p / q);
  const double m = std::floor((n + 1) * p), h = lgamma_d(m + 1) + lgamma_d(n - m + 1);
  for (;;) {
    const double u = es.uniform() - 0.5, v = es.uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > n) continue;
    if (us >= 0.07 && v <= vr) return k;
    if (std::log(v * alpha / (a / (us * us) + b)) <= h - lgamma_d(k + 1) - lgamma_d(n - k + 1) + (k - m) * lpq)
      return k;
  }
}

double sample_binomial(ElementStream& es, double n, double p) {
  if (std::isnan(n) || std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
  if (n <= 0 || p <= 0) return 0.0;
  if (p >= 1) return n;
  return p <= 0.5 ? binomial_small_p(es, n, p) : n - binomial_small_p(es, n, 1 - p);
}

// out[i] = draw(stream(i), a[i], b[i]) with the parameters broadcast to out's shape.
template <typename Stream, typename Draw>
void sample_with(const TensorList& in, const Tensor& out, Stream&& stream, Draw draw) {
  const int64_t n = out.numel();
  TensorList params;
  for (const Tensor& t : in)
    params.push_back(ops::contiguous(ops::to_dtype(ops::expand(t, out.sizes()), DType::Float64)));
  Tensor res = empty(out.sizes(), DType::Float64);
  const double* a = params[0].data<double>();
  const double* b = params.size() > 1 ? params[1].data<double>() : nullptr;
  double* r = res.data<double>();
  parallel_for(n, 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      ElementStream es = stream(i);
      r[i] = draw(es, a[i], b ? b[i] : 0.0);
    }
  });
  ops::copy_into(out, res);
}

// out[i] = draw(stream_i, a[i], b[i]) with the parameters broadcast to out's shape. With a shard window (the
// `shard` attribute, see random.h) out is a block of the logical tensor: element i draws from the sub-stream
// of its logical index, and the whole tensor's streams are reserved.
template <typename Draw>
void sample_kernel(const TensorList& in, const Tensor& out, Generator& gen, const ShardWindow& w, Draw draw) {
  const int64_t n = out.numel();
  if (w.active()) {
    PhiloxStream s = gen.reserve(static_cast<uint64_t>(w.total));
    if (n == 0) return;
    sample_with(in, out, [&](int64_t i) { return ElementStream(s, w.logical_index(out.sizes(), i)); }, draw);
    return;
  }
  if (n == 0) return;
  PhiloxStream s = gen.reserve(static_cast<uint64_t>(n));
  sample_with(in, out, [&](int64_t i) { return ElementStream(s, i); }, draw);
}

std::vector<TensorMeta> meta_float_param(const TensorList& in, const char* kernel) {
  if (!is_floating(in[0].dtype())) fail_not_implemented(kernel, in[0].dtype());
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// The smallest positive normal value of a floating dtype: Gamma samples are clamped to it, as in PyTorch, so
// that their logs stay finite.
double smallest_normal(DType t) {
  return dispatch_floating(t, "_standard_gamma", [](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<acc_t<T>>(std::numeric_limits<T>::min()));
  });
}

}  // namespace

FLOW_OP(poisson)
    .schema("poisson(Tensor self, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta([](const TensorList& in, const Attrs&) { return meta_float_param(in, "poisson_cpu"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Tensor rates = ops::contiguous(ops::to_dtype(in[0], DType::Float64));
      const double* r = rates.data<double>();
      for (int64_t i = 0; i < rates.numel(); ++i)  // checked before any write
        FLOW_RUNTIME_CHECK(!(r[i] < 0), "invalid Poisson rate, expected rate to be non-negative");
      sample_kernel(in, out[0], *generator_attr(a, "generator"), shard_attr(a, out[0], "poisson"),
                    [](ElementStream& es, double lam, double) { return sample_poisson(es, lam); });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor()};  // counts do not move with the rate
    });

FLOW_OP(binomial)
    .schema("binomial(Tensor count, Tensor prob, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom | kBroadcastBinary)
    .meta([](const TensorList& in, const Attrs& a) {
      auto m = meta_binary(in, a);
      if (!is_floating(m[0].dtype)) fail_not_implemented("binomial_cpu", m[0].dtype);
      return m;
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      sample_kernel(in, out[0], *generator_attr(a, "generator"), shard_attr(a, out[0], "binomial"), sample_binomial);
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      fail(ErrorKind::Runtime, "derivative for aten::binomial is not implemented");
    });

FLOW_OP(_standard_gamma)
    .schema("_standard_gamma(Tensor self, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta([](const TensorList& in, const Attrs&) { return meta_float_param(in, "_standard_gamma_cpu"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const double tiny = smallest_normal(out[0].dtype());
      sample_kernel(in, out[0], *generator_attr(a, "generator"), shard_attr(a, out[0], "_standard_gamma"),
                    [tiny](ElementStream& es, double alpha, double) {
        return std::max(sample_gamma(es, alpha), tiny);  // NaN alphas also land on tiny, as in PyTorch
      });
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // implicit reparameterization: d sample / d alpha at a fixed CDF value
      return {ops::mul(g[0], ops::call1("_standard_gamma_grad", {c.input(0), c.output(0)}))};
    });

}  // namespace flow
