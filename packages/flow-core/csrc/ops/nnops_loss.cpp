// Pointwise losses (mse, l1, smooth_l1, huber, binary_cross_entropy[_with_logits], kl_div): one fused
// forward kernel per loss (elementwise loss + reduction accumulated in double) and one shared fused
// backward helper producing the gradients for input and target together.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../autograd/grad_mode.h"
#include "../kernels/cpu/loops.h"
#include "nnops_grad_composite.h"
#include "nnops_util.h"
#include "unary_vec.h"

namespace flow {
namespace {

using nn::Reduction;

enum class Kind { Mse, L1, SmoothL1, Huber, Bce, BceLogits, KlDiv, KlDivLog };

Kind kind_of(const std::string& s) {
  if (s == "mse") return Kind::Mse;
  if (s == "l1") return Kind::L1;
  if (s == "smooth_l1") return Kind::SmoothL1;
  if (s == "huber") return Kind::Huber;
  if (s == "bce") return Kind::Bce;
  if (s == "bce_logits") return Kind::BceLogits;
  if (s == "kl_div") return Kind::KlDiv;
  if (s == "kl_div_log") return Kind::KlDivLog;
  fail(ErrorKind::Value, "unknown pointwise loss '", s, "'");
}

template <typename A>
A sgn(A v) {
  return static_cast<A>((v > A(0)) - (v < A(0)));
}

// softplus(-x) = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)), without overflow
template <typename A>
FLOW_VEC_INLINE A softplus_neg(A x) {
  return std::max(-x, A(0)) + vlog1p<A>(vexp_nonpos<A>(-std::fabs(x)));
}

// Elementwise loss and its partials d/dx, d/dt (w: weight, pw: pos_weight, p: beta/delta).
template <Kind K, typename A>
struct Loss {
  FLOW_VEC_INLINE static A value(A x, A t, A w, A pw, A p) {
    if constexpr (K == Kind::Mse) return (x - t) * (x - t);
    else if constexpr (K == Kind::L1) return std::abs(x - t);
    else if constexpr (K == Kind::SmoothL1) {
      A z = std::abs(x - t);
      return z < p ? A(0.5) * z * z / p : z - A(0.5) * p;
    } else if constexpr (K == Kind::Huber) {
      A z = std::abs(x - t);
      return z < p ? A(0.5) * z * z : p * (z - A(0.5) * p);
    } else if constexpr (K == Kind::Bce) {
      A lx = std::max(vlog<A>(x), A(-100)), l1x = std::max(vlog1p<A>(-x), A(-100));
      return -w * (t * lx + (A(1) - t) * l1x);
    } else if constexpr (K == Kind::BceLogits) {
      A lw = (pw - A(1)) * t + A(1);
      return w * ((A(1) - t) * x + lw * softplus_neg(x));
    } else if constexpr (K == Kind::KlDiv) {
      A xlogy = t == A(0) ? A(0) : t * std::log(t);
      return xlogy - t * x;
    } else {
      return std::exp(t) * (t - x);
    }
  }
  FLOW_VEC_INLINE static void grads(A x, A t, A w, A pw, A p, A& dx, A& dt) {
    if constexpr (K == Kind::Mse) {
      dx = A(2) * (x - t), dt = -dx;
    } else if constexpr (K == Kind::L1) {
      dx = sgn(x - t), dt = -dx;
    } else if constexpr (K == Kind::SmoothL1) {
      A z = x - t;
      dx = z < -p ? A(-1) : z > p ? A(1) : z / p;
      dt = -dx;
    } else if constexpr (K == Kind::Huber) {
      A z = x - t;
      dx = z <= -p ? -p : z >= p ? p : z;
      dt = -dx;
    } else if constexpr (K == Kind::Bce) {
      dx = w * (x - t) / std::max((A(1) - x) * x, A(1e-12));
      dt = w * (vlog1p<A>(-x) - vlog<A>(x));  // -logit(x), unclamped as in torch: +-inf at x = 0 or 1
    } else if constexpr (K == Kind::BceLogits) {
      // sigmoid(x) from the same exp(-|x|) as softplus(-x)
      A e = vexp_nonpos<A>(-std::fabs(x)), inv = A(1) / (A(1) + e);
      A sig = x >= A(0) ? inv : e * inv;
      A pt = pw * t;
      dx = w * ((pt + A(1) - t) * sig - pt);
      dt = w * (-x + (pw - A(1)) * (std::max(-x, A(0)) + vlog1p<A>(e)));
    } else if constexpr (K == Kind::KlDiv) {
      dx = -t;
      // as torch's xlogy(t, t) - t * x decomposition: 0/0 = nan at t == 0
      dt = (t != A(0) ? std::log(t) : A(0)) + t / t - x;
    } else {
      A e = std::exp(t);
      dx = -e, dt = e * (t - x + A(1));
    }
  }
};

template <typename F>
void dispatch_kind(Kind k, F&& f) {
  switch (k) {
    case Kind::Mse: return f(std::integral_constant<Kind, Kind::Mse>{});
    case Kind::L1: return f(std::integral_constant<Kind, Kind::L1>{});
    case Kind::SmoothL1: return f(std::integral_constant<Kind, Kind::SmoothL1>{});
    case Kind::Huber: return f(std::integral_constant<Kind, Kind::Huber>{});
    case Kind::Bce: return f(std::integral_constant<Kind, Kind::Bce>{});
    case Kind::BceLogits: return f(std::integral_constant<Kind, Kind::BceLogits>{});
    case Kind::KlDiv: return f(std::integral_constant<Kind, Kind::KlDiv>{});
    case Kind::KlDivLog: return f(std::integral_constant<Kind, Kind::KlDivLog>{});
  }
}

// inputs (self, target, weight?, pos_weight?) -> broadcast shape and compute dtype
struct LossGeom {
  Shape shape;
  DType dtype;
};
LossGeom loss_geom(const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& pw, const char* op) {
  Shape s = broadcast_shapes(x.sizes(), t.sizes(), op);
  DType d = promote_types(x.dtype(), t.dtype());
  for (const Tensor* o : {&w, &pw})
    if (o->defined()) {
      s = broadcast_shapes(s, o->sizes(), op);
      d = promote_types(d, o->dtype());
    }
  if (!is_floating(d)) {
    // PyTorch's kernels for these reject integer dtypes as not implemented
    for (auto [name, kernel] :
         {std::pair{"mse_loss", "mse_cpu"}, {"smooth_l1_loss", "smooth_l1_cpu"}, {"huber_loss", "huber_cpu"}})
      if (std::strcmp(op, name) == 0) fail_not_implemented(kernel, d);
    fail(ErrorKind::Runtime, op, ": expected floating point input and target, got ", dtype_name(x.dtype()), " and ",
         dtype_name(t.dtype()));
  }
  return {s, d};
}

Tensor one_or(const Tensor& t, DType d) {
  return t.defined() ? nn::contig_as(t, d) : ops::scalar_tensor(Scalar(1.0), d);
}

struct LossSpec {
  Kind kind;
  Reduction red;
  double param;
};

// Whether pointers 0..k-1 of a run step one element at a time / pointer k does.
template <typename T, size_t N>
bool dense_run(const std::array<int64_t, N>& st, int k) {
  for (int i = 0; i < k; ++i)
    if (st[i] != static_cast<int64_t>(sizeof(T))) return false;
  return true;
}
template <typename T, size_t N>
bool dense_at(const std::array<int64_t, N>& st, int k) {
  return st[k] == static_cast<int64_t>(sizeof(T));
}

// The sum of n values in double: chunks summed in parallel, each with 16 independent lanes, the chunk sums
// added in order (deterministic). A single running double sum is a 4-cycle dependency chain per element.
// The values are value_at(i), rounded to T as a stored loss would be.
template <typename T, typename F>
double sum_in_double(int64_t n, F value_at) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t nc = (n + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(nc), 0.0);
  auto as_double = [&](int64_t i) FLOW_VEC_LAMBDA {
    return static_cast<double>(static_cast<acc_t<T>>(static_cast<T>(value_at(i))));
  };
  parallel_for(nc, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      // 16 independent lanes (four vectors of doubles), so the adds overlap instead of chaining
      double acc[16] = {};
      const int64_t b = c * kChunk, end = std::min(n, b + kChunk);
      int64_t i = b;
      for (; i + 16 <= end; i += 16) {
#pragma omp simd
        for (int j = 0; j < 16; ++j) acc[j] += as_double(i + j);
      }
      double sum = 0;
      for (; i < end; ++i) sum += as_double(i);
      for (double v : acc) sum += v;
      part[c] = sum;
    }
  });
  double total = 0;
  for (double v : part) total += v;
  return total;
}

