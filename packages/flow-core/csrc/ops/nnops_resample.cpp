// pad (constant / reflect / replicate / circular over the last 1-3 dims) and upsampling (nearest, and
// linear / bilinear / trilinear with or without align_corners). Both are linear maps described per
// spatial dim by small tables (source index and weight per output coordinate), so one gather kernel and one
// scatter-add kernel serve every mode; each backward is the transposed map, whose backward is the forward.
#include <cmath>
#include <string>

#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nn::contig_as;

// Output coordinate o of spatial dim j reads input coords idx[t][o] with weights w[t][o] (t < taps).
struct DimMap {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> idx[2];  // -1: reads nothing (constant padding)
  std::vector<double> w[2];
};

// ---- maps ----------------------------------------------------------------------------------------------
// Negative pads crop. Reflect and replicate index the whole input (so a crop on one side can still reflect
// what it removed, as in torch); circular crops first and wraps around what is left.
DimMap pad_map(int64_t in, int64_t l, int64_t r, const std::string& mode) {
  DimMap m;
  m.in = in;
  m.out = in + l + r;
  m.idx[0].resize(m.out);
  m.w[0].assign(m.out, 1.0);
  const int64_t crop_l = std::max<int64_t>(-l, 0), kept = in - crop_l - std::max<int64_t>(-r, 0);
  for (int64_t o = 0; o < m.out; ++o) {
    int64_t i = o - l;
    if (mode == "constant") {
      if (i < 0 || i >= in) i = -1;
    } else if (mode == "reflect") {
      if (in == 1) i = 0;
      else {
        int64_t period = 2 * (in - 1);
        i = ((i % period) + period) % period;
        if (i >= in) i = period - i;
      }
    } else if (mode == "replicate") {
      i = std::min(std::max<int64_t>(i, 0), in - 1);
    } else {  // circular
      int64_t j = o - std::max<int64_t>(l, 0);
      i = crop_l + ((j % kept) + kept) % kept;
    }
    m.idx[0][o] = i;
  }
  return m;
}

// torch's area_pixel_compute_scale / source index, computed in the kernel's accumulation type.
template <typename A>
A area_scale(int64_t in, int64_t out, bool align, double scale) {
  if (align) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  return scale > 0 ? static_cast<A>(1.0 / scale) : static_cast<A>(in) / static_cast<A>(out);
}

template <typename A>
DimMap linear_map(int64_t in, int64_t out, bool align, double scale) {
  DimMap m;
  m.in = in, m.out = out, m.taps = 2;
  for (int t = 0; t < 2; ++t) m.idx[t].resize(out), m.w[t].resize(out);
  // A dim whose size does not change is copied, whatever scale_factor says (torch's kernels do the same).
  A s = out == in ? A(1) : area_scale<A>(in, out, align, scale);
  for (int64_t o = 0; o < out; ++o) {
    A src = align ? s * static_cast<A>(o) : std::max(s * (static_cast<A>(o) + A(0.5)) - A(0.5), A(0));
    int64_t i0 = static_cast<int64_t>(src);
    int64_t off = i0 < in - 1 ? 1 : 0;
    A l1 = src - static_cast<A>(i0), l0 = A(1) - l1;
    m.idx[0][o] = i0, m.idx[1][o] = i0 + off;
    m.w[0][o] = l0, m.w[1][o] = l1;
  }
  return m;
}

// `shortcuts`: torch's 2-D nearest kernel copies a dim that keeps its size and halves indices for one that
// doubles, ignoring scale_factor there; its 1-D and 3-D kernels always apply the scale.
DimMap nearest_map(int64_t in, int64_t out, double scale, bool shortcuts) {
  DimMap m;
  m.in = in, m.out = out;
  m.idx[0].resize(out);
  m.w[0].assign(out, 1.0);
  float s = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i;
    if (shortcuts && out == in) i = o;
    else if (shortcuts && out == 2 * in) i = o >> 1;
    else i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
    m.idx[0][o] = i;
  }
  return m;
}

