// embedding (with its dense backward and max_norm renormalisation) and dropout (random masks come from the
// creation family's `bernoulli`, so `manual_seed` governs them; scaling is one fused masked-scale op).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "../autograd/grad_mode.h"
#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nn::contig_as;

Tensor checked_indices(const Tensor& idx, int64_t num, const char* op) {
  FLOW_RUNTIME_CHECK(idx.dtype() == DType::Int64 || idx.dtype() == DType::Int32, op,
                     ": Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                     "Int; but got ",
                     dtype_name(idx.dtype()), " instead");
  Tensor t = contig_as(idx, DType::Int64);
  const int64_t* p = t.data<int64_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    FLOW_INDEX_CHECK(p[i] >= 0 && p[i] < num, "index out of range in self");
  return t;
}

// Per-position gradient factor: 0 on padding_idx, 1/count with scale_grad_by_freq, else 1.
std::vector<double> grad_factors(const int64_t* ip, int64_t n, int64_t padding_idx, bool freq) {
  std::vector<double> f(n, 1.0);
  std::unordered_map<int64_t, int64_t> counts;
  if (freq)
    for (int64_t i = 0; i < n; ++i) ++counts[ip[i]];
  for (int64_t i = 0; i < n; ++i) {
    if (ip[i] == padding_idx) f[i] = 0.0;
    else if (freq) f[i] = 1.0 / static_cast<double>(counts[ip[i]]);
  }
  return f;
}

Tensor factor_tensor(const Tensor& indices, int64_t num, int64_t padding_idx, bool freq, DType d) {
  Tensor ip = checked_indices(indices, num, "embedding_backward");
  std::vector<double> f = grad_factors(ip.data<int64_t>(), ip.numel(), padding_idx, freq);
  Shape s = indices.sizes();
  s.push_back(1);
  Tensor t = empty(s, DType::Float64);
  std::copy(f.begin(), f.end(), t.data<double>());
  return contig_as(t, d);
}

}  // namespace

FLOW_OP(embedding)
    .schema(
        "embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, bool "
        "sparse=False) -> Tensor")
    .traits(kIndexing)
    .meta([](const TensorList& in, const Attrs&) {
      FLOW_RUNTIME_CHECK(in[0].dim() == 2, "embedding: 'weight' must be 2-D, got ", in[0].dim(), "D");
      FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Int64 || in[1].dtype() == DType::Int32,
                         "embedding: Expected tensor for argument #1 'indices' to have one of the following scalar "
                         "types: Long, Int; but got ",
                         dtype_name(in[1].dtype()), " instead");
      Shape s = in[1].sizes();
      s.push_back(in[0].size(1));
      return std::vector<TensorMeta>{{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      const Tensor& w = in[0];
      Tensor ip = checked_indices(in[1], w.size(0), "embedding");
      Tensor o = out[0];
      const int64_t n = ip.numel(), D = w.size(1);
      const int64_t* idx = ip.data<int64_t>();
      FLOW_RUNTIME_CHECK(o.is_contiguous(), "embedding: expected a contiguous output");
      const int64_t isz = w.itemsize(), ws0 = w.stride(0) * isz, ws1 = w.stride(1) * isz;
      const char* wb = static_cast<const char*>(w.raw_data());
      char* ob = static_cast<char*>(o.raw_data());
      parallel_for(n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const char* src = wb + idx[i] * ws0;
          char* dst = ob + i * D * isz;
          if (ws1 == isz) std::memcpy(dst, src, D * isz);
          else
            for (int64_t j = 0; j < D; ++j) std::memcpy(dst + j * isz, src + j * ws1, isz);
        }
      });
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t num = c.input_meta(0).sizes[0];
      return {ops::call1("embedding_dense_backward", {g[0], c.input(1)},
                         {num, c.attrs.i("padding_idx"), c.attrs.b("scale_grad_by_freq")}),
              Tensor()};
    });

