// Random ops (trait kRandom): uniform_, normal_, exponential_, random_, bernoulli (+ bernoulli_), randperm.
//
// Generators reach kernels as a number. Schemas have no Generator type, so every random op takes a keyword
// attribute `int? generator=None`: None means the default CPU generator, otherwise the handle of a live
// flow::Generator (Generator::handle(); the Python wrappers pass `Generator._handle`). A handle is a plain
// attribute, so it passes unchanged through dispatch interception and graph tracing, and a kernel never depends
// on hidden thread-local state. An unknown handle raises RuntimeError.
//
// Every kernel draws Philox blocks through for_each_philox_block: element i depends only on (seed, offset, i),
// so results are identical for any number of threads. Non-contiguous outputs are generated contiguously and
// copied, so a strided view gets the same numbers, in logical order, as a contiguous tensor of its shape.
#include "random.h"
#include "../autograd/grad_mode.h"
#include "unary_vec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace flow {

ShardWindow shard_attr(const Attrs& a, const Tensor& out, const char* op) {
  ShardWindow w;
  if (a.none("shard")) return w;
  const std::vector<int64_t>& v = a.ints("shard");
  const int64_t nd = out.dim();
  FLOW_RUNTIME_CHECK(static_cast<int64_t>(v.size()) == 2 * nd, op,
                     ": shard must hold the logical shape then the shard's first index per dim (", 2 * nd,
                     " ints for a ", nd, "-dim tensor), got ", v.size());
  w.logical.assign(v.begin(), v.begin() + nd);
  w.lo.assign(v.begin() + nd, v.end());
  w.total = 1;
  for (int64_t d = 0; d < nd; ++d) {
    FLOW_RUNTIME_CHECK(w.lo[d] >= 0 && w.lo[d] + out.size(d) <= w.logical[d], op, ": the shard of size ", out.size(d),
                       " starting at ", w.lo[d], " in dim ", d, " lies outside the logical size ", w.logical[d]);
    w.total *= w.logical[d];
  }
  if (nd == 0) w.total = 1;
  return w;
}

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }

// Fills the contiguous buffer p of `o`'s shape: `body(q, m, s)` writes the m values that begin at block 0 of
// stream s (k values per block) to q. With a shard window, the shard's runs of consecutive logical elements each
// start at their own block (a run starting inside a block skips the block's first values).
template <typename T, typename Body>
void draw(const Tensor& o, T* p, const ShardWindow& w, Generator& gen, int k, Body&& body) {
  const int64_t n = o.numel();
  if (!w.active()) {
    body(p, n, gen.reserve(ceil_div(n, k)));
    return;
  }
  PhiloxStream s = gen.reserve(ceil_div(w.total, k));
  if (n == 0) return;
  const int64_t nd = o.dim();
  int64_t last = nd - 1;  // the innermost dim the shard does not cover whole: runs end there
  while (last >= 0 && o.size(last) == w.logical[last]) --last;
  if (last < 0) {
    body(p, n, s);
    return;
  }
  std::vector<int64_t> stride(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) stride[d] = stride[d + 1] * w.logical[d + 1];
  const int64_t run = o.size(last) * stride[last];
  auto fill_run = [&](T* q, int64_t a, int64_t m) {
    PhiloxStream sub = s;
    sub.offset += static_cast<uint64_t>(a / k);
    if (int64_t skip = a % k) {
      T head[4];
      body(head, k, sub);
      int64_t take = std::min<int64_t>(k - skip, m);
      std::copy(head + skip, head + skip + take, q);
      q += take, m -= take, sub.offset += 1;
    }
    if (m > 0) body(q, m, sub);
  };
  std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(last, 0)), 0);  // over the dims before `last`
  auto next_start = [&]() {  // the logical start of the run at idx, then idx moves to the next run
    int64_t a = w.lo[last] * stride[last];
    for (int64_t d = 0; d < last; ++d) a += (w.lo[d] + idx[d]) * stride[d];
    for (int64_t d = last - 1; d >= 0; --d) {
      if (++idx[d] < o.size(d)) break;
      idx[d] = 0;
    }
    return a;
  };
  const int64_t runs = n / run;
  constexpr int64_t kSpan = int64_t(1) << 16;
  if (run >= kSpan / 16) {  // long runs: each drawn in place
    for (int64_t r = 0; r < runs; ++r) fill_run(p + r * run, next_start(), run);
    return;
  }
  // short runs (a split of a small inner dim): one call per run would cost more than the values, so spans of up
  // to kSpan logical elements are drawn into a buffer, and the runs in them copied out
  auto buf_owner = std::make_unique<T[]>(static_cast<size_t>(kSpan));
  T* buf = buf_owner.get();
  std::vector<int64_t> starts;
  int64_t r = 0, a = next_start();
  while (r < runs) {
    const int64_t base = a - a % k;
    starts.clear();
    while (r + static_cast<int64_t>(starts.size()) < runs && a + run - base <= kSpan) {
      starts.push_back(a);
      if (r + static_cast<int64_t>(starts.size()) < runs) a = next_start();
    }
    PhiloxStream sub = s;
    sub.offset += static_cast<uint64_t>(base / k);
    body(buf, starts.back() + run - base, sub);
    for (int64_t st : starts) std::copy(buf + (st - base), buf + (st - base) + run, p + r++ * run);
  }
}