// ---- kernels over [B, spatial...] with k = maps.size() spatial dims --------------------------------------
// out[b, o...] = sum over taps of prod w * in[b, idx...]
template <typename T>
void gather(const T* x, T* y, int64_t B, const std::vector<DimMap>& maps) {
  using A = acc_t<T>;
  const int k = static_cast<int>(maps.size());
  int64_t in_n = 1, out_n = 1;
  for (auto& m : maps) in_n *= m.in, out_n *= m.out;
  const int64_t last_out = maps[k - 1].out;
  const int64_t rows = B * (out_n / std::max<int64_t>(last_out, 1));
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(last_out, 1)),
               [&](int64_t rb, int64_t re) {
    std::vector<int64_t> oc(k, 0);
    for (int64_t r = rb; r < re; ++r) {
      int64_t rem = r;
      for (int d = k - 2; d >= 0; --d) oc[d] = rem % maps[d].out, rem /= maps[d].out;
      const int64_t b = rem;
      const T* xb = x + b * in_n;
      T* yr = y + r * last_out;
      const DimMap& ml = maps[k - 1];
      // enumerate taps of the outer spatial dims (at most 2^2 combinations)
      int outer_taps = 1;
      for (int d = 0; d < k - 1; ++d) outer_taps *= maps[d].taps;
      for (int64_t o = 0; o < last_out; ++o) yr[o] = T(0);
      std::vector<A> acc(last_out, A(0));
      for (int ct = 0; ct < outer_taps; ++ct) {
        int64_t off = 0;
        A wprod = 1;
        bool valid = true;
        int code = ct;
        for (int d = 0; d < k - 1; ++d) {
          int t = code % maps[d].taps;
          code /= maps[d].taps;
          int64_t i = maps[d].idx[t][oc[d]];
          if (i < 0) {
            valid = false;
            break;
          }
          off = off * maps[d].in + i;
          wprod *= static_cast<A>(maps[d].w[t][oc[d]]);
        }
        if (!valid) continue;
        const T* xr = xb + off * ml.in;
        for (int t = 0; t < ml.taps; ++t) {
          const int64_t* id = ml.idx[t].data();
          const double* w = ml.w[t].data();
          for (int64_t o = 0; o < last_out; ++o)
            if (id[o] >= 0) acc[o] += wprod * static_cast<A>(w[o]) * static_cast<A>(xr[id[o]]);
        }
      }
      for (int64_t o = 0; o < last_out; ++o) yr[o] = static_cast<T>(acc[o]);
    }
  });
}

// gx[b, idx...] += prod w * gy[b, o...]; parallel over b only (taps of one b may collide).
template <typename T>
void scatter(const T* gy, T* gx, int64_t B, const std::vector<DimMap>& maps) {
  using A = acc_t<T>;
  const int k = static_cast<int>(maps.size());
  int64_t in_n = 1, out_n = 1;
  for (auto& m : maps) in_n *= m.in, out_n *= m.out;
  const int64_t last_out = maps[k - 1].out;
  const int64_t rows_per_b = out_n / std::max<int64_t>(last_out, 1);
  parallel_for(B, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(out_n, 1)), [&](int64_t bb, int64_t be) {
    std::vector<A> acc(in_n);
    std::vector<int64_t> oc(k, 0);
    for (int64_t b = bb; b < be; ++b) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t r = 0; r < rows_per_b; ++r) {
        int64_t rem = r;
        for (int d = k - 2; d >= 0; --d) oc[d] = rem % maps[d].out, rem /= maps[d].out;
        const T* gr = gy + (b * rows_per_b + r) * last_out;
        const DimMap& ml = maps[k - 1];
        int outer_taps = 1;
        for (int d = 0; d < k - 1; ++d) outer_taps *= maps[d].taps;
        for (int ct = 0; ct < outer_taps; ++ct) {
          int64_t off = 0;
          A wprod = 1;
          bool valid = true;
          int code = ct;
          for (int d = 0; d < k - 1; ++d) {
            int t = code % maps[d].taps;
            code /= maps[d].taps;
            int64_t i = maps[d].idx[t][oc[d]];
            if (i < 0) {
              valid = false;
              break;
            }
            off = off * maps[d].in + i;
            wprod *= static_cast<A>(maps[d].w[t][oc[d]]);
          }
          if (!valid) continue;
          A* ar = acc.data() + off * ml.in;
          for (int t = 0; t < ml.taps; ++t) {
            const int64_t* id = ml.idx[t].data();
            const double* w = ml.w[t].data();
            for (int64_t o = 0; o < last_out; ++o)
              if (id[o] >= 0) ar[id[o]] += wprod * static_cast<A>(w[o]) * static_cast<A>(gr[o]);
          }
        }
      }
      T* gb = gx + b * in_n;
      for (int64_t i = 0; i < in_n; ++i) gb[i] = static_cast<T>(acc[i]);
    }
  });
}