void loss_forward(const TensorList& in, const Tensor& out, const LossSpec& s, const char* op) {
  LossGeom g = loss_geom(in[0], in[1], in[2], in[3], op);
  DType d = g.dtype;
  Tensor x = nn::contig_as(in[0], d), t = nn::contig_as(in[1], d), w = one_or(in[2], d), pw = one_or(in[3], d);
  if (s.kind == Kind::Bce) {
    bool ok = true;
    dispatch_floating(d, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        acc_t<T> v = static_cast<acc_t<T>>(p[i]);
        if (!(v >= 0 && v <= 1)) ok = false;
      }
    });
    FLOW_RUNTIME_CHECK(ok, "all elements of input should be between 0 and 1");
  }
  if (s.red != Reduction::None && !in[2].defined() && !in[3].defined() && x.sizes() == g.shape &&
      t.sizes() == g.shape && x.is_contiguous() && t.is_contiguous()) {
    // a reduced, unweighted loss: each element's loss goes straight into the sum (one pass, no temporary)
    dispatch_floating(d, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      const A p = static_cast<A>(s.param);
      const T *xs = x.data<T>(), *ts = t.data<T>();
      dispatch_kind(s.kind, [&](auto kc) {
        using L = Loss<decltype(kc)::value, A>;
        double total = sum_in_double<T>(x.numel(), [&](int64_t i) FLOW_VEC_LAMBDA {
          return L::value(static_cast<A>(xs[i]), static_cast<A>(ts[i]), A(1), A(1), p);
        });
        if (s.red == Reduction::Mean) total /= static_cast<double>(x.numel());
        ops::copy_into(out, ops::scalar_tensor(Scalar(total), d));
      });
    });
    return;
  }
  Tensor elem = s.red == Reduction::None && out.dtype() == d && out.is_contiguous() ? out : empty(g.shape, d);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    A p = static_cast<A>(s.param);
    dispatch_kind(s.kind, [&](auto kc) {
      using L = Loss<decltype(kc)::value, A>;
      for_each_element<5>({&elem, &x, &t, &w, &pw}, g.shape,
                          [p](std::array<char*, 5> ptr, std::array<int64_t, 5> st, int64_t n) {
        auto ld = [&](int k, int64_t i) { return static_cast<A>(*reinterpret_cast<const T*>(ptr[k] + i * st[k])); };
        if (dense_run<T>(st, 3) && st[3] == 0 && st[4] == 0) {  // unweighted: an omp-simd loop
          T* o = reinterpret_cast<T*>(ptr[0]);
          const T *xs = reinterpret_cast<const T*>(ptr[1]), *ts = reinterpret_cast<const T*>(ptr[2]);
          const A wv = ld(3, 0), pwv = ld(4, 0);
#pragma omp simd
          for (int64_t i = 0; i < n; ++i)
            o[i] = static_cast<T>(L::value(static_cast<A>(xs[i]), static_cast<A>(ts[i]), wv, pwv, p));
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<T*>(ptr[0] + i * st[0]) =
              static_cast<T>(L::value(ld(1, i), ld(2, i), ld(3, i), ld(4, i), p));
      });
    });
    if (s.red != Reduction::None) {
      const T* e = elem.data<T>();
      double total = sum_in_double<T>(elem.numel(), [e](int64_t i) { return e[i]; });
      if (s.red == Reduction::Mean) total /= static_cast<double>(elem.numel());
      Tensor r = ops::scalar_tensor(Scalar(total), d);
      ops::copy_into(out, r);
    }
  });
  if (s.red == Reduction::None && !elem.is_same(out)) ops::copy_into(out, elem);
}