// Run `fill(contiguous tensor)` on `out` directly, or on a contiguous temporary copied into `out`. An empty shard
// still runs `fill` (it reserves the whole tensor's blocks).
template <typename F>
void fill_contiguous(const Tensor& out, F&& fill, bool shard = false) {
  if (out.numel() == 0) {
    if (shard) fill(out);
    return;
  }
  if (out.is_contiguous()) {
    fill(out);
    return;
  }
  Tensor tmp = empty(out.sizes(), out.dtype(), out.device());
  fill(tmp);
  ops::copy_into(out, tmp);
}

std::vector<TensorMeta> same_meta(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// Random ops have zero gradient w.r.t. the tensor they take their shape from (as in PyTorch).
TensorList zero_grad(BackwardCtx& c, const TensorList& g) { return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor()}; }

void uniform_kernel(const Tensor& out, double from, double to, Generator& gen, const ShardWindow& w) {
  if (!is_floating(out.dtype())) fail_not_implemented("check_uniform_bounds", out.dtype());  // PyTorch's names
  FLOW_RUNTIME_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  fill_contiguous(out, [&](const Tensor& o) {
    dispatch_floating(o.dtype(), "uniform_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = o.data<T>();
      if constexpr (std::is_same_v<T, double>) {
        const double range = to - from;
        FLOW_RUNTIME_CHECK(std::isfinite(range), "uniform_ expects to-from to be finite, but found to=", to,
                           " and from=", from);
        draw(o, p, w, gen, 2, [&](double* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 2, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) q[i + j] = u01_double(r[2 * j], r[2 * j + 1]) * range + from;
          });
        });
      } else {
        const float range = static_cast<float>(to - from), lo = static_cast<float>(from);
        FLOW_RUNTIME_CHECK(std::isfinite(range), "uniform_ expects to-from <= std::numeric_limits<",
                           dtype_name(o.dtype()), ">::max(), but found to=", to, " and from=", from,
                           " which result in to-from to exceed the limit");
        constexpr int bits = uniform_bits<T>();
        draw(o, p, w, gen, 4, [&](T* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 4, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) q[i + j] = static_cast<T>(u01_float(r[j], bits) * range + lo);
          });
        });
      }
    });
  }, w.active());
}

