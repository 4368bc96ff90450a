// Fused backward ops of the activations (trait kBackwardHelper, hidden from Python): one kernel computes
// grad * f'(x) so that training runs one pass per activation. Each has a backward of its own (written with
// registered ops), so double backward works. Comparisons follow PyTorch's kernels, NaN handling included.
// Ternaries on floats block vectorisation while FP-exception flags must be preserved (GCC's default
// -ftrapping-math; clang defaults to off); we never read those flags. O2: the extension is built with -Os
// (nanobind's default), whose inlining limits keep the functors below out of the vectorised loops.
#pragma GCC optimize("O2", "no-trapping-math")
#include "activation.h"

namespace flow {
namespace {

constexpr uint64_t kHelper = kElementwise | kBackwardHelper;

// For helpers linear in grad whose factor is piecewise constant in x: d/dgrad is the helper itself applied
// to the incoming gradient, d/dx is zero.
TensorList mask_helper_backward(const char* name, BackwardCtx& c, const TensorList& g) {
  return {c.needs(0) ? ops::call1(name, {g[0], c.input(1)}, c.attrs.values) : Tensor(),
          c.needs(1) ? ops::zeros_like(c.input(1)) : Tensor()};
}

template <typename A>
A bound(const Attrs& a, const char* name, double if_none) {
  return static_cast<A>(a.none(name) ? if_none : a.f(name));
}

}  // namespace

#define FLOW_MASK_HELPER(NAME, SCHEMA, ...)                                      \
  FLOW_OP(NAME)                                                                  \
      .schema(SCHEMA)                                                            \
      .traits(kHelper)                                                           \
      .meta(meta_grad_helper)                                                    \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { \
    grad_kernel(#NAME, in, out[0], [&a](auto tag) {                              \
      using A = acc_t<typename decltype(tag)::type>;                             \
      __VA_ARGS__                                                                \
    });                                                                          \
  })                                                                             \
      .save_inputs({1})                                                          \
      .backward([](BackwardCtx& c, const TensorList& g) { return mask_helper_backward(#NAME, c, g); });

// relu (on its output, threshold 0) and threshold: grad where x > threshold (NaN passes).
FLOW_MASK_HELPER(threshold_backward, "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
                 const A th = bound<A>(a, "threshold", 0.0);
                 return [th](A g, A x) -> A { return x <= th ? A(0) : g; };)
// hardtanh, relu6: grad strictly inside (min_val, max_val).
FLOW_MASK_HELPER(hardtanh_backward,
                 "hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor",
                 const A lo = bound<A>(a, "min_val", 0.0);
                 const A hi = bound<A>(a, "max_val", 0.0);
                 return [lo, hi](A g, A x) -> A { return ((x <= lo) | (x >= hi)) ? A(0) : g; };)
// clamp: grad where min <= x <= max (a missing bound is unbounded; NaN gets 0).
FLOW_MASK_HELPER(clamp_backward, "clamp_backward(Tensor grad_output, Tensor self, Scalar? min, Scalar? max) -> Tensor",
                 const A lo = bound<A>(a, "min", -std::numeric_limits<double>::infinity());
                 const A hi = bound<A>(a, "max", std::numeric_limits<double>::infinity());
                 return [lo, hi](A g, A x) -> A { return ((x >= lo) & (x <= hi)) ? g : A(0); };)
FLOW_MASK_HELPER(leaky_relu_backward,
                 "leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope) -> Tensor",
                 const A s = bound<A>(a, "negative_slope", 0.0);
                 return [s](A g, A x) -> A { return x > A(0) ? g : g * s; };)
// hardshrink and softshrink: zero on [-lambd, lambd].
FLOW_MASK_HELPER(hardshrink_backward, "hardshrink_backward(Tensor grad_out, Tensor self, Scalar lambd) -> Tensor",
                 const A l = bound<A>(a, "lambd", 0.0);
                 return [l](A g, A x) -> A { return ((x >= -l) & (x <= l)) ? A(0) : g; };)
FLOW_MASK_HELPER(hardsigmoid_backward, "hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor", (void)a;
                 return [](A g, A x) -> A { return ((x > A(-3)) & (x < A(3))) ? g / A(6) : A(0); };)

// grad * y * (1 - y) with y = sigmoid(x).
FLOW_OP(sigmoid_backward)
    .schema("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      grad_kernel("sigmoid_backward", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A g, A y) -> A { return g * (A(1) - y) * y; };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], y = c.input(1);
      return {c.needs(0) ? ops::sigmoid_backward(gg, y) : Tensor(),
              c.needs(1) ? ops::mul(ops::mul(gg, c.input(0)), ops::rsub(1, ops::mul(y, 2))) : Tensor()};
    });

// grad * (1 - y^2) with y = tanh(x).
FLOW_OP(tanh_backward)
    .schema("tanh_backward(Tensor grad_output, Tensor output) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      grad_kernel("tanh_backward", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A g, A y) -> A { return g * (A(1) - y * y); };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], y = c.input(1);
      return {c.needs(0) ? ops::tanh_backward(gg, y) : Tensor(),
              c.needs(1) ? ops::mul(ops::mul(gg, c.input(0)), ops::mul(y, -2)) : Tensor()};
    });

// silu'(x) = s * (1 + x * (1 - s)), s = sigmoid(x); silu''(x) = s (1 - s) (2 + x (1 - 2 s)).
FLOW_OP(silu_backward)
    .schema("silu_backward(Tensor grad_output, Tensor self) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      grad_kernel("silu_backward", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A g, A x) __attribute__((always_inline)) -> A {
          A s = vsigmoid<A>(x);
          return g * s * (A(1) + x * (A(1) - s));
        };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], x = c.input(1);
      Tensor gx;
      if (c.needs(1)) {
        Tensor s = ops::sigmoid(x);
        Tensor ds = ops::sigmoid_backward(ops::mul(gg, c.input(0)), s);  // gg * g * s (1 - s)
        gx = ops::mul(ds, ops::add(ops::mul(x, ops::rsub(1, ops::mul(s, 2))), Scalar(int64_t(2))));
      }
      return {c.needs(0) ? ops::silu_backward(gg, x) : Tensor(), gx};
    });

