// Range-like creation ops computed in C++ (trait kCreation): arange, linspace, logspace, eye. Values follow
// PyTorch's CPU kernels (accumulate type, the two-sided linspace formula) so results match element for element
// where the arithmetic allows. Filled tensors (zeros/ones/full) are empty + fill_ (copy.cpp).
//
// The `shard` attribute (`int[]? shard=None`): the op makes only the block [start, stop) per dim of its
// logical result, given flattened as [start0, stop0, start1, stop1, ...], with the values the whole result has
// there (index i of the block is logical index start + i in every formula). A split global tensor is made so,
// shard by shard, with no rank computing the whole.
#include <cmath>
#include <cstring>
#include <limits>

#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow {
namespace {

// arange's dtype without dtype=: default float if any bound or the step is a float, else int64.
DType arange_dtype(const Attrs& a) {
  if (auto d = a.opt_dtype("dtype")) return *d;
  return (a.s("start").is_float() || a.s("end").is_float() || a.s("step").is_float()) ? default_float_dtype()
                                                                                      : DType::Int64;
}

// The checks and the length of arange in PyTorch's arithmetic: int64 results use integer bounds, others double.
int64_t arange_size(const Attrs& a, DType dt) {
  Scalar start = a.s("start"), end = a.s("end"), step = a.s("step");
  double size_d;
  if (is_floating(dt)) {
    double xs = start.to_double(), xe = end.to_double(), st = step.to_double();
    FLOW_RUNTIME_CHECK(st != 0.0 && !std::isnan(st), "arange: step must be nonzero");
    FLOW_RUNTIME_CHECK(std::isfinite(xs) && std::isfinite(xe), "arange: unsupported range: ", xs, " -> ", xe);
    FLOW_RUNTIME_CHECK((st > 0 && xe >= xs) || (st < 0 && xe <= xs),
                       "arange: upper bound and lower bound inconsistent with step sign");
    size_d = std::ceil((xe - xs) / st);
  } else {
    FLOW_RUNTIME_CHECK(std::isfinite(start.to_double()) && std::isfinite(end.to_double()),
                       "arange: unsupported range: ", start.to_double(), " -> ", end.to_double());
    int64_t xs = start.to_int(), xe = end.to_int(), st = step.to_int();
    FLOW_RUNTIME_CHECK(st != 0, "arange: step must be nonzero");
    FLOW_RUNTIME_CHECK((st > 0 && xe >= xs) || (st < 0 && xe <= xs),
                       "arange: upper bound and lower bound inconsistent with step sign");
    if (dt == DType::Int64) size_d = std::ceil(static_cast<double>(xe - xs) / static_cast<double>(st));
    else size_d = std::ceil((end.to_double() - start.to_double()) / step.to_double());
  }
  FLOW_RUNTIME_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
                     "arange: invalid size, possible overflow?");
  return static_cast<int64_t>(size_d);
}

DType float_or(const Attrs& a, const char* name) { return a.opt_dtype(name).value_or(default_float_dtype()); }

int64_t check_steps(int64_t steps, const char* op) {
  FLOW_RUNTIME_CHECK(steps >= 0, op, ": number of steps must be non-negative");
  return steps;
}

// The block [start, stop) per dim that the `shard` attribute asks for, checked against the logical shape;
// the whole shape when it is None.
std::vector<std::pair<int64_t, int64_t>> shard_block(const Attrs& a, const Shape& logical, const char* op) {
  std::vector<std::pair<int64_t, int64_t>> r;
  const size_t nd = logical.size();
  if (a.none("shard")) {
    for (int64_t n : logical) r.emplace_back(0, n);
    return r;
  }
  const std::vector<int64_t>& v = a.ints("shard");
  FLOW_RUNTIME_CHECK(v.size() == 2 * nd, op, ": shard must hold a start and a stop per dim (", 2 * nd, " ints), got ",
                     v.size());
  for (size_t d = 0; d < nd; ++d) {
    FLOW_RUNTIME_CHECK(0 <= v[2 * d] && v[2 * d] <= v[2 * d + 1] && v[2 * d + 1] <= logical[d], op, ": the shard [",
                       v[2 * d], ", ", v[2 * d + 1], ") of dim ", d, " lies outside its size ", logical[d]);
    r.emplace_back(v[2 * d], v[2 * d + 1]);
  }
  return r;
}

// The shape of the block the `shard` attribute asks for (`whole` when it is None).
Shape block_shape(const Attrs& a, Shape whole, const char* op) {
  if (a.none("shard")) return whole;
  auto b = shard_block(a, whole, op);
  for (size_t d = 0; d < b.size(); ++d) whole[d] = b[d].second - b[d].first;
  return whole;
}

// The first logical index of a 1-D op's block (0 without a shard).
int64_t shard_start(const Attrs& a) { return a.none("shard") ? 0 : a.ints("shard")[0]; }

// logspace's i-th exponent as PyTorch's scalar loop rounds it: product and sum each rounded, never one fused
// multiply-add (which -march=native would otherwise emit, changing the last bit of base ** exponent).
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
double logspace_exponent(double start, double end, double step, int64_t steps, int64_t i) {
  return i < steps / 2 ? start + step * static_cast<double>(i) : end - step * static_cast<double>(steps - i - 1);
}
#pragma GCC pop_options