// Runs the gather (forward) or scatter (backward) with maps built for the kernel's dtype.
template <typename MakeMaps>
void run_map(const Tensor& src, const Tensor& out, int k, bool transpose, const char* op, MakeMaps make_maps) {
  DType d = out.dtype();
  FLOW_RUNTIME_CHECK(is_floating(d) || !transpose, op, ": expected a floating point gradient");
  Tensor x = contig_as(src, d);
  Tensor o = out.is_contiguous() ? out : empty(out.sizes(), d);
  int64_t B = 1;
  for (int64_t i = 0; i < out.dim() - k; ++i) B *= out.size(i);
  dispatch_all(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      fail(ErrorKind::Runtime, op, ": not implemented for 'Bool'");
    } else {
      using A = std::conditional_t<std::is_floating_point_v<acc_t<T>>, acc_t<T>, double>;
      std::vector<DimMap> maps = make_maps(TypeTag<A>{});
      if (o.numel() == 0 && !transpose) return;
      if (transpose) {
        if (o.numel() == 0) return;
        if (B == 0 || x.numel() == 0) {
          T* p = o.data<T>();
          for (int64_t i = 0; i < o.numel(); ++i) p[i] = T(0);
          return;
        }
        if constexpr (std::is_floating_point_v<acc_t<T>>) scatter<T>(x.data<T>(), o.data<T>(), B, maps);
      } else {
        gather<T>(x.data<T>(), o.data<T>(), B, maps);
      }
    }
  });
  if (!o.is_same(out)) ops::copy_into(out, o);
}

// ---- pad ----------------------------------------------------------------------------------------------
struct PadSpec {
  int k;
  std::vector<int64_t> lo, hi;  // per padded dim, outermost first
};
PadSpec pad_spec(const Shape& in, const std::vector<int64_t>& pad, const std::string& mode) {
  FLOW_RUNTIME_CHECK(pad.size() % 2 == 0, "Padding length must be divisible by 2");
  int k = static_cast<int>(pad.size() / 2);
  FLOW_RUNTIME_CHECK(k <= static_cast<int>(in.size()),
                     "Padding length should be less than or equal to two times the "
                     "input dimension but got padding length ",
                     pad.size(), " and input of dimension ", in.size());
  FLOW_VALUE_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
                   "Unrecognised padding mode ", mode);
  if (mode != "constant") {
    FLOW_CHECK(k >= 1 && k <= 3 && (static_cast<int>(in.size()) == k + 1 || static_cast<int>(in.size()) == k + 2),
               NotImplemented, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  }
  PadSpec s{k, std::vector<int64_t>(k), std::vector<int64_t>(k)};
  for (int j = 0; j < k; ++j) {
    // pad lists the last dim first
    s.lo[k - 1 - j] = pad[2 * j];
    s.hi[k - 1 - j] = pad[2 * j + 1];
  }
  for (int j = 0; j < k; ++j) {
    int64_t d = static_cast<int64_t>(in.size()) - k + j, n = in[d];
    if (mode == "constant") {
      FLOW_RUNTIME_CHECK(n + s.lo[j] + s.hi[j] >= 0, "The input size ", n, ", plus negative padding ", s.lo[j], " and ",
                         s.hi[j], " resulted in a negative output size, which is invalid. Check dimension ", d,
                         " of your input.");
    } else if (mode == "reflect") {
      FLOW_RUNTIME_CHECK(s.lo[j] < n && s.hi[j] < n,
                         "Argument #4: Padding size should be less than the corresponding "
                         "input dimension, but got: padding (",
                         s.lo[j], ", ", s.hi[j], ") at dimension ", d, " of input ", shape_str(in));
    } else if (mode == "circular") {
      // the wrap reads what the negative pads leave, so a pad may not exceed that
      int64_t kept = n - std::max<int64_t>(-s.lo[j], 0) - std::max<int64_t>(-s.hi[j], 0);
      FLOW_RUNTIME_CHECK(s.lo[j] <= kept && s.hi[j] <= kept, "Padding value causes wrapping around more than once.");
    } else {
      FLOW_RUNTIME_CHECK(n > 0 || (s.lo[j] == 0 && s.hi[j] == 0), "replicate padding: input dimension ", d,
                         " is empty");
    }
    if (mode != "constant")
      FLOW_RUNTIME_CHECK(n > 0, "Expected a non-empty input dimension ", d, " for ", mode, " padding");
    // negative pads crop; torch's 1-D kernels refuse to crop everything, its 2-D/3-D ones return empty dims
    if ((mode == "reflect" || mode == "replicate") && s.k == 1)
      FLOW_RUNTIME_CHECK(n + s.lo[j] + s.hi[j] > 0, "input (", "DHW"[3 - s.k + j], ": ", n,
                         ") is too small. Calculated output ", "DHW"[3 - s.k + j], ": ", n + s.lo[j] + s.hi[j]);
  }
  return s;
}