// Box-Muller: each pair of uniforms gives two normals.
void normal_kernel(const Tensor& out, double mean, double std, Generator& gen, const ShardWindow& w) {
  if (!is_floating(out.dtype())) fail_not_implemented("normal_kernel_cpu", out.dtype());
  FLOW_RUNTIME_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  fill_contiguous(out, [&](const Tensor& o) {
    dispatch_floating(o.dtype(), "normal_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = o.data<T>();
      if constexpr (std::is_same_v<T, double>) {
        draw(o, p, w, gen, 2, [&](double* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 2, [&](const PhiloxBlock& r, int64_t i, int c) {
            double u1 = 1.0 - u01_double(r[0], r[1]);  // (0, 1]: log stays finite
            double u2 = u01_double(r[2], r[3]);
            double rad = std::sqrt(-2.0 * std::log(u1)), th = kTwoPi * u2;
            q[i] = rad * std::cos(th) * std + mean;
            if (c > 1) q[i + 1] = rad * std::sin(th) * std + mean;
          });
        });
      } else {
        // block l of a batch holds two (u1, u2) pairs -> normals 4l..4l+3; the transform runs as one
        // vectorised loop per batch (libm's log/sin/cos went one element at a time)
        const float m = static_cast<float>(mean), sd = static_cast<float>(std);
        draw(o, p, w, gen, 4, [&](T* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_batch(s, len, 4, [&](const PhiloxBlock* blk, int64_t b, int nb) {
            constexpr int kPairs = 2 * kPhiloxBatch;
            float u1[kPairs], u2[kPairs], zc[kPairs], zs[kPairs];
            if (nb < kPhiloxBatch)  // the last, partial batch: the unused lanes get harmless inputs
              std::fill(u1 + 2 * nb, u1 + kPairs, 1.0f), std::fill(u2 + 2 * nb, u2 + kPairs, 0.0f);
            for (int l = 0; l < nb; ++l)
              for (int k = 0; k < 2; ++k) {
                u1[2 * l + k] = 1.0f - u01_float(blk[l][2 * k], 24);  // (0, 1]: log stays finite
                u2[2 * l + k] = u01_float(blk[l][2 * k + 1], 24);
              }
#pragma omp simd
            for (int j = 0; j < kPairs; ++j) {
              float rad = std::sqrt(-2.0f * vlog<float>(u1[j])), sn, cs;
              vec::sincos_turns_f32(u2[j], sn, cs);
              zc[j] = rad * cs * sd + m;
              zs[j] = rad * sn * sd + m;
            }
            const int64_t i0 = b * 4, cnt = std::min<int64_t>(4 * nb, len - i0);
            for (int64_t j = 0; j < cnt; ++j) q[i0 + j] = static_cast<T>((j & 1) ? zs[j >> 1] : zc[j >> 1]);
          });
        });
      }
    });
  }, w.active());
}

void exponential_kernel(const Tensor& out, double lambd, Generator& gen, const ShardWindow& w) {
  FLOW_RUNTIME_CHECK(is_floating(out.dtype()),
                     "Exponential distribution is a continuous probability distribution. "
                     "dtype must be a floating point but you specified ",
                     torch_type_name(out.dtype()));
  FLOW_RUNTIME_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  fill_contiguous(out, [&](const Tensor& o) {
    dispatch_floating(o.dtype(), "exponential_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = o.data<T>();
      if constexpr (std::is_same_v<T, double>) {
        draw(o, p, w, gen, 2, [&](double* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 2, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) q[i + j] = -std::log1p(-u01_double(r[2 * j], r[2 * j + 1])) / lambd;
          });
        });
      } else {
        const float inv = static_cast<float>(1.0 / lambd);
        draw(o, p, w, gen, 4, [&](T* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 4, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) q[i + j] = static_cast<T>(-std::log1p(-u01_float(r[j], 24)) * inv);
          });
        });
      }
    });
  }, w.active());
}

// Largest integer random_ may produce for a dtype (PyTorch: 2^digits for floats, the type's max for integers).
int64_t random_max(DType d) {
  switch (d) {
    case DType::Bool: return 1;
    case DType::UInt8: return 255;
    case DType::Int8: return 127;
    case DType::Int16: return 32767;
    case DType::Int32: return 2147483647;
    case DType::Int64: return std::numeric_limits<int64_t>::max();
    case DType::Float16: return int64_t(1) << 11;
    case DType::BFloat16: return int64_t(1) << 8;
    case DType::Float32: return int64_t(1) << 24;
    default: return int64_t(1) << 53;
  }
}
int64_t random_min(DType d) {
  switch (d) {
    case DType::Bool:
    case DType::UInt8: return 0;
    case DType::Int8: return -128;
    case DType::Int16: return -32768;
    case DType::Int32: return -2147483648LL;
    case DType::Int64: return std::numeric_limits<int64_t>::min();
    default: return -random_max(d);
  }
}

