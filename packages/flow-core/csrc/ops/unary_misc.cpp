// Scalar-bounded clamp (clamp/clamp_min/clamp_max/clip), nan_to_num, the float-class predicates
// (isnan, isinf, ...) and logical_not / bitwise_not.
// Ternaries on floats block vectorisation while FP-exception flags must be preserved (GCC's default
// -ftrapping-math; clang defaults to off); we never read those flags. O2: the extension is built with -Os
// (nanobind's default), whose inlining limits keep the functors below out of the vectorised loops.
#pragma GCC optimize("O2", "no-trapping-math")
#include "unary_common.h"

namespace flow {
namespace {

// PyTorch's promotion of a dimensioned tensor with a Python number: a number of a higher category wins.
DType promote_with_scalar(DType t, const Scalar& s) {
  if (s.is_float() && !is_floating(t)) return default_float_dtype();
  if (s.is_int() && t == DType::Bool) return DType::Int64;
  return t;
}

std::vector<TensorMeta> meta_clamp(const TensorList& in, const Attrs& a, const char* name) {
  FLOW_RUNTIME_CHECK(!a.none("min") || !a.none("max"), name, ": At least one of 'min' or 'max' must not be None");
  DType d = in[0].dtype();
  if (!a.none("min")) d = promote_with_scalar(d, a.s("min"));
  if (!a.none("max")) d = promote_with_scalar(d, a.s("max"));
  if (d == DType::Bool)
    fail_not_implemented(a.none("min")   ? "clamp_max_scalar_cpu"
                         : a.none("max") ? "clamp_min_scalar_cpu"
                                         : "clamp_scalar_cpu",
                         d);
  if (!a.none("min")) check_scalar_fits(a.s("min"), d);
  if (!a.none("max")) check_scalar_fits(a.s("max"), d);
  return {{in[0].sizes(), d, in[0].device()}};
}

// min(max(x, lo), hi) in the result dtype; NaN inputs stay NaN.
void clamp_kernel(const Tensor& in, const Tensor& out, const Attrs& a) {
  DType ct = out.dtype();
  bool has_lo = !a.none("min"), has_hi = !a.none("max");
  Scalar lo_s = has_lo ? a.s("min") : Scalar(int64_t(0)), hi_s = has_hi ? a.s("max") : Scalar(int64_t(0));
  with_compute_dtype({in}, out, ct, ct, [&](const Tensor& o, const TensorList& c) {
    dispatch_numeric(ct, "clamp", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const A lo = has_lo ? lo_s.to<A>() : std::numeric_limits<A>::lowest();
      const A hi = has_hi ? hi_s.to<A>() : std::numeric_limits<A>::max();
      if constexpr (std::is_floating_point_v<A>) {
        if ((has_lo && lo != lo) || (has_hi && hi != hi)) {  // a NaN bound makes everything NaN (PyTorch)
          simd_unary<T>(o, c[0], [](A) FLOW_VEC_LAMBDA -> A { return std::numeric_limits<A>::quiet_NaN(); });
          return;
        }
        if (!has_lo) {  // keep -inf inputs (lowest() is finite)
          simd_unary<T>(o, c[0], [hi](A x) FLOW_VEC_LAMBDA -> A { return x > hi ? hi : x; });
          return;
        }
        if (!has_hi) {
          simd_unary<T>(o, c[0], [lo](A x) FLOW_VEC_LAMBDA -> A { return x < lo ? lo : x; });
          return;
        }
      }
      // x < lo ? lo : ... keeps NaN (both comparisons false); with lo > hi every element becomes hi.
      simd_unary<T>(o, c[0], [lo, hi](A x) FLOW_VEC_LAMBDA -> A {
        A y = x < lo ? lo : x;
        return y > hi ? hi : y;
      });
    });
  });
}

// The bounds as one (min, max) pair named as clamp's, whatever the op's own attributes (clamp_min has only min).
Attrs clamp_bounds(AttrValue lo, AttrValue hi) {
  static const Schema bounds = parse_schema("_clamp_bounds(Scalar? min=None, Scalar? max=None) -> Tensor");
  Attrs b{std::move(lo), std::move(hi)};
  b.schema = &bounds;
  return b;
}

TensorList clamp_grad(BackwardCtx& c, const TensorList& g, AttrValue lo, AttrValue hi) {
  return {ops::call1("clamp_backward", {g[0], c.input(0)}, {lo, hi})};
}

}  // namespace

#define FLOW_CLAMP_OP(NAME, SCHEMA, LO, HI)                                      \
  FLOW_OP(NAME)                                                                  \
      .schema(SCHEMA)                                                            \
      .traits(kElementwise | kUnary)                                             \
      .meta([](const TensorList& in, const Attrs& a) {                           \
    Attrs b = clamp_bounds(LO, HI);                                              \
    return meta_clamp(in, b, #NAME);                                             \
  })                                                                             \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) { \
    Attrs b = clamp_bounds(LO, HI);                                              \
    clamp_kernel(in[0], out[0], b);                                              \
  })                                                                             \
      .save_inputs({0})                                                          \
      .inplace_variant()                                                         \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {          \
    const Attrs& a = c.attrs;                                                    \
    return clamp_grad(c, g, LO, HI);                                             \
  });