std::vector<DimMap> pad_maps(const Shape& in, const PadSpec& s, const std::string& mode) {
  std::vector<DimMap> maps;
  for (int j = 0; j < s.k; ++j) maps.push_back(pad_map(in[in.size() - s.k + j], s.lo[j], s.hi[j], mode));
  return maps;
}

Shape padded_shape(const Shape& in, const PadSpec& s) {
  Shape o = in;
  for (int j = 0; j < s.k; ++j) o[in.size() - s.k + j] += s.lo[j] + s.hi[j];
  return o;
}

// ---- upsample -----------------------------------------------------------------------------------------
int up_k(const Tensor& x, const std::vector<int64_t>& out_size, const char* op) {
  int k = static_cast<int>(out_size.size());
  FLOW_RUNTIME_CHECK(k >= 1 && k <= 3 && x.dim() == k + 2, op, ": expected a ", k + 2, "-D input (N, C, ",
                     k == 1   ? "W"
                     : k == 2 ? "H, W"
                              : "D, H, W",
                     ") for ", k, " output sizes, got ", x.dim(), "-D");
  for (int j = 0; j < k; ++j) {
    FLOW_RUNTIME_CHECK(out_size[j] > 0 && x.size(2 + j) > 0, op,
                       ": Input and output sizes should be greater than 0, "
                       "but got input (",
                       shape_str(Shape(x.sizes().begin() + 2, x.sizes().end())), ") and output (", shape_str(out_size),
                       ")");
  }
  return k;
}
// The backward helpers as ops a user can call: input_size must be the (N, C, spatial...) of an input that
// upsamples to grad_output's shape, and scales (when given) one per spatial dim.
Shape checked_up_input(const Tensor& grad, const Attrs& a, const char* scales, const char* op) {
  const auto &isz = a.ints("input_size"), &osz = a.ints("output_size");
  const int k = static_cast<int>(osz.size());
  FLOW_RUNTIME_CHECK(k >= 1 && k <= 3 && static_cast<int>(isz.size()) == k + 2 && grad.dim() == k + 2, op,
                     ": expected input_size of ", k + 2, " and a ", k + 2, "-D grad_output for ", k,
                     " output sizes, got input_size ", shape_str(isz), " and grad_output ", shape_str(grad.sizes()));
  bool ok = grad.size(0) == isz[0] && grad.size(1) == isz[1];
  for (int j = 0; j < k; ++j) ok = ok && isz[2 + j] > 0 && osz[j] > 0 && grad.size(2 + j) == osz[j];
  FLOW_RUNTIME_CHECK(ok, op, ": grad_output ", shape_str(grad.sizes()), " does not match input_size ", shape_str(isz),
                     " upsampled to ", shape_str(osz));
  FLOW_RUNTIME_CHECK(a.none(scales) || static_cast<int>(a.floats(scales).size()) == k, op, ": expected ", k,
                     " scales, got ", a.floats(scales).size());
  return Shape(isz.begin(), isz.end());
}

double scale_at(const Attrs& a, const char* scales, int j) {
  if (a.none(scales)) return 0.0;
  const auto& v = a.floats(scales);
  return j < static_cast<int>(v.size()) ? v[j] : 0.0;
}
Shape up_shape(const Shape& in, const std::vector<int64_t>& os) {
  Shape s(in.begin(), in.begin() + 2);
  s.insert(s.end(), os.begin(), os.end());
  return s;
}

}  // namespace