// Integers uniformly in [from, to_inclusive].
void random_kernel(const Tensor& out, std::optional<int64_t> from_opt, std::optional<int64_t> to_opt, Generator& gen,
                   const ShardWindow& w) {
  const DType dt = out.dtype();
  int64_t from = from_opt.value_or(0);
  int64_t to_incl;
  if (to_opt) {
    FLOW_RUNTIME_CHECK(from < *to_opt, "random_ expects 'from' to be less than 'to', but got from=", from,
                       " >= to=", *to_opt);
    to_incl = *to_opt - 1;
  } else {
    to_incl = random_max(dt);
    FLOW_RUNTIME_CHECK(from <= to_incl,
                       "random_ expects 'from' casted to dtype to be less than or equal to "
                       "'to_inc' casted to dtype, but got from=",
                       from, " > to_inc=", to_incl);
  }
  FLOW_RUNTIME_CHECK(from >= random_min(dt) && from <= random_max(dt), "random_: from is out of bounds for ",
                     dtype_name(dt));
  FLOW_RUNTIME_CHECK(to_incl >= random_min(dt) && to_incl <= random_max(dt), "random_: to - 1 is out of bounds for ",
                     dtype_name(dt));
  // range == 0 encodes the full 2^64 range
  const uint64_t range = static_cast<uint64_t>(to_incl) - static_cast<uint64_t>(from) + 1;
  fill_contiguous(out, [&](const Tensor& o) {
    dispatch_all(o.dtype(), "random_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = o.data<T>();
      auto put = [&](T* q, int64_t i, uint64_t x) {
        int64_t v = static_cast<int64_t>(static_cast<uint64_t>(from) + x);
        if constexpr (std::is_same_v<T, bool>) q[i] = v != 0;
        else q[i] = static_cast<T>(v);
      };
      if (range != 0 && range <= (uint64_t(1) << 32)) {
        draw(o, p, w, gen, 4, [&](T* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 4, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) put(q, i + j, r[j] % range);
          });
        });
      } else {
        draw(o, p, w, gen, 2, [&](T* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 2, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) {
              uint64_t x = (uint64_t(r[2 * j]) << 32) | r[2 * j + 1];
              put(q, i + j, range == 0 ? x : x % range);
            }
          });
        });
      }
    });
  }, w.active());
}

// out[i] = (u_i < prob(i)), with prob(i) either the constant p or probs[i] (contiguous float64, out's shape).
// With a shard window, u_i is the logical tensor's value at the block's element i: the block's uniform bits are
// drawn first (as the fills draw theirs), then compared.
void bernoulli_kernel(const Tensor& out, const double* probs, double p, Generator& gen, const ShardWindow& w) {
  fill_contiguous(out, [&](const Tensor& o) {
    const int64_t n = o.numel();
    dispatch_all(o.dtype(), "bernoulli", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = o.data<T>();
      auto put = [&](int64_t i, uint32_t bits) {
        double u = static_cast<double>(bits) * (1.0 / 4294967296.0);
        bool hit = u < (probs ? probs[i] : p);
        if constexpr (std::is_same_v<T, bool>) dst[i] = hit;
        else dst[i] = static_cast<T>(hit ? 1 : 0);
      };
      if (w.active()) {
        std::vector<uint32_t> bits(static_cast<size_t>(n));
        draw(o, bits.data(), w, gen, 4, [&](uint32_t* q, int64_t len, const PhiloxStream& s) {
          for_each_philox_block(s, len, 4, [&](const PhiloxBlock& r, int64_t i, int c) {
            for (int j = 0; j < c; ++j) q[i + j] = r[j];
          });
        });
        parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) put(i, bits[i]);
        });
        return;
      }
      PhiloxStream s = gen.reserve(ceil_div(n, 4));
      for_each_philox_block(s, n, 4, [&](const PhiloxBlock& r, int64_t i, int c) {
        for (int j = 0; j < c; ++j) put(i + j, r[j]);
      });
    });
  }, w.active());
}