std::vector<TensorMeta> loss_meta(const TensorList& in, Reduction red, const char* op) {
  LossGeom g = loss_geom(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), in.size() > 3 ? in[3] : Tensor(), op);
  return {{red == Reduction::None ? g.shape : Shape{}, g.dtype, in[0].device()}};
}

TensorList loss_backward(BackwardCtx& c, const TensorList& g, const char* kind, const std::string& red, double param) {
  TensorList in;
  for (size_t i = 0; i < 4; ++i) in.push_back(i < c.num_inputs() ? c.input(static_cast<int>(i)) : Tensor());
  // grad mode on: create_graph=True, so build the gradient from registered ops (differentiable again)
  TensorList r =
      autograd::GradMode::is_enabled()
          ? nn::pointwise_loss_grad_composite(g[0], in[0], in[1], in[2], in[3], kind,
                                              nn::parse_reduction(red, "loss backward") == Reduction::Mean, param)
          : ops::call("_pointwise_loss_backward", {g[0], in[0], in[1], in[2], in[3]},
                      {std::string(kind), red, param, c.needs(1)});
  TensorList res{c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor()};
  for (size_t i = 2; i < c.num_inputs(); ++i) res.push_back(Tensor());
  return res;
}

// Registers a loss op whose schema is "<name>(Tensor self, Tensor target, ...)"; `spec` reads the attrs.
#define FLOW_POINTWISE_LOSS(NAME, SCHEMA, KIND_EXPR, PARAM_EXPR, NSAVE)                                            \
  FLOW_OP(NAME)                                                                                                    \
      .schema(SCHEMA)                                                                                              \
      .traits(kLoss)                                                                                               \
      .meta([](const TensorList& in, const Attrs& a) {                                                             \
    return loss_meta(in, nn::parse_reduction(a.str("reduction"), #NAME), #NAME);                                   \
  })                                                                                                               \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                                   \
    TensorList full = in;                                                                                          \
    full.resize(4);                                                                                                \
    loss_forward(full, out[0],                                                                                     \
                 LossSpec{kind_of(KIND_EXPR), nn::parse_reduction(a.str("reduction"), #NAME), PARAM_EXPR}, #NAME); \
  })                                                                                                               \
      .save_inputs(NSAVE)                                                                                          \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                                            \
    const Attrs& a = c.attrs;                                                                                      \
    return loss_backward(c, g, KIND_EXPR, a.str("reduction"), PARAM_EXPR);                                         \
  });

}  // namespace