// grad_weight[idx[i]] += factor[i] * grad[i]; serial over positions per column block (no write races).
FLOW_OP(embedding_dense_backward)
    .schema(
        "embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx, bool "
        "scale_grad_by_freq) -> Tensor")
    .traits(kIndexing | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      int64_t D = in[0].dim() > 0 ? in[0].size(-1) : 1;
      return std::vector<TensorMeta>{{{a.i("num_weights"), D}, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t num = a.i("num_weights");
      Tensor ip = checked_indices(in[1], num, "embedding_backward");
      const int64_t n = ip.numel();
      const int64_t* idx = ip.data<int64_t>();
      std::vector<double> f = grad_factors(idx, n, a.i("padding_idx"), a.b("scale_grad_by_freq"));
      Tensor o = out[0];
      DType d = o.dtype();
      const int64_t D = o.size(1);
      FLOW_RUNTIME_CHECK(in[0].numel() == n * D, "embedding_backward: grad_output has ", in[0].numel(),
                         " elements, expected ", n * D);
      Tensor gr = contig_as(in[0], d);
      dispatch_floating(d, "embedding_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        Tensor ob = o.is_contiguous() ? o : empty(o.sizes(), d);
        T* op_ = ob.data<T>();
        // float and double accumulate straight into the output; 16-bit types in a float buffer
        constexpr bool direct = std::is_same_v<T, A>;
        std::vector<A> buf(direct ? 0 : num * D);
        A* acc = direct ? reinterpret_cast<A*>(op_) : buf.data();
        const T* gp = gr.data<T>();
        parallel_for(D, 64, [&](int64_t jb, int64_t je) {
          for (int64_t r = 0; r < num; ++r) std::fill(acc + r * D + jb, acc + r * D + je, A(0));
          for (int64_t i = 0; i < n; ++i) {
            if (f[i] == 0.0) continue;
            const A fi = static_cast<A>(f[i]);
            A* row = acc + idx[i] * D;
            const T* g = gp + i * D;
#pragma omp simd
            for (int64_t j = jb; j < je; ++j) row[j] += fi * static_cast<A>(g[j]);
          }
          if constexpr (!direct)
            for (int64_t r = 0; r < num; ++r)
              for (int64_t j = jb; j < je; ++j) op_[r * D + j] = static_cast<T>(acc[r * D + j]);
        });
        if (!ob.is_same(o)) ops::copy_into(o, ob);
      });
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // linear in grad_output: gather rows of h again, times the same per-position factors
      Tensor idx = c.input(1);
      Tensor rows = ops::call1("embedding", {g[0], idx}, {int64_t(-1)});
      Tensor f = factor_tensor(idx, c.attrs.i("num_weights"), c.attrs.i("padding_idx"), c.attrs.b("scale_grad_by_freq"),
                               rows.dtype());
      return {ops::mul(rows, f), Tensor()};
    });

// Rescales (in place) the rows of `weight` referenced by `indices` whose norm exceeds max_norm.
FLOW_OP(embedding_renorm_)
    .schema("embedding_renorm_(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor")
    .traits(kIndexing | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& w = in[0];
      FLOW_RUNTIME_CHECK(w.dim() == 2, "embedding_renorm_: 'weight' must be 2-D");
      Tensor ip = checked_indices(in[1], w.size(0), "embedding_renorm_");
      double max_norm = a.f("max_norm"), p = a.f("norm_type");
      std::vector<int64_t> rows(ip.data<int64_t>(), ip.data<int64_t>() + ip.numel());
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      dispatch_floating(w.dtype(), "embedding_renorm_", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* base = w.data<T>();
        const int64_t s0 = w.stride(0), s1 = w.stride(1), D = w.size(1);
        for (int64_t r : rows) {
          double norm = 0;
          for (int64_t j = 0; j < D; ++j) {
            double v = std::abs(static_cast<double>(base[r * s0 + j * s1]));
            if (p == 1) norm += v;
            else if (p == 2) norm += v * v;
            else if (std::isinf(p)) norm = std::max(norm, v);
            else norm += std::pow(v, p);
          }
          if (p == 2) norm = std::sqrt(norm);
          else if (p != 1 && !std::isinf(p)) norm = std::pow(norm, 1.0 / p);
          if (norm > max_norm) {
            double scale = max_norm / (norm + 1e-7);
            for (int64_t j = 0; j < D; ++j)
              base[r * s0 + j * s1] = static_cast<T>(static_cast<double>(base[r * s0 + j * s1]) * scale);
          }
        }
      });
      w.bump_version();
      return {w};
    });

// out = self * mask * scale (mask broadcast to self); the dropout family's fused scaling.
FLOW_OP(_masked_scale)
    .schema("_masked_scale(Tensor self, Tensor mask, float scale) -> Tensor")
    .traits(kElementwise | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      Shape s = broadcast_shapes(in[0].sizes(), in[1].sizes(), "dropout");
      FLOW_RUNTIME_CHECK(s == in[0].sizes(), "dropout: mask of shape ", shape_str(in[1].sizes()),
                         " does not broadcast to the input's shape ", shape_str(in[0].sizes()));
      return std::vector<TensorMeta>{{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      DType d = out[0].dtype();
      Tensor m = nn::contig_as(in[1], d);
      Tensor x = in[0].dtype() == d ? in[0] : nn::contig_as(in[0], d);
      double scale = a.f("scale");
      dispatch_floating(d, "dropout", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        A s = static_cast<A>(scale);
        binary_loop<T, T>(out[0], x, m, [s](A v, A k) { return k != A(0) ? v * k * s : A(0); });
      });
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("_masked_scale", {g[0], c.input(1)}, {c.attrs.f("scale")}), Tensor()};
    });