void bernoulli_op_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  auto gen = generator_attr(a, "generator");
  if (!a.none("p")) {
    double p = a.f("p");
    FLOW_RUNTIME_CHECK(p >= 0.0 && p <= 1.0, "bernoulli_ expects p to be in [0, 1], but got p=", p);
    bernoulli_kernel(out[0], nullptr, p, *gen, shard_attr(a, out[0], "bernoulli"));
    return;
  }
  const Tensor& self = in[0];
  FLOW_RUNTIME_CHECK(is_floating(self.dtype()), "bernoulli: expected a floating point tensor of probabilities, got ",
                     dtype_name(self.dtype()));
  // Probabilities as contiguous float64 (kernel-level copy: no autograd), read before `out` (maybe self) is written.
  Tensor probs = empty(self.sizes(), DType::Float64, self.device());
  ops::copy_into(probs, self);
  const double* pp = probs.data<double>();
  for (int64_t i = 0; i < probs.numel(); ++i)
    FLOW_RUNTIME_CHECK(pp[i] >= 0.0 && pp[i] <= 1.0,
                       "bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
  bernoulli_kernel(out[0], pp, 0.0, *gen, shard_attr(a, out[0], "bernoulli"));
}

// Fisher-Yates, as PyTorch's CPU randperm: for i, swap r[i] with r[i + rand % (n - i)].
void randperm_kernel(const Tensor& out, int64_t n, Generator& gen) {
  if (n == 0) return;
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::vector<uint64_t> draws(std::max<int64_t>(n - 1, 0));
  PhiloxStream s = gen.reserve(ceil_div(n - 1, 2));
  for_each_philox_block(s, n - 1, 2, [&](const PhiloxBlock& r, int64_t i, int c) {
    for (int j = 0; j < c; ++j) draws[i + j] = (uint64_t(r[2 * j]) << 32) | r[2 * j + 1];
  });
  for (int64_t i = 0; i + 1 < n; ++i) std::swap(perm[i], perm[i + static_cast<int64_t>(draws[i] % uint64_t(n - i))]);
  dispatch_numeric(out.dtype(), "randperm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t st = out.stride(0);
    for (int64_t i = 0; i < n; ++i) p[i * st] = static_cast<T>(perm[i]);
  });
}

}  // namespace

FLOW_OP(uniform)
    .schema("uniform(Tensor self, float from=0, float to=1, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      uniform_kernel(out[0], a.f("from"), a.f("to"), *generator_attr(a, "generator"),
                     shard_attr(a, out[0], "uniform_"));
    })
    .inplace_variant()
    .backward(zero_grad);

FLOW_OP(normal)
    .schema("normal(Tensor self, float mean=0, float std=1, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      normal_kernel(out[0], a.f("mean"), a.f("std"), *generator_attr(a, "generator"), shard_attr(a, out[0], "normal_"));
    })
    .inplace_variant()
    .backward(zero_grad);

// normal(mean, std) with tensor mean and/or std (the other a wrapped number), broadcast: standard normals in the
// result dtype, scaled and shifted. The result takes the dtype of mean, or of std when mean is a number. As in
// PyTorch the gradients w.r.t. mean and std are zero: the sampling is not reparameterised (write
// mean + std * randn_like(mean) for that).
FLOW_OP(_normal_tensor)
    .schema("_normal_tensor(Tensor mean, Tensor std, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom | kBroadcastBinary)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      for (const Tensor& t : in)
        if (!t.impl()->is_wrapped_number && !is_floating(t.dtype()))
          fail_not_implemented("normal_kernel_cpu", t.dtype());
      const Tensor& shaper = in[0].impl()->is_wrapped_number ? in[1] : in[0];
      return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "normal"), shaper.dtype(), shaper.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      autograd::AutoGradMode no_grad(false);  // the op is recorded as one node, with the zero gradients below
      const Tensor& std = in[1];
      Tensor sd = ops::contiguous(ops::to_dtype(std, DType::Float64));
      const double* sp = sd.data<double>();
      for (int64_t i = 0; i < sd.numel(); ++i) {
        if (!(sp[i] < 0)) continue;  // NaN passes, as in PyTorch
        if (std.impl()->is_wrapped_number) fail(ErrorKind::Runtime, "normal expects std >= 0.0, but found std ", sp[i]);
        fail(ErrorKind::Runtime, "normal expects all elements of std >= 0.0");
      }
      Tensor z = empty(out[0].sizes(), out[0].dtype(), out[0].device());
      normal_kernel(z, 0.0, 1.0, *generator_attr(a, "generator"), shard_attr(a, out[0], "normal"));
      ops::copy_into(out[0], ops::add(ops::mul(z, std), in[0]));
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::zeros_like(g[0]) : Tensor(), c.needs(1) ? ops::zeros_like(g[0]) : Tensor()};
    });