FLOW_POINTWISE_LOSS(mse_loss, "mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor", "mse", 0.0,
                    (std::vector<int>{0, 1}))
FLOW_POINTWISE_LOSS(l1_loss, "l1_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor", "l1", 0.0,
                    (std::vector<int>{0, 1}))
FLOW_POINTWISE_LOSS(smooth_l1_loss,
                    "smooth_l1_loss(Tensor self, Tensor target, str reduction='mean', float beta=1.0) -> Tensor",
                    (a.f("beta") == 0.0 ? "l1" : "smooth_l1"), a.f("beta"), (std::vector<int>{0, 1}))
FLOW_POINTWISE_LOSS(huber_loss,
                    "huber_loss(Tensor self, Tensor target, str reduction='mean', float delta=1.0) -> Tensor", "huber",
                    a.f("delta"), (std::vector<int>{0, 1}))
FLOW_POINTWISE_LOSS(
    binary_cross_entropy,
    "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean') -> Tensor", "bce", 0.0,
    (std::vector<int>{0, 1, 2}))
FLOW_POINTWISE_LOSS(binary_cross_entropy_with_logits,
                    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? "
                    "pos_weight=None, str reduction='mean') -> Tensor",
                    "bce_logits", 0.0, (std::vector<int>{0, 1, 2, 3}))
FLOW_POINTWISE_LOSS(kl_div,
                    "kl_div(Tensor self, Tensor target, str reduction='mean', *, bool log_target=False) -> Tensor",
                    (a.b("log_target") ? "kl_div_log" : "kl_div"), 0.0, (std::vector<int>{0, 1}))