namespace {
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;           // 1 / sqrt(2 pi)
constexpr double kGeluBeta = 0.79788456080286535588;             // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

bool gelu_tanh(const std::string& approximate) {
  FLOW_RUNTIME_CHECK(approximate == "none" || approximate == "tanh",
                     "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}
}  // namespace

FLOW_OP(gelu_backward)
    .schema("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      bool tanh_mode = gelu_tanh(a.str("approximate"));
      if (tanh_mode) {
        grad_kernel("gelu_backward", in, out[0], [](auto tag) {
          using A = acc_t<typename decltype(tag)::type>;
          return [](A g, A x) __attribute__((always_inline)) -> A {
            A x2 = x * x;
            A t = vtanh<A>(A(kGeluBeta) * (x + A(kGeluKappa) * x2 * x));
            A right = A(0.5) * x * (A(1) - t * t) * A(kGeluBeta) * (A(1) + A(3 * kGeluKappa) * x2);
            return g * (A(0.5) * (A(1) + t) + right);
          };
        });
      } else {
        grad_kernel("gelu_backward", in, out[0], [](auto tag) {
          using A = acc_t<typename decltype(tag)::type>;
          return [](A g, A x) __attribute__((always_inline)) -> A {
            // exp(-x^2/2): the pdf's, and erf(x/sqrt2)'s exp(-z^2)
            A e, erf;
            if constexpr (std::is_same_v<A, float>) {
              e = vec::exp_nonpos_f32(A(-0.5) * x * x);
              erf = vec::erf_abs_f32(x * A(kSqrt1_2), e);
            } else {
              e = std::exp(A(-0.5) * x * x);
              erf = std::erf(x * A(kSqrt1_2));
            }
            A cdf = A(0.5) * (A(1) + erf);
            return g * (cdf + x * (A(kInvSqrt2Pi) * e));
          };
        });
      }
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], x = c.input(1);
      const std::string& approx = c.attrs.str("approximate");
      Tensor gx;
      if (c.needs(1)) {
        Tensor x2 = ops::square(x);
        Tensor f2;  // gelu''(x)
        if (approx == "tanh") {
          // f = x/2 (1 + tanh u), u = b (x + k x^3): f'' = (1 - t^2) (u' + x/2 (u'' - 2 t u'^2))
          Tensor t = ops::tanh(ops::mul(ops::add(ops::mul(ops::mul(x2, x), kGeluKappa), x), kGeluBeta));
          Tensor u1 = ops::mul(ops::add(ops::mul(x2, 3 * kGeluKappa), Scalar(int64_t(1))), kGeluBeta);
          Tensor u2 = ops::mul(x, 6 * kGeluKappa * kGeluBeta);
          Tensor in = ops::sub(u2, ops::mul(ops::mul(t, 2), ops::square(u1)));
          f2 = ops::mul(ops::rsub(1, ops::square(t)), ops::add(u1, ops::mul(ops::mul(x, 0.5), in)));
        } else {
          // f'' = phi(x) (2 - x^2)
          Tensor phi = ops::mul(ops::exp(ops::mul(x2, -0.5)), kInvSqrt2Pi);
          f2 = ops::mul(phi, ops::rsub(2, x2));
        }
        gx = ops::mul(ops::mul(gg, c.input(0)), f2);
      }
      return {c.needs(0) ? ops::call1("gelu_backward", {gg, x}, {approx}) : Tensor(), gx};
    });