// f(lo + i) for i in [0, n), written to a contiguous T output in parallel (lo: the block's first logical index).
template <typename T, typename F>
void generate(const Tensor& out, F&& f, int64_t lo = 0) {
  T* p = out.data<T>();
  // omp simd: -O2 leaves this loop scalar. A 32-bit index where it fits: AVX2 converts int32 to float or
  // double a vector at a time, but int64 one element at a time (the step formulas convert the index).
  const bool narrow = lo + out.numel() <= std::numeric_limits<int32_t>::max();
  parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) __attribute__((flatten)) {
    if (narrow) {
      const int32_t b32 = static_cast<int32_t>(b + lo), e32 = static_cast<int32_t>(e + lo),
                    l32 = static_cast<int32_t>(lo);
#pragma omp simd
      for (int32_t i = b32; i < e32; ++i) p[i - l32] = f(i);
    } else {
#pragma omp simd
      for (int64_t i = b + lo; i < e + lo; ++i) p[i - lo] = f(i);
    }
  });
}

}  // namespace

FLOW_OP(arange)
    .schema(
        "arange(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? device=None, "
        "int[]? shard=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      DType dt = arange_dtype(a);
      FLOW_RUNTIME_CHECK(dt != DType::Bool, "arange: not implemented for 'bool'");
      return {{block_shape(a, Shape{arange_size(a, dt)}, "arange"), dt, Device{}}};
    })
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      dispatch_numeric(out[0].dtype(), "arange", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) {
          int64_t s = a.s("start").to_int(), st = a.s("step").to_int();
          generate<T>(out[0], [&](auto i) { return static_cast<T>(s + st * static_cast<int64_t>(i)); }, shard_start(a));
        } else {
          using A = std::conditional_t<std::is_same_v<acc_t<T>, float> && !std::is_same_v<T, float>, float, double>;
          A s = static_cast<A>(a.s("start").to_double()), st = static_cast<A>(a.s("step").to_double());
          generate<T>(out[0], [&](auto i) { return static_cast<T>(s + st * static_cast<A>(i)); }, shard_start(a));
        }
      });
    });

FLOW_OP(linspace)
    .schema(
        "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None, "
        "int[]? shard=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      return {
          {block_shape(a, Shape{check_steps(a.i("steps"), "linspace")}, "linspace"), float_or(a, "dtype"), Device{}}};
    })
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      const int64_t steps = a.i("steps");
      if (out[0].numel() == 0) return;
      dispatch_numeric(out[0].dtype(), "linspace", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;  // PyTorch's step type
        const A start = static_cast<A>(a.s("start").template to<T>()),
                end = static_cast<A>(a.s("end").template to<T>());
        if (steps == 1) {
          out[0].data<T>()[0] = static_cast<T>(start);
          return;
        }
        const A step = (end - start) / static_cast<A>(steps - 1);
        const int64_t half = steps / 2;
        generate<T>(out[0], [&](auto i) {
          using I = decltype(i);  // the mirrored index stays in the narrow type, so it converts as a vector
          return static_cast<T>(i < half ? start + step * static_cast<A>(i)
                                         : end - step * static_cast<A>(static_cast<I>(steps - i - 1)));
        }, shard_start(a));
      });
    });

FLOW_OP(logspace)
    .schema(
        "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ScalarType? dtype=None, "
        "Device? device=None, int[]? shard=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      return {
          {block_shape(a, Shape{check_steps(a.i("steps"), "logspace")}, "logspace"), float_or(a, "dtype"), Device{}}};
    })
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      const int64_t steps = a.i("steps");
      const double base = a.f("base");
      if (out[0].numel() == 0) return;
      dispatch_numeric(out[0].dtype(), "logspace", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (steps == 1) {
          out[0].data<T>()[0] = static_cast<T>(std::pow(base, a.s("start").to_double()));
          return;
        }
        // PyTorch: bounds (and a floating result's bound difference) rounded to T, step and exponents in double,
        // std::pow in double (never a vectorised pow, whose last bit can differ), a reduced result rounded
        // through float.
        using A = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;
        const T ts = a.s("start").template to<T>(), te = a.s("end").template to<T>();
        const double start = static_cast<double>(ts), end = static_cast<double>(te);
        const T diff_t = static_cast<T>(static_cast<A>(te) - static_cast<A>(ts));
        const double diff = std::is_integral_v<T> ? end - start : static_cast<double>(diff_t);
        const double step = diff / static_cast<double>(steps - 1);
        T* p = out[0].template data<T>();
        const int64_t lo = shard_start(a);
        parallel_for(out[0].numel(), kParallelGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i)
            p[i] = static_cast<T>(static_cast<A>(std::pow(base, logspace_exponent(start, end, step, steps, i + lo))));
        });
      });
    });

FLOW_OP(eye)
    .schema("eye(int n, int? m=None, *, ScalarType? dtype=None, Device? device=None, int[]? shard=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      int64_t n = a.i("n"), m = a.opt_i("m").value_or(n);
      FLOW_RUNTIME_CHECK(n >= 0, "eye: n must be greater or equal to 0, got ", n);
      FLOW_RUNTIME_CHECK(m >= 0, "eye: m must be greater or equal to 0, got ", m);
      return {{block_shape(a, Shape{n, m}, "eye"), float_or(a, "dtype"), Device{}}};
    })
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      const Tensor& o = out[0];
      if (o.numel() == 0) return;
      std::memset(o.raw_data(), 0, o.numel() * o.itemsize());
      // the diagonal entries (i, i) inside the block [r0, r1) x [c0, c1): rows and columns both in range
      int64_t r0 = 0, r1 = o.size(0), c0 = 0, c1 = o.size(1);
      if (!a.none("shard")) {
        const auto& v = a.ints("shard");  // checked by the meta function
        r0 = v[0], r1 = v[1], c0 = v[2], c1 = v[3];
      }
      const int64_t cols = o.size(1), first = std::max(r0, c0), last = std::min(r1, c1);
      dispatch_all(o.dtype(), "eye", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = o.data<T>();
        for (int64_t i = first; i < last; ++i) p[(i - r0) * cols + (i - c0)] = static_cast<T>(1);
      });
    });

}  // namespace flow