// grad_self, grad_target of every pointwise loss (both of the broadcast shape; the engine sums them down).
FLOW_OP(_pointwise_loss_backward)
    .schema(
        "_pointwise_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, Tensor? pos_weight, "
        "str kind, str reduction, float param, bool target_grad=True) -> (Tensor, Tensor)")
    .traits(kLoss | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      // without target_grad the second result is empty: the target's gradient costs as much as the input's
      LossGeom g = loss_geom(in[1], in[2], in[3], in[4], "loss backward");
      return std::vector<TensorMeta>{{g.shape, g.dtype, in[1].device()},
                                     {a.b("target_grad") ? g.shape : Shape{0}, g.dtype, in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      LossGeom g = loss_geom(in[1], in[2], in[3], in[4], "loss backward");
      DType d = g.dtype;
      Kind kind = kind_of(a.str("kind"));
      Reduction red = nn::parse_reduction(a.str("reduction"), "loss backward");
      Tensor gr = nn::contig_as(in[0], d), x = nn::contig_as(in[1], d), t = nn::contig_as(in[2], d);
      Tensor w = one_or(in[3], d), pw = one_or(in[4], d);
      Tensor gx = out[0].is_contiguous() && out[0].dtype() == d ? out[0] : empty(g.shape, d);
      const bool want_gt = a.b("target_grad");
      Tensor gt = !want_gt ? gx : out[1].is_contiguous() && out[1].dtype() == d ? out[1] : empty(g.shape, d);
      double scale = red == Reduction::Mean ? 1.0 / static_cast<double>(shape_numel(g.shape)) : 1.0;
      dispatch_floating(d, "loss backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        A p = static_cast<A>(a.f("param")), sc = static_cast<A>(scale);
        dispatch_kind(kind, [&](auto kc) {
          using L = Loss<decltype(kc)::value, A>;
          // without target_grad, gt aliases gx and is never written (its partial is then dead code)
          auto run = [&](auto gt_tag) {
            constexpr bool GT = decltype(gt_tag)::value;
            for_each_element<7>({&gx, &gt, &gr, &x, &t, &w, &pw}, g.shape,
                                [p, sc](std::array<char*, 7> ptr, std::array<int64_t, 7> st, int64_t n) {
              auto ld = [&](int k, int64_t i) {
                return static_cast<A>(*reinterpret_cast<const T*>(ptr[k] + i * st[k]));
              };
              if (dense_run<T>(st, 2) && dense_at<T>(st, 3) && dense_at<T>(st, 4) && st[2] == 0 && st[5] == 0 &&
                  st[6] == 0) {  // a reduced loss's one grad value, unweighted: an omp-simd loop
                T *gxs = reinterpret_cast<T*>(ptr[0]), *gts = reinterpret_cast<T*>(ptr[1]);
                const T *xs = reinterpret_cast<const T*>(ptr[3]), *ts = reinterpret_cast<const T*>(ptr[4]);
                const A gv = ld(2, 0) * sc, wv = ld(5, 0), pwv = ld(6, 0);
#pragma omp simd
                for (int64_t i = 0; i < n; ++i) {
                  A dx, dt;
                  L::grads(static_cast<A>(xs[i]), static_cast<A>(ts[i]), wv, pwv, p, dx, dt);
                  gxs[i] = static_cast<T>(gv * dx);
                  if constexpr (GT) gts[i] = static_cast<T>(gv * dt);
                }
                return;
              }
              for (int64_t i = 0; i < n; ++i) {
                A dx, dt;
                L::grads(ld(3, i), ld(4, i), ld(5, i), ld(6, i), p, dx, dt);
                A gv = ld(2, i) * sc;
                *reinterpret_cast<T*>(ptr[0] + i * st[0]) = static_cast<T>(gv * dx);
                if constexpr (GT) *reinterpret_cast<T*>(ptr[1] + i * st[1]) = static_cast<T>(gv * dt);
              }
            });
          };
          if (want_gt) run(std::true_type{});
          else run(std::false_type{});
        });
      });
      if (!gx.is_same(out[0])) ops::copy_into(out[0], gx);
      if (want_gt && !gt.is_same(out[1])) ops::copy_into(out[1], gt);
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      fail(ErrorKind::NotImplemented,
           "_pointwise_loss_backward: the fused backward kernel is not differentiable; "
           "differentiate the loss with create_graph=True instead");
    });

}  // namespace flow