// ELU family: grad * (x <= 0 ? neg * exp(x * input_scale) : pos). Its derivative in x has the same form.
FLOW_OP(elu_backward)
    .schema("elu_backward(Tensor grad_output, Tensor self, Scalar pos, Scalar neg, Scalar input_scale) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      double pos = a.f("pos"), neg = a.f("neg"), is = a.f("input_scale");
      grad_kernel("elu_backward", in, out[0], [=](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        A p = static_cast<A>(pos), n = static_cast<A>(neg), s = static_cast<A>(is);
        return [p, n, s](A g, A x) -> A { return x <= A(0) ? g * n * vexp<A>(x * s) : g * p; };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], x = c.input(1);
      double neg = c.attrs.f("neg"), is = c.attrs.f("input_scale");
      return {c.needs(0) ? ops::call1("elu_backward", {gg, x}, c.attrs.values) : Tensor(),
              c.needs(1) ? ops::call1("elu_backward", {ops::mul(gg, c.input(0)), x},
                                      {Scalar(0.0), Scalar(neg * is), Scalar(is)})
                         : Tensor()};
    });

// softplus: grad * sigmoid(beta x), or grad above the linear threshold (as PyTorch computes it).
FLOW_OP(softplus_backward)
    .schema("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      double beta = a.f("beta"), th = a.f("threshold");
      grad_kernel("softplus_backward", in, out[0], [=](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        A b = static_cast<A>(beta), t = static_cast<A>(th);
        return [b, t](A g, A x) -> A {
          A z = vexp<A>(x * b);
          return (x * b) > t ? g : g * z / (z + A(1));
        };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], x = c.input(1);
      Scalar beta = c.attrs.s("beta"), th = c.attrs.s("threshold");
      Tensor gx;
      if (c.needs(1)) {
        Tensor bx = ops::mul(x, beta);
        Tensor d2 = ops::mul(ops::sigmoid_backward(ops::mul(gg, c.input(0)), ops::sigmoid(bx)), beta);
        gx = ops::call1("clamp_backward", {d2, bx}, {std::monostate{}, th});
      }
      return {c.needs(0) ? ops::call1("softplus_backward", {gg, x}, c.attrs.values) : Tensor(), gx};
    });

// hardswish'(x) = 0 up to -3, x/3 + 1/2 on (-3, 3), 1 from 3 (PyTorch's boundary choice); its derivative is 1/3
// strictly inside.
FLOW_OP(hardswish_backward)
    .schema("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor")
    .traits(kHelper)
    .meta(meta_grad_helper)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      grad_kernel("hardswish_backward", in, out[0], [](auto tag) {
        using A = acc_t<typename decltype(tag)::type>;
        return [](A g, A x) __attribute__((always_inline)) -> A {
          return x <= A(-3) ? A(0) : (x < A(3) ? g * (x / A(3) + A(0.5)) : g);
        };
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gg = g[0], x = c.input(1);
      return {c.needs(0) ? ops::call1("hardswish_backward", {gg, x}) : Tensor(),
              c.needs(1) ? ops::call1("hardtanh_backward", {ops::mul(ops::mul(gg, c.input(0)), 1.0 / 3.0), x},
                                      {Scalar(int64_t(-3)), Scalar(int64_t(3))})
                         : Tensor()};
    });

}  // namespace flow