FLOW_OP(pad)
    .schema("pad(Tensor self, int[] pad, str mode='constant', float? value=None) -> Tensor")
    .traits(kShape)
    .meta([](const TensorList& in, const Attrs& a) {
      PadSpec s = pad_spec(in[0].sizes(), a.ints("pad"), a.str("mode"));
      return std::vector<TensorMeta>{{padded_shape(in[0].sizes(), s), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const std::string& mode = a.str("mode");
      PadSpec s = pad_spec(in[0].sizes(), a.ints("pad"), mode);
      if (s.k == 0) return ops::copy_into(out[0], in[0]);
      if (in[0].dtype() == DType::Bool) {
        // bool pads by copying values, so run it on bytes; torch's reflect/replicate kernels refuse bool
        FLOW_CHECK(mode == "constant" || mode == "circular", NotImplemented, "\"",
                   mode == "reflect" ? "reflection" : "replication", "_pad", s.k, "d\" not implemented for 'Bool'");
        Tensor r = ops::call1("pad", {ops::to_dtype(in[0], DType::UInt8)}, a.values);
        return ops::copy_into(out[0], r);
      }
      double value = a.none("value") ? 0.0 : a.f("value");
      if (mode == "constant") ops::copy_into(out[0], ops::scalar_tensor(Scalar(value), out[0].dtype()));
      if (out[0].numel() == 0) return;
      if (mode == "constant" && value != 0.0) {
        // gather writes zeros where it reads nothing; restore the fill value there
        Tensor tmp = empty(out[0].sizes(), out[0].dtype());
        run_map(in[0], tmp, s.k, false, "pad", [&](auto) { return pad_maps(in[0].sizes(), s, mode); });
        Tensor mask = empty(out[0].sizes(), DType::Float64);
        Tensor ones = ops::full(in[0].sizes(), Scalar(1.0), DType::Float64);
        run_map(ones, mask, s.k, false, "pad", [&](auto) { return pad_maps(in[0].sizes(), s, mode); });
        dispatch_all(out[0].dtype(), "pad", [&](auto tag) {
          using T = typename decltype(tag)::type;
          Tensor oc = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), out[0].dtype());
          const T* tp = tmp.data<T>();
          const double* mp = mask.data<double>();
          T* op_ = oc.data<T>();
          T fill = static_cast<T>(value);
          for (int64_t i = 0; i < oc.numel(); ++i) op_[i] = mp[i] != 0.0 ? tp[i] : fill;
          if (!oc.is_same(out[0])) ops::copy_into(out[0], oc);
        });
        return;
      }
      run_map(in[0], out[0], s.k, false, "pad", [&](auto) { return pad_maps(in[0].sizes(), s, mode); });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      std::vector<int64_t> sizes(c.input_meta(0).sizes.begin(), c.input_meta(0).sizes.end());
      return {ops::call1("pad_backward", {g[0]}, {sizes, c.attrs.ints("pad"), c.attrs.str("mode")})};
    });

FLOW_OP(pad_backward)
    .schema("pad_backward(Tensor grad_output, int[] input_size, int[] pad, str mode) -> Tensor")
    .traits(kShape | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape s(a.ints("input_size").begin(), a.ints("input_size").end());
      return std::vector<TensorMeta>{{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Shape isz(a.ints("input_size").begin(), a.ints("input_size").end());
      PadSpec s = pad_spec(isz, a.ints("pad"), a.str("mode"));
      FLOW_RUNTIME_CHECK(in[0].sizes() == padded_shape(isz, s), "pad_backward: grad_output has shape ",
                         shape_str(in[0].sizes()), ", expected ", shape_str(padded_shape(isz, s)));
      if (s.k == 0) return ops::copy_into(out[0], in[0]);
      run_map(in[0], out[0], s.k, true, "pad_backward", [&](auto) { return pad_maps(isz, s, a.str("mode")); });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("pad", {g[0]}, {c.attrs.ints("pad"), c.attrs.str("mode"), 0.0})};
    });

