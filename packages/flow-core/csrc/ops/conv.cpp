// Convolution (1-D/2-D/3-D, grouped, transposed) and its two gradient ops. Transposed convolution is the
// input-gradient of a convolution, so three kernels (forward, backward-data, backward-weight) serve all,
// and the gradient ops' own backwards are again those three (double backward works).
#include "../kernels/cpu/conv.h"

#include "functions.h"

namespace flow {
namespace {

std::vector<int64_t> expand_param(const std::vector<int64_t>& v, size_t ns, const char* name) {
  if (v.size() == ns) return v;
  FLOW_RUNTIME_CHECK(v.size() == 1, "expected ", name, " to be a single integer value or a list of ", ns,
                     " values to match the convolution dimensions, but got ", name, "=", shape_str(v));
  return std::vector<int64_t>(ns, v[0]);
}

// The attributes stride, padding, dilation and groups (convolution and its two gradient ops name them alike).
ConvGeom geom_from(const Attrs& a, size_t ns) {
  ConvGeom g;
  g.stride = expand_param(a.ints("stride"), ns, "stride");
  g.padding = expand_param(a.ints("padding"), ns, "padding");
  g.dilation = expand_param(a.ints("dilation"), ns, "dilation");
  g.groups = a.i("groups");
  for (size_t i = 0; i < ns; ++i) {
    FLOW_RUNTIME_CHECK(g.stride[i] > 0, "non-positive stride is not supported");
    FLOW_RUNTIME_CHECK(g.padding[i] >= 0, "negative padding is not supported");
    FLOW_RUNTIME_CHECK(g.dilation[i] > 0, "dilation should be greater than zero");
  }
  FLOW_RUNTIME_CHECK(g.groups > 0, "non-positive groups is not supported");
  return g;
}

std::vector<int64_t> to_vec(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

// A plain convolution's output length along one dim; PyTorch's error when the dilated kernel is longer than
// the padded input.
int64_t conv_out_len(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t eff = d * (k - 1) + 1;
  FLOW_RUNTIME_CHECK(n + 2 * p >= eff, "Calculated padded input size per channel: (", n + 2 * p, "). Kernel size: (",
                     eff, "). Kernel size can't be greater than actual input size");
  return (n + 2 * p - eff) / s + 1;
}

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
struct ConvArgs {
  ConvGeom g;
  bool transposed;
  std::vector<int64_t> output_padding;
  Shape out;
};

ConvArgs check_conv(const TensorList& in, const Attrs& a) {
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  FLOW_RUNTIME_CHECK(w.dim() >= 3 && w.dim() <= 5, "convolution: weight should have 3 to 5 dimensions, got ", w.dim());
  FLOW_RUNTIME_CHECK(x.dim() == w.dim(), "Expected ", w.dim(), "-dimensional input for ", w.dim(),
                     "-dimensional weight ", shape_str(w.sizes()), ", but got ", x.dim(), "-dimensional input of size ",
                     shape_str(x.sizes()), " instead");
  size_t ns = static_cast<size_t>(w.dim() - 2);
  ConvArgs r;
  r.g = geom_from(a, ns);
  // the packed forward (convolution_forward_packed) has neither: a plain convolution
  r.transposed = a.has("transposed") && a.b("transposed");
  r.output_padding = a.has("output_padding") ? expand_param(a.ints("output_padding"), ns, "output_padding")
                                             : std::vector<int64_t>(ns, 0);
  FLOW_RUNTIME_CHECK(x.dtype() == w.dtype(), "Input type (", dtype_name(x.dtype()), ") and weight type (",
                     dtype_name(w.dtype()), ") should be the same");
  FLOW_RUNTIME_CHECK(!b.defined() || b.dtype() == w.dtype(), "Input type (", dtype_name(x.dtype()), ") and bias type (",
                     dtype_name(b.dtype()), ") should be the same");
  int64_t G = r.g.groups;
  int64_t out_ch;
  if (!r.transposed) {
    FLOW_RUNTIME_CHECK(w.size(0) % G == 0, "Given groups=", G, ", expected weight to be divisible by ", G,
                       " at dimension 0, but got weight of size ", shape_str(w.sizes()), " instead");
    FLOW_RUNTIME_CHECK(x.size(1) == w.size(1) * G, "Given groups=", G, ", weight of size ", shape_str(w.sizes()),
                       ", expected input", shape_str(x.sizes()), " to have ", w.size(1) * G, " channels, but got ",
                       x.size(1), " channels instead");
    out_ch = w.size(0);
  } else {
    FLOW_RUNTIME_CHECK(x.size(1) == w.size(0), "Given transposed=1, weight of size ", shape_str(w.sizes()),
                       ", expected input", shape_str(x.sizes()), " to have ", w.size(0), " channels, but got ",
                       x.size(1), " channels instead");
    FLOW_RUNTIME_CHECK(w.size(0) % G == 0, "Given groups=", G, ", expected weight to be divisible by ", G,
                       " at dimension 0, but got weight of size ", shape_str(w.sizes()), " instead");
    out_ch = w.size(1) * G;
  }
  FLOW_RUNTIME_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == out_ch), "Given weight of size ",
                     shape_str(w.sizes()), ", expected bias to be 1-dimensional with ", out_ch,
                     " elements, but got bias of size ", shape_str(b.sizes()), " instead");
  r.out = {x.size(0), out_ch};
  Shape in_sp, out_sp;
  bool ok = true;
  for (size_t i = 0; i < ns; ++i) {
    int64_t k = w.size(2 + i), s = r.g.stride[i], p = r.g.padding[i], d = r.g.dilation[i], n = x.size(2 + i);
    int64_t o;
    if (!r.transposed) {
      o = conv_out_len(n, k, s, p, d);
    } else {
      int64_t op = r.output_padding[i];
      FLOW_RUNTIME_CHECK(op >= 0, "negative output_padding is not supported");
      FLOW_RUNTIME_CHECK(op < s || op < d,
                         "output padding must be smaller than either stride or dilation, but got "
                         "output_padding=",
                         op, " stride=", s, " dilation=", d);
      o = (n - 1) * s - 2 * p + d * (k - 1) + op + 1;
    }
    ok = ok && o > 0;
    in_sp.push_back(n);
    out_sp.push_back(o);
    r.out.push_back(o);
  }
  FLOW_RUNTIME_CHECK(ok, "Given input size per channel: ", shape_str(in_sp),
                     ". Calculated output size per channel: ", shape_str(out_sp), ". Output size is too small");
  return r;
}

void add_bias(const Tensor& y, const Tensor& b) {
  Shape st(y.dim(), 0);
  st[1] = b.stride(0);
  Tensor bv = make_view(b, y.sizes(), st, b.offset());
  ops::copy_into(y, ops::call1("add", {y, bv}));
}

std::vector<int64_t> bias_dims(int64_t nd) {
  std::vector<int64_t> d{0};
  for (int64_t i = 2; i < nd; ++i) d.push_back(i);
  return d;
}

// Attribute lists for the gradient ops: (sizes, stride, padding, dilation, groups)
std::vector<AttrValue> grad_attrs(const Shape& sizes, const ConvGeom& g) {
  return {to_vec(sizes), g.stride, g.padding, g.dilation, g.groups};
}
Tensor conv_plain(const Tensor& x, const Tensor& w, const ConvGeom& g) {
  return ops::call1("convolution", {x, w, Tensor()},
                    {g.stride, g.padding, g.dilation, false, std::vector<int64_t>{0}, g.groups});
}
Tensor grad_input(const Tensor& gy, const Tensor& w, const Shape& in_sizes, const ConvGeom& g) {
  return ops::call1("convolution_backward_input", {gy, w}, grad_attrs(in_sizes, g));
}
Tensor grad_weight(const Tensor& gy, const Tensor& x, const Shape& w_sizes, const ConvGeom& g) {
  return ops::call1("convolution_backward_weight", {gy, x}, grad_attrs(w_sizes, g));
}

ConvGeom helper_geom(const Attrs& a, size_t ns) { return geom_from(a, ns); }

// The gradient helpers are ops a user can call too: their arguments must describe a convolution of input
// shape x and weight shape w whose output has grad's shape, or the kernels would read out of bounds.
ConvGeom checked_helper_geom(const Tensor& grad, const Tensor& other, const Shape& x, const Shape& w, const Attrs& a,
                             const char* op) {
  FLOW_RUNTIME_CHECK(w.size() >= 3 && w.size() <= 5 && x.size() == w.size() && grad.dim() == int64_t(w.size()), op,
                     ": expected grad, input and weight of one rank from 3 to 5, got grad ", shape_str(grad.sizes()),
                     ", input ", shape_str(x), ", weight ", shape_str(w));
  FLOW_RUNTIME_CHECK(grad.dtype() == other.dtype(), op, ": expected tensors of one dtype, got ",
                     dtype_name(grad.dtype()), " and ", dtype_name(other.dtype()));
  ConvGeom g = helper_geom(a, w.size() - 2);
  bool ok = w[0] % g.groups == 0 && x[1] == w[1] * g.groups && grad.size(0) == x[0] && grad.size(1) == w[0];
  for (size_t i = 0; ok && i + 2 < w.size(); ++i)
    ok = w[2 + i] > 0 && grad.size(2 + i) == conv_out_len(x[2 + i], w[2 + i], g.stride[i], g.padding[i], g.dilation[i]);
  FLOW_RUNTIME_CHECK(ok, op, ": grad ", shape_str(grad.sizes()), " is not the output of a convolution of input ",
                     shape_str(x), " and weight ", shape_str(w), " with groups=", g.groups, ", stride ",
                     shape_str(g.stride), ", padding ", shape_str(g.padding), ", dilation ", shape_str(g.dilation));
  return g;
}

// A transposed convolution whose output_padding reaches the stride (allowed while it is below the dilation)
// has an output that no plain convolution maps back onto the input, so the oneDNN kernels cannot run it
// directly. It is the unpadded transposed convolution (output (n-1)s + d(k-1) + 1) cropped by the padding on
// the left and by padding - output_padding on the right, a negative crop being zeros.
bool wide_output_padding(const ConvArgs& r) {
  if (!r.transposed) return false;
  for (size_t i = 0; i < r.output_padding.size(); ++i)
    if (r.output_padding[i] >= r.g.stride[i]) return true;
  return false;
}

ConvGeom unpadded(ConvGeom g) {
  std::fill(g.padding.begin(), g.padding.end(), 0);
  return g;
}

// pad()'s list (last dim first) taking the unpadded result to the padded one, or (inverse) back.
std::vector<int64_t> crop_pads(const ConvArgs& r, bool inverse) {
  std::vector<int64_t> pads;
  for (size_t i = r.output_padding.size(); i-- > 0;) {
    int64_t left = -r.g.padding[i], right = r.output_padding[i] - r.g.padding[i];
    pads.push_back(inverse ? -left : left);
    pads.push_back(inverse ? -right : right);
  }
  return pads;
}

Tensor crop(const Tensor& t, const std::vector<int64_t>& pads) {
  return ops::call1("pad", {t}, {pads, std::string("constant"), 0.0});
}

}  // namespace