#define FLOW_NONE AttrValue(std::monostate{})
FLOW_CLAMP_OP(clamp, "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", a.at("min"), a.at("max"))
FLOW_CLAMP_OP(clip, "clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", a.at("min"), a.at("max"))
FLOW_CLAMP_OP(clamp_min, "clamp_min(Tensor self, Scalar min) -> Tensor", a.at("min"), FLOW_NONE)
FLOW_CLAMP_OP(clamp_max, "clamp_max(Tensor self, Scalar max) -> Tensor", FLOW_NONE, a.at("max"))
#undef FLOW_NONE

// nan_to_num: NaN -> nan, +inf -> posinf (default: the dtype's max), -inf -> neginf (default: lowest).
FLOW_OP(nan_to_num)
    .schema("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta(meta_unary_same)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      DType ct = out[0].dtype();
      with_compute_dtype({in[0]}, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
        dispatch_all(ct, "nan_to_num", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = acc_t<T>;
          if constexpr (!std::is_floating_point_v<A>) {
            simd_unary<T>(o, c[0], [](A x) -> A { return x; });
          } else {
            // the defaults are the limits of the tensor's own dtype (65504 for float16)
            const A nan_v = static_cast<A>(a.none("nan") ? 0.0 : a.f("nan"));
            const A pos_v =
                a.none("posinf") ? static_cast<A>(std::numeric_limits<T>::max()) : static_cast<A>(a.f("posinf"));
            const A neg_v =
                a.none("neginf") ? static_cast<A>(std::numeric_limits<T>::lowest()) : static_cast<A>(a.f("neginf"));
            const A inf = std::numeric_limits<A>::infinity();
            simd_unary<T>(o, c[0],
                          [=](A x) -> A { return x != x ? nan_v : (x == inf ? pos_v : (x == -inf ? neg_v : x)); });
          }
        });
      });
    })
    .save_inputs({0})
    .inplace_variant()
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::mul(g[0], ops::isfinite(c.input(0)))};
    });

// ---- predicates (bool results, not differentiable) ----------------------------------------------------

#define FLOW_PREDICATE_OP(NAME, INT_RESULT, FLOAT_EXPR)                                \
  FLOW_OP(NAME)                                                                        \
      .schema(#NAME "(Tensor self) -> Tensor")                                         \
      .traits(kElementwise | kUnary | kNonDifferentiable)                              \
      .meta(meta_unary_bool)                                                           \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {         \
    dispatch_all(in[0].dtype(), #NAME, [&](auto tag) {                                 \
      using T = typename decltype(tag)::type;                                          \
      using A = acc_t<T>;                                                              \
      if constexpr (std::is_floating_point_v<A>) {                                     \
        const A inf = std::numeric_limits<A>::infinity();                              \
        (void)inf;                                                                     \
        unary_loop<bool, T>(out[0], in[0], [inf](A x) -> bool { return FLOAT_EXPR; }); \
      } else {                                                                         \
        unary_loop<bool, T>(out[0], in[0], [](A) -> bool { return INT_RESULT; });      \
      }                                                                                \
    });                                                                                \
  });

FLOW_PREDICATE_OP(isnan, false, x != x)
FLOW_PREDICATE_OP(isinf, false, x == inf || x == -inf)
FLOW_PREDICATE_OP(isfinite, true, x == x && x != inf && x != -inf)
FLOW_PREDICATE_OP(isposinf, false, x == inf)
FLOW_PREDICATE_OP(isneginf, false, x == -inf)

FLOW_OP(logical_not)
    .schema("logical_not(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary | kNonDifferentiable)
    .meta(meta_unary_bool)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      // the in-place form keeps self's dtype (0/1 in it), so write through a bool temporary if needed
      with_compute_dtype({in[0]}, out[0], in[0].dtype(), DType::Bool, [&](const Tensor& o, const TensorList& c) {
        dispatch_all(in[0].dtype(), "logical_not", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = acc_t<T>;
          unary_loop<bool, T>(o, c[0], [](A x) -> bool { return !static_cast<bool>(x); });
        });
      });
    })
    .inplace_variant();

FLOW_OP(bitwise_not)
    .schema("bitwise_not(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) {
      if (!is_integral(in[0].dtype(), true)) fail_not_implemented("bitwise_not_cpu", in[0].dtype());
      return meta_unary_same(in, Attrs{});
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      dispatch_integral(in[0].dtype(), "bitwise_not", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) simd_unary<T>(out[0], in[0], [](T x) -> T { return !x; });
        else simd_unary<T>(out[0], in[0], [](T x) -> T { return static_cast<T>(~x); });
      });
    })
    .inplace_variant();

}  // namespace flow