FLOW_OP(upsample_nearest)
    .schema("upsample_nearest(Tensor self, int[] output_size, float[]? scales=None) -> Tensor")
    .traits(kShape)
    .meta([](const TensorList& in, const Attrs& a) {
      up_k(in[0], a.ints("output_size"), "upsample_nearest");
      return std::vector<TensorMeta>{{up_shape(in[0].sizes(), a.ints("output_size")), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int k = up_k(in[0], a.ints("output_size"), "upsample_nearest");
      run_map(in[0], out[0], k, false, "upsample_nearest", [&](auto) {
        std::vector<DimMap> m;
        for (int j = 0; j < k; ++j)
          m.push_back(nearest_map(in[0].size(2 + j), a.ints("output_size")[j], scale_at(a, "scales", j), k == 2));
        return m;
      });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      std::vector<int64_t> sizes(c.input_meta(0).sizes.begin(), c.input_meta(0).sizes.end());
      return {
          ops::call1("upsample_nearest_backward", {g[0]}, {sizes, c.attrs.ints("output_size"), c.attrs.at("scales")})};
    });

FLOW_OP(upsample_nearest_backward)
    .schema(
        "upsample_nearest_backward(Tensor grad_output, int[] input_size, int[] output_size, float[]? scales=None) -> "
        "Tensor")
    .traits(kShape | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape s = checked_up_input(in[0], a, "scales", "upsample_nearest_backward");
      return std::vector<TensorMeta>{{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const auto& isz = a.ints("input_size");
      int k = static_cast<int>(a.ints("output_size").size());
      run_map(in[0], out[0], k, true, "upsample_nearest_backward", [&](auto) {
        std::vector<DimMap> m;
        for (int j = 0; j < k; ++j)
          m.push_back(nearest_map(isz[2 + j], a.ints("output_size")[j], scale_at(a, "scales", j), k == 2));
        return m;
      });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("upsample_nearest", {g[0]}, {c.attrs.ints("output_size"), c.attrs.at("scales")})};
    });

FLOW_OP(upsample_linear)
    .schema("upsample_linear(Tensor self, int[] output_size, bool align_corners, float[]? scales=None) -> Tensor")
    .traits(kShape)
    .meta([](const TensorList& in, const Attrs& a) {
      up_k(in[0], a.ints("output_size"), "upsample_linear");
      nn::float_dtype_of(in[0], "upsample_linear");
      return std::vector<TensorMeta>{{up_shape(in[0].sizes(), a.ints("output_size")), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int k = up_k(in[0], a.ints("output_size"), "upsample_linear");
      run_map(in[0], out[0], k, false, "upsample_linear", [&](auto tag) {
        using A = typename decltype(tag)::type;
        std::vector<DimMap> m;
        for (int j = 0; j < k; ++j)
          m.push_back(linear_map<A>(in[0].size(2 + j), a.ints("output_size")[j], a.b("align_corners"),
                                    scale_at(a, "scales", j)));
        return m;
      });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      std::vector<int64_t> sizes(c.input_meta(0).sizes.begin(), c.input_meta(0).sizes.end());
      return {ops::call1("upsample_linear_backward", {g[0]},
                         {sizes, c.attrs.ints("output_size"), c.attrs.b("align_corners"), c.attrs.at("scales")})};
    });

FLOW_OP(upsample_linear_backward)
    .schema(
        "upsample_linear_backward(Tensor grad_output, int[] input_size, int[] output_size, bool align_corners, "
        "float[]? scales=None) -> Tensor")
    .traits(kShape | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape s = checked_up_input(in[0], a, "scales", "upsample_linear_backward");
      return std::vector<TensorMeta>{{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const auto& isz = a.ints("input_size");
      int k = static_cast<int>(a.ints("output_size").size());
      run_map(in[0], out[0], k, true, "upsample_linear_backward", [&](auto tag) {
        using A = typename decltype(tag)::type;
        std::vector<DimMap> m;
        for (int j = 0; j < k; ++j)
          m.push_back(
              linear_map<A>(isz[2 + j], a.ints("output_size")[j], a.b("align_corners"), scale_at(a, "scales", j)));
        return m;
      });
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("upsample_linear", {g[0]},
                         {c.attrs.ints("output_size"), c.attrs.b("align_corners"), c.attrs.at("scales")})};
    });

}  // namespace flow