FLOW_OP(exponential)
    .schema("exponential(Tensor self, float lambd=1, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      exponential_kernel(out[0], a.f("lambd"), *generator_attr(a, "generator"), shard_attr(a, out[0], "exponential_"));
    })
    .inplace_variant()
    .backward(zero_grad);

// random(self, from=None, to=None): integers in [from, to), or up to the dtype's limit when `to` is None.
FLOW_OP(random)
    .schema("random(Tensor self, int? from=None, int? to=None, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta(same_meta)
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      random_kernel(out[0], a.opt_i("from"), a.opt_i("to"), *generator_attr(a, "generator"),
                    shard_attr(a, out[0], "random_"));
    })
    .inplace_variant()
    .backward(zero_grad);

// bernoulli(self): 0/1 draws with probabilities self; bernoulli(self, p): with probability p, shaped like self.
FLOW_OP(bernoulli)
    .schema("bernoulli(Tensor self, float? p=None, *, int? generator=None, int[]? shard=None) -> Tensor")
    .traits(kRandom)
    .meta(same_meta)
    .cpu_out(bernoulli_op_kernel)
    .inplace_variant()
    .backward(zero_grad);

FLOW_OP(randperm)
    .schema("randperm(int n, *, ScalarType? dtype=None, int? generator=None, Device? device=None) -> Tensor")
    .traits(kRandom | kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      int64_t n = a.i("n");
      FLOW_RUNTIME_CHECK(n >= 0, "randperm: n must be non-negative, got", n);
      DType dt = a.opt_dtype("dtype").value_or(DType::Int64);
      FLOW_RUNTIME_CHECK(dt != DType::Bool, "randperm: not implemented for 'bool'");
      if (is_floating(dt)) {
        int64_t lim = random_max(dt) + 1;
        FLOW_RUNTIME_CHECK(n <= lim, "randperm: n cannot be greater than ", lim, " for ", dtype_name(dt), " type.");
      } else {
        FLOW_RUNTIME_CHECK(n - 1 <= random_max(dt), "randperm: n is too large for result tensor type: '",
                           dtype_name(dt), "'");
      }
      return {{Shape{n}, dt, Device{}}};
    })
    .cpu_out([](const TensorList&, const TensorList& out, const Attrs& a) {
      randperm_kernel(out[0], a.i("n"), *generator_attr(a, "generator"));
    });

namespace ops {
static std::vector<AttrValue> gen_attr(std::optional<int64_t> g) {
  return {g ? AttrValue(*g) : AttrValue(std::monostate{})};
}
Tensor uniform_(const Tensor& self, double from, double to, std::optional<int64_t> generator) {
  return call1("uniform_", {self}, {from, to, gen_attr(generator)[0], std::monostate{}});
}
Tensor normal_(const Tensor& self, double mean, double std, std::optional<int64_t> generator) {
  return call1("normal_", {self}, {mean, std, gen_attr(generator)[0], std::monostate{}});
}
Tensor bernoulli(const Tensor& p, std::optional<int64_t> generator) {
  return call1("bernoulli", {p}, {std::monostate{}, gen_attr(generator)[0]});
}
Tensor bernoulli(const Tensor& self, double p, std::optional<int64_t> generator) {
  return call1("bernoulli", {self}, {p, gen_attr(generator)[0]});
}
}  // namespace ops

}  // namespace flow