FLOW_OP(convolution)
    .schema(
        "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
        "bool transposed, int[] output_padding, int groups) -> Tensor")
    .traits(kConvolution)
    .meta([](const TensorList& in, const Attrs& a) {
      ConvArgs r = check_conv(in, a);
      return std::vector<TensorMeta>{{r.out, in[0].dtype(), common_device(in, "convolution")}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      ConvArgs r = check_conv(in, a);
      if (!r.transposed) {
        conv_forward(in[0], in[1], in[2], out[0], r.g);
      } else if (wide_output_padding(r)) {
        ConvGeom g0 = unpadded(r.g);
        Tensor full = ops::call1("convolution", {in[0], in[1], Tensor()},
                                 {g0.stride, g0.padding, g0.dilation, true, std::vector<int64_t>{0}, g0.groups});
        ops::copy_into(out[0], crop(full, crop_pads(r, false)));
        if (in[2].defined() && out[0].numel() > 0) add_bias(out[0], in[2]);
      } else {
        conv_backward_data(in[0], in[1], out[0], r.g);
        if (in[2].defined() && out[0].numel() > 0) add_bias(out[0], in[2]);
      }
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      ConvArgs r = check_conv({c.input(0), c.input(1), Tensor()}, c.attrs);
      const Tensor &x = c.input(0), &w = c.input(1), &gy = g[0];
      Tensor gx, gw, gb;
      if (!r.transposed) {
        if (c.needs(0)) gx = grad_input(gy, w, x.sizes(), r.g);
        if (c.needs(1)) gw = grad_weight(gy, x, w.sizes(), r.g);
      } else if (wide_output_padding(r)) {
        Tensor gy_full = crop(gy, crop_pads(r, true));
        ConvGeom g0 = unpadded(r.g);
        if (c.needs(0)) gx = conv_plain(gy_full, w, g0);
        if (c.needs(1)) gw = grad_weight(x, gy_full, w.sizes(), g0);
      } else {
        if (c.needs(0)) gx = conv_plain(gy, w, r.g);
        if (c.needs(1)) gw = grad_weight(x, gy, w.sizes(), r.g);
      }
      if (c.needs(2)) gb = ops::sum(gy, bias_dims(gy.dim()));
      return {gx, gw, gb};
    });

// Prepacked weights (kernels/cpu/conv.h): the weight in the layout the forward kernel of one geometry keeps
// it in, and that forward reading it. nn.Graph's prepack_conv_weights pass uses the two for inference, where
// its prologue caches the packed weight between calls. Neither has a derivative.
namespace {

Shape sizes_attr(const Attrs& a, const char* name) { return Shape(a.ints(name).begin(), a.ints(name).end()); }

// The convolution the pair describes: the packed weight's own (input) sizes and the geometry, checked as the
// convolution op checks them.
ConvArgs check_packed(const Shape& x, const Tensor& w, bool bias, const Attrs& a) {
  Tensor xm = empty_meta(x, w.dtype(), w.device());
  Tensor bm = bias ? empty_meta({w.dim() > 0 ? w.size(0) : 0}, w.dtype(), w.device()) : Tensor();
  return check_conv({xm, w, bm}, a);
}

}  // namespace

FLOW_OP(convolution_pack_weight)
    .schema(
        "convolution_pack_weight(Tensor weight, int[] input_sizes, int[] stride, int[] padding, int[] dilation, "
        "int groups, bool bias) -> Tensor")
    .meta([](const TensorList& in, const Attrs& a) {
      const Shape x = sizes_attr(a, "input_sizes");
      FLOW_RUNTIME_CHECK(x.size() == static_cast<size_t>(in[0].dim()), "convolution_pack_weight: input_sizes ",
                         shape_str(x), " must have the weight's rank ", in[0].dim());
      ConvArgs r = check_packed(x, in[0], a.b("bias"), a);
      int64_t n = conv_packed_weight_numel(x, in[0].sizes(), r.out, r.g, in[0].dtype(), a.b("bias"));
      return std::vector<TensorMeta>{{Shape{n}, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const Shape x = sizes_attr(a, "input_sizes");
      ConvArgs r = check_packed(x, in[0], a.b("bias"), a);
      conv_pack_weight(in[0], x, r.out, r.g, a.b("bias"), out[0]);
    });

FLOW_OP(convolution_forward_packed)
    .schema(
        "convolution_forward_packed(Tensor input, Tensor packed_weight, Tensor? bias, int[] weight_sizes, "
        "int[] stride, int[] padding, int[] dilation, int groups) -> Tensor")
    .meta([](const TensorList& in, const Attrs& a) {
      Tensor wm = empty_meta(sizes_attr(a, "weight_sizes"), in[1].dtype(), in[1].device());
      FLOW_RUNTIME_CHECK(in[1].dim() == 1,
                         "convolution_forward_packed: packed_weight must be 1-dimensional (from "
                         "convolution_pack_weight), got ",
                         shape_str(in[1].sizes()));
      ConvArgs r = check_conv({in[0], wm, in[2]}, a);
      return std::vector<TensorMeta>{{r.out, in[0].dtype(), common_device(in, "convolution_forward_packed")}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Tensor wm = empty_meta(sizes_attr(a, "weight_sizes"), in[1].dtype(), in[1].device());
      ConvArgs r = check_conv({in[0], wm, in[2]}, a);
      conv_forward_packed(in[0], in[1], wm.sizes(), in[2], out[0], r.g);
    });

FLOW_OP(convolution_backward_input)
    .schema(
        "convolution_backward_input(Tensor grad, Tensor weight, int[] input_sizes, int[] stride, int[] padding, "
        "int[] dilation, int groups) -> Tensor")
    .traits(kConvolution | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      return std::vector<TensorMeta>{
          {Shape(a.ints("input_sizes").begin(), a.ints("input_sizes").end()), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Shape x(a.ints("input_sizes").begin(), a.ints("input_sizes").end());
      conv_backward_data(in[0], in[1], out[0],
                         checked_helper_geom(in[0], in[1], x, in[1].sizes(), a, "convolution_backward_input"));
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      ConvGeom geo = helper_geom(c.attrs, c.input(1).dim() - 2);
      return {c.needs(0) ? conv_plain(g[0], c.input(1), geo) : Tensor(),
              c.needs(1) ? grad_weight(c.input(0), g[0], c.input(1).sizes(), geo) : Tensor()};
    });

FLOW_OP(convolution_backward_weight)
    .schema(
        "convolution_backward_weight(Tensor grad, Tensor input, int[] weight_sizes, int[] stride, int[] padding, "
        "int[] dilation, int groups) -> Tensor")
    .traits(kConvolution | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      return std::vector<TensorMeta>{
          {Shape(a.ints("weight_sizes").begin(), a.ints("weight_sizes").end()), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Shape w(a.ints("weight_sizes").begin(), a.ints("weight_sizes").end());
      conv_backward_weight(in[0], in[1], out[0],
                           checked_helper_geom(in[0], in[1], in[1].sizes(), w, a, "convolution_backward_weight"));
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      ConvGeom geo = helper_geom(c.attrs, c.input(1).dim() - 2);
      return {c.needs(0) ? conv_plain(c.input(1), g[0], geo) : Tensor(),
              c.needs(1) ? grad_input(c.input(0), g[0], c.input(1).sizes(), geo) : Tensor()};
    });

}  // namespace flow