namespace {
// 1 - p rounded to `dtype`: what a tensor of probabilities 1 - p in that dtype holds.
// (kernel-level, as bernoulli reads a tensor of probabilities: no op is dispatched, modes see none)
double keep_rounded(DType dtype, double p) {
  Tensor keep_t = empty({}, dtype, Device{}), keep_d = empty({}, DType::Float64, Device{});
  ops::fill_cpu(keep_t, Scalar(1.0 - p));
  ops::copy_into(keep_d, keep_t);
  return *keep_d.data<double>();
}

// Dropout with a mask of shape `mask_shape` (the input's for dropout, (N, C, 1, ...) for feature dropout).
// A mask of the input's shape is drawn as bernoulli(x, p=keep) (shaped like x, x's values unread), so a
// handler of x's class (a split global tensor) makes only its shard of the mask. `keep` is 1 - p rounded to
// x's dtype, as a mask drawn from a tensor of probabilities 1 - p in x's dtype would compare: the same values.
Tensor dropout_impl(const Tensor& x, double p, bool train, const Shape& mask_shape) {
  FLOW_VALUE_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train || p == 0) return x;
  FLOW_RUNTIME_CHECK(is_floating(x.dtype()), "dropout: expected a floating point input, got ", dtype_name(x.dtype()));
  const bool like_x = mask_shape == x.sizes();
  if (p == 1) {
    Tensor zeros = like_x ? [&] {
      autograd::AutoGradMode no_grad(false);
      return ops::zeros_like(x);
    }() : ops::zeros(mask_shape, x.dtype(), x.device());
    return ops::call1("_masked_scale", {x, zeros}, {0.0});
  }
  Tensor mask;
  if (!like_x && x.impl()->py_handler) {
    // A tensor a handler lays out (a split global one): the mask is drawn like x's own mask below, from a
    // tensor of its shape made out of x (the sum over the dims it drops, whose values bernoulli(p=) does not
    // read), so the handler lays it out as x is and draws only its shard. A whole mask would be made on every
    // rank and taken as the same value everywhere.
    std::vector<int64_t> drop;
    for (int64_t i = 0; i < x.dim(); ++i)
      if (mask_shape[i] == 1 && x.size(i) != 1) drop.push_back(i);
    autograd::AutoGradMode no_grad(false);
    Tensor shaped = drop.empty() ? x : ops::sum(x, drop, true);
    mask = ops::call1("bernoulli", {shaped}, {keep_rounded(x.dtype(), p)});
  } else if (like_x) {
    autograd::AutoGradMode no_grad(false);  // the mask only takes x's shape: no gradient flows into it
    mask = ops::call1("bernoulli", {x}, {keep_rounded(x.dtype(), p)});
  } else {
    mask = ops::call1("bernoulli", {ops::full(mask_shape, Scalar(1.0 - p), x.dtype(), x.device())});
  }
  return ops::call1("_masked_scale", {x, mask}, {1.0 / (1.0 - p)});
}
}  // namespace

// Composites (no backward of their own): they run above autograd and interception, so the bernoulli and
// masked-scale ops they call are recorded and seen one by one.
FLOW_OP(dropout)
    .schema("dropout(Tensor input, float p=0.5, bool train=True) -> Tensor")
    .traits(kRandom | kComposite)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      return {dropout_impl(in[0], a.f("p"), a.b("train"), in[0].sizes())};
    });

// Zeroes whole channels: one mask value per (N, C) (or per C for unbatched input when `batched` is false).
FLOW_OP(feature_dropout)
    .schema("feature_dropout(Tensor input, float p=0.5, bool train=True, bool batched=True) -> Tensor")
    .traits(kRandom | kComposite)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& x = in[0];
      bool batched = a.b("batched");
      int64_t keep = batched ? 2 : 1;
      FLOW_RUNTIME_CHECK(x.dim() >= keep, "feature_dropout: expected an input of at least ", keep, " dims");
      Shape ms;
      for (int64_t i = 0; i < x.dim(); ++i) ms.push_back(i < keep ? x.size(i) : 1);
      return {dropout_impl(x, a.f("p"), a.b("train"), ms)};
    });

}  // namespace flow
