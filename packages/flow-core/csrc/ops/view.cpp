// View ops: outputs share the input's storage. Each has its backward next to it.
#include <algorithm>

#include "../kernels/cpu/loops.h"
#include "dim_maps.h"
#include "functions.h"
#include "view_util.h"

namespace flow {

Shape infer_size(const std::vector<int64_t>& shape, int64_t numel, const char* op) {
  Shape out(shape.begin(), shape.end());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      FLOW_RUNTIME_CHECK(infer < 0, op, ": only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      FLOW_RUNTIME_CHECK(out[i] >= 0, op, ": invalid shape dimension ", out[i]);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    FLOW_RUNTIME_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape_str(out),
                       "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    FLOW_RUNTIME_CHECK(known == numel, op, ": shape '", shape_str(out), "' is invalid for input of size ", numel);
  }
  return out;
}

std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes) {
  if (sizes.empty()) return Shape(new_sizes.size(), 1);
  int64_t numel = shape_numel(sizes);
  if (numel == 0) return contiguous_strides(new_sizes);
  Shape ns(new_sizes.size(), 0);
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = static_cast<int64_t>(sizes.size()) - 1; td >= 0; --td) {
    tensor_numel *= sizes[td];
    if (td == 0 || (sizes[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        ns[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

namespace {

std::vector<TensorMeta> meta_of(const Shape& s, const Tensor& t) { return {{s, t.dtype(), t.device()}}; }

// view's `size` and reshape's `shape`: the new shape, one -1 inferred
Shape view_shape(const Tensor& t, const std::vector<int64_t>& shape, const char* op) {
  return infer_size(shape, t.numel(), op);
}

// z = zeros(input shape); view_fn(z).copy_(grad); differentiable through its own backward op.
Tensor scatter_into_zeros(const Tensor& grad, const Shape& in_sizes,
                          const std::function<Tensor(const Tensor&)>& view_fn) {
  Tensor z = ops::zeros(in_sizes, grad.dtype(), grad.device());
  ops::copy_into(view_fn(z), grad);
  return z;
}

Tensor raw_slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Shape sizes = t.sizes(), strides = t.strides();
  sizes[dim] = end <= start ? 0 : (end - start + step - 1) / step;
  int64_t off = t.offset() + (sizes[dim] > 0 || start < t.sizes()[dim] ? start * strides[dim] : 0);
  strides[dim] *= step;
  return make_view(t, sizes, strides, off);
}

// Normalise python-style slice bounds.
void clamp_slice(int64_t size, int64_t& start, int64_t& end) {
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
}

// The gradient of split_with_sizes / unbind: the pieces' gradients written into one tensor of the input's
// shape, zeros where a piece got none; undefined when no piece got one.
Tensor split_backward(const TensorList& grads, const Shape& in_sizes, const std::vector<int64_t>& split_sizes,
                      int64_t dim) {
  bool any = false;
  for (const Tensor& t : grads) any |= t.defined();
  if (!any) return Tensor();
  TensorList g(grads.begin(), grads.end());
  g.resize(split_sizes.size());
  return ops::call1("split_backward", g, {std::vector<int64_t>(in_sizes.begin(), in_sizes.end()), split_sizes, dim});
}

}  // namespace

FLOW_OP(view)
    .schema("view(Tensor self, int[] size) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::view_map)
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_of(view_shape(in[0], a.ints("size"), "view"), in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      Shape ns = view_shape(t, a.ints("size"), "view");
      auto st = view_strides(t.sizes(), t.strides(), ns);
      FLOW_RUNTIME_CHECK(st.has_value(),
                         "view size is not compatible with input tensor's size and stride (at least one "
                         "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
      return {make_view(t, ns, *st, t.offset())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::reshape(g[0], c.input_meta(0).sizes)};
    });

FLOW_OP(reshape)
    .schema("reshape(Tensor self, int[] shape) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::reshape_map)
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_of(view_shape(in[0], a.ints("shape"), "reshape"), in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      Shape ns = view_shape(t, a.ints("shape"), "reshape");
      if (auto st = view_strides(t.sizes(), t.strides(), ns)) return {make_view(t, ns, *st, t.offset())};
      Tensor c = empty(t.sizes(), t.dtype(), t.device());
      ops::copy_into(c, t);
      return {make_view(c, ns, contiguous_strides(ns), 0)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::reshape(g[0], c.input_meta(0).sizes)};
    });

static Shape expand_shape(const Tensor& t, const std::vector<int64_t>& size, Shape* strides_out) {
  int64_t nd = static_cast<int64_t>(size.size());
  FLOW_RUNTIME_CHECK(nd >= t.dim(), "expand: the number of sizes provided (", nd,
                     ") must be greater or equal to the number of dimensions in the tensor (", t.dim(), ")");
  Shape sizes(nd), strides(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i;
    int64_t d = t.dim() - 1 - off;
    int64_t s = d >= 0 ? t.sizes()[d] : 1;
    // a new leading dim strides over the dims after it, as in PyTorch (only visible while its size is 1); an
    // expanded 0-d tensor has all strides 0
    int64_t st = d >= 0 ? t.strides()[d] : (t.dim() > 0 && i + 1 < nd ? sizes[i + 1] * strides[i + 1] : 0);
    int64_t want = size[i];
    if (want == -1) {
      FLOW_RUNTIME_CHECK(d >= 0, "expand: -1 is not allowed in a leading, non-existing dimension ", i);
      want = s;
    }
    if (s != want) {
      FLOW_RUNTIME_CHECK(s == 1, "expand: The expanded size of the tensor (", want, ") must match the existing size (",
                         s, ") at non-singleton dimension ", i,
                         ".  Target sizes: ", shape_str(Shape(size.begin(), size.end())),
                         ".  Tensor sizes: ", shape_str(t.sizes()));
      st = 0;
    }
    sizes[i] = want;
    strides[i] = st;
  }
  if (strides_out) *strides_out = strides;
  return sizes;
}

FLOW_OP(expand)
    .schema("expand(Tensor self, int[] size) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::expand_map)
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_of(expand_shape(in[0], a.ints("size"), nullptr), in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape st;
      Shape sz = expand_shape(in[0], a.ints("size"), &st);
      return {make_view(in[0], sz, st, in[0].offset())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::sum_to(g[0], c.input_meta(0).sizes)};
    });

static std::vector<int64_t> check_perm(const std::vector<int64_t>& dims, int64_t nd) {
  FLOW_RUNTIME_CHECK(static_cast<int64_t>(dims.size()) == nd,
                     "permute(sparse_coo): number of dimensions in the tensor input "
                     "does not match the length of the desired ordering of dimensions i.e. input.dim() = ",
                     nd, " is not equal to len(dims) = ", dims.size());
  std::vector<int64_t> p(nd);
  std::vector<bool> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    p[i] = wrap_dim(dims[i], nd, "permute");
    FLOW_RUNTIME_CHECK(!seen[p[i]], "permute(): duplicate dims are not allowed.");
    seen[p[i]] = true;
  }
  return p;
}

FLOW_OP(permute)
    .schema("permute(Tensor self, int[] dims) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::permute_map)
    .meta([](const TensorList& in, const Attrs& a) {
      auto p = check_perm(a.ints("dims"), in[0].dim());
      Shape s(p.size());
      for (size_t i = 0; i < p.size(); ++i) s[i] = in[0].sizes()[p[i]];
      return meta_of(s, in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      auto p = check_perm(a.ints("dims"), in[0].dim());
      Shape s(p.size()), st(p.size());
      for (size_t i = 0; i < p.size(); ++i) {
        s[i] = in[0].sizes()[p[i]];
        st[i] = in[0].strides()[p[i]];
      }
      return {make_view(in[0], s, st, in[0].offset())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      auto p = check_perm(c.attrs.ints("dims"), static_cast<int64_t>(c.input_meta(0).sizes.size()));
      std::vector<int64_t> inv(p.size());
      for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
      return {ops::permute(g[0], inv)};
    });

FLOW_OP(transpose)
    .schema("transpose(Tensor self, int dim0, int dim1) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::transpose_map)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape s = in[0].sizes();
      if (!s.empty())
        std::swap(s[wrap_dim(a.i("dim0"), in[0].dim(), "transpose")],
                  s[wrap_dim(a.i("dim1"), in[0].dim(), "transpose")]);
      return meta_of(s, in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      int64_t d0 = wrap_dim(a.i("dim0"), t.dim(), "transpose"), d1 = wrap_dim(a.i("dim1"), t.dim(), "transpose");
      Shape s = t.sizes(), st = t.strides();
      if (!s.empty()) {
        std::swap(s[d0], s[d1]);
        std::swap(st[d0], st[d1]);
      }
      return {make_view(t, s, st, t.offset())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::transpose(g[0], c.attrs.i("dim0"), c.attrs.i("dim1"))};
    });

FLOW_OP(unsqueeze)
    .schema("unsqueeze(Tensor self, int dim) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::unsqueeze_map)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape s = in[0].sizes();
      s.insert(s.begin() + wrap_dim(a.i("dim"), in[0].dim() + 1, "unsqueeze"), 1);
      return meta_of(s, in[0]);
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      int64_t d = wrap_dim(a.i("dim"), t.dim() + 1, "unsqueeze");
      Shape s = t.sizes(), st = t.strides();
      int64_t new_st = d < t.dim() ? s[d] * st[d] : 1;
      s.insert(s.begin() + d, 1);
      st.insert(st.begin() + d, new_st);
      return {make_view(t, s, st, t.offset())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::reshape(g[0], c.input_meta(0).sizes)};
    });

static Tensor squeeze_impl(const Tensor& t, const std::vector<int64_t>& dims_in, bool all) {
  std::vector<bool> drop(t.dim(), false);
  if (all) {
    for (int64_t i = 0; i < t.dim(); ++i) drop[i] = t.sizes()[i] == 1;
  } else {
    for (int64_t d : dims_in) {
      if (t.dim() == 0) {
        wrap_dim(d, 0, "squeeze");
        continue;
      }
      int64_t w = wrap_dim(d, t.dim(), "squeeze");
      drop[w] = t.sizes()[w] == 1;
    }
  }
  Shape s, st;
  for (int64_t i = 0; i < t.dim(); ++i)
    if (!drop[i]) {
      s.push_back(t.sizes()[i]);
      st.push_back(t.strides()[i]);
    }
  return make_view(t, s, st, t.offset());
}

FLOW_OP(squeeze_dim)
    .schema("squeeze_dim(Tensor self, int dim) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::squeeze_map)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList { return {squeeze_impl(in[0], {a.i("dim")}, false)}; })
    .meta([](const TensorList& in, const Attrs& a) {
      return meta_of(
          squeeze_impl(empty_meta(in[0].sizes(), in[0].dtype(), in[0].device()), {a.i("dim")}, false).sizes(), in[0]);
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::reshape(g[0], c.input_meta(0).sizes)};
    });

FLOW_OP(squeeze)
    .schema("squeeze(Tensor self, int[]? dim=None) -> Tensor")
    .traits(kView | kShape)
    .dim_map(dimmap::squeeze_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      return {a.none("dim") ? squeeze_impl(in[0], {}, true) : squeeze_impl(in[0], a.ints("dim"), false)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::reshape(g[0], c.input_meta(0).sizes)};
    });

// slice(self, dim, start, end, step): python slicing along one dim; bounds are clamped like Python's.
FLOW_OP(slice)
    .schema("slice(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor")
    .traits(kView | kIndexing)
    .dim_map(dimmap::slice_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      FLOW_INDEX_CHECK(t.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
      int64_t d = wrap_dim(a.i("dim"), t.dim(), "slice");
      int64_t step = a.i("step");
      FLOW_VALUE_CHECK(step > 0, "slice: step must be greater than zero");
      int64_t size = t.sizes()[d];
      int64_t start = a.none("start") ? 0 : a.i("start");
      int64_t end = a.none("end") ? size : a.i("end");
      clamp_slice(size, start, end);
      return {raw_slice(t, d, start, end, step)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("slice_backward", {g[0]},
                         {std::vector<int64_t>(c.input_meta(0).sizes.begin(), c.input_meta(0).sizes.end()),
                          c.attrs.i("dim"), c.attrs.at("start"), c.attrs.at("end"), c.attrs.i("step")})};
    });

FLOW_OP(slice_backward)
    .schema("slice_backward(Tensor grad, int[] input_sizes, int dim, int? start, int? end, int step) -> Tensor")
    .traits(kBackwardHelper)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape sizes(a.ints("input_sizes").begin(), a.ints("input_sizes").end());
      AttrValue st = a.at("start"), en = a.at("end");
      int64_t dim = a.i("dim"), step = a.i("step");
      FLOW_RUNTIME_CHECK(step > 0, "slice_backward: slice step must be positive, got ", step);
      FLOW_INDEX_CHECK(!sizes.empty(), "slice_backward: slice() cannot be applied to a 0-dim tensor.");
      return {scatter_into_zeros(in[0], sizes, [&](const Tensor& z) {
        int64_t d = wrap_dim(dim, z.dim(), "slice_backward");
        int64_t size = z.sizes()[d];
        int64_t s = std::holds_alternative<std::monostate>(st) ? 0 : std::get<int64_t>(st);
        int64_t e = std::holds_alternative<std::monostate>(en) ? size : std::get<int64_t>(en);
        clamp_slice(size, s, e);
        return raw_slice(z, d, s, e, step);
      })};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {
          ops::call1("slice", {g[0]}, {c.attrs.i("dim"), c.attrs.at("start"), c.attrs.at("end"), c.attrs.i("step")})};
    });

// split_with_sizes(self, split_sizes, dim): views of consecutive pieces of `dim` (torch.split / chunk).
// One op with many outputs rather than one slice per piece, so that backward is a single split_backward
// writing every piece's gradient into its place in one buffer (PyTorch's SplitBackward); per-piece slices
// would each zero-fill a full-size gradient and autograd would then add them up.
FLOW_OP(split_with_sizes)
    .schema("split_with_sizes(Tensor self, int[] split_sizes, int dim=0) -> Tensor[]")
    .traits(kView | kIndexing)
    .dim_map(dimmap::split_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      FLOW_RUNTIME_CHECK(t.dim() > 0, "split expects at least a 1-dimensional tensor");
      int64_t d = wrap_dim(a.i("dim"), t.dim(), "split_with_sizes");
      const std::vector<int64_t>& sizes = a.ints("split_sizes");
      int64_t total = 0;
      bool negative = false;
      for (int64_t s : sizes) {
        negative |= s < 0;
        total += s;
      }
      FLOW_RUNTIME_CHECK(!negative,
                         "split_with_sizes expects split_sizes have only non-negative entries, but got "
                         "split_sizes=",
                         shape_str(Shape(sizes.begin(), sizes.end())));
      FLOW_RUNTIME_CHECK(total == t.sizes()[d], "split_with_sizes expects split_sizes to sum exactly to ", t.sizes()[d],
                         " (input tensor's size at dimension ", d,
                         "), but got split_sizes=", shape_str(Shape(sizes.begin(), sizes.end())));
      TensorList out;
      out.reserve(sizes.size());
      int64_t start = 0;
      for (int64_t s : sizes) {
        out.push_back(raw_slice(t, d, start, start + s, 1));
        start += s;
      }
      return out;
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& in_sizes = c.input_meta(0).sizes;
      int64_t d = wrap_dim(c.attrs.i("dim"), static_cast<int64_t>(in_sizes.size()), "split_with_sizes");
      return {split_backward(g, in_sizes, c.attrs.ints("split_sizes"), d)};
    });

// unbind(self, dim): the select views of every index of `dim`; backward stacks the gradients in one op.
FLOW_OP(unbind)
    .schema("unbind(Tensor self, int dim=0) -> Tensor[]")
    .traits(kView | kIndexing)
    .dim_map(dimmap::select_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      FLOW_INDEX_CHECK(t.dim() > 0, "Dimension specified as ", a.i("dim"), " but tensor has no dimensions");
      int64_t d = wrap_dim(a.i("dim"), t.dim(), "unbind");
      Shape s = t.sizes(), st = t.strides();
      int64_t step = st[d];
      s.erase(s.begin() + d);
      st.erase(st.begin() + d);
      TensorList out;
      out.reserve(t.sizes()[d]);
      for (int64_t i = 0; i < t.sizes()[d]; ++i) out.push_back(make_view(t, s, st, t.offset() + i * step));
      return out;
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& in_sizes = c.input_meta(0).sizes;
      int64_t d = wrap_dim(c.attrs.i("dim"), static_cast<int64_t>(in_sizes.size()), "unbind");
      TensorList pieces(g.size());
      for (size_t i = 0; i < g.size(); ++i)
        if (g[i].defined()) pieces[i] = ops::unsqueeze(g[i], d);
      return {split_backward(pieces, in_sizes, std::vector<int64_t>(in_sizes[d], 1), d)};
    });

FLOW_OP(select)
    .schema("select(Tensor self, int dim, int index) -> Tensor")
    .traits(kView | kIndexing)
    .dim_map(dimmap::select_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      FLOW_INDEX_CHECK(t.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
      int64_t d = wrap_dim(a.i("dim"), t.dim(), "select");
      int64_t size = t.sizes()[d], idx = a.i("index");
      FLOW_INDEX_CHECK(idx >= -size && idx < size, "select(): index ", idx, " out of range for tensor of size ",
                       shape_str(t.sizes()), " at dimension ", d);
      if (idx < 0) idx += size;
      Shape s = t.sizes(), st = t.strides();
      int64_t off = t.offset() + idx * st[d];
      s.erase(s.begin() + d);
      st.erase(st.begin() + d);
      return {make_view(t, s, st, off)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t d = c.attrs.i("dim"), idx = c.attrs.i("index");
      const Shape& in_sizes = c.input_meta(0).sizes;
      int64_t dd = wrap_dim(d, static_cast<int64_t>(in_sizes.size()), "select");
      if (idx < 0) idx += in_sizes[dd];
      Tensor gu = ops::unsqueeze(g[0], dd);
      return {ops::call1("slice_backward", {gu},
                         {std::vector<int64_t>(in_sizes.begin(), in_sizes.end()), dd, idx, idx + 1, int64_t(1)})};
    });

FLOW_OP(diagonal)
    .schema("diagonal(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor")
    .traits(kView)
    .dim_map(dimmap::diagonal_map)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      // torch's errors: the dims are checked like any dim argument (IndexError)
      FLOW_INDEX_CHECK(t.dim() > 0, "Dimension specified as ", a.i("dim1"), " but tensor has no dimensions");
      int64_t off = a.i("offset");
      int64_t d1 = wrap_dim(a.i("dim1"), t.dim(), "diagonal"), d2 = wrap_dim(a.i("dim2"), t.dim(), "diagonal");
      FLOW_RUNTIME_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", a.i("dim1"), ", ", a.i("dim2"));
      int64_t n1 = t.sizes()[d1], n2 = t.sizes()[d2];
      int64_t len, start = t.offset();
      if (off >= 0) {
        len = std::max<int64_t>(std::min(n1, n2 - off), 0);
        if (len > 0) start += off * t.strides()[d2];
      } else {
        len = std::max<int64_t>(std::min(n1 + off, n2), 0);
        if (len > 0) start -= off * t.strides()[d1];
      }
      Shape s, st;
      for (int64_t i = 0; i < t.dim(); ++i)
        if (i != d1 && i != d2) {
          s.push_back(t.sizes()[i]);
          st.push_back(t.strides()[i]);
        }
      s.push_back(len);
      st.push_back(t.strides()[d1] + t.strides()[d2]);
      return {make_view(t, s, st, start)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& in_sizes = c.input_meta(0).sizes;
      return {ops::call1("diagonal_backward", {g[0]},
                         {std::vector<int64_t>(in_sizes.begin(), in_sizes.end()), c.attrs.i("offset"),
                          c.attrs.i("dim1"), c.attrs.i("dim2")})};
    });

FLOW_OP(diagonal_backward)
    .schema("diagonal_backward(Tensor grad, int[] input_sizes, int offset, int dim1, int dim2) -> Tensor")
    .traits(kBackwardHelper)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape sizes(a.ints("input_sizes").begin(), a.ints("input_sizes").end());
      return {scatter_into_zeros(in[0], sizes, [&](const Tensor& z) {
        return ops::call1("diagonal", {z}, {a.i("offset"), a.i("dim1"), a.i("dim2")});
      })};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("diagonal", {g[0]}, {c.attrs.i("offset"), c.attrs.i("dim1"), c.attrs.i("dim2")})};
    });

FLOW_OP(as_strided)
    .schema("as_strided(Tensor self, int[] size, int[] stride, int? storage_offset=None) -> Tensor")
    .traits(kView)
    .meta_from_compute()
    .save_inputs({0})
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      Shape s(a.ints("size").begin(), a.ints("size").end()), st(a.ints("stride").begin(), a.ints("stride").end());
      FLOW_RUNTIME_CHECK(s.size() == st.size(), "as_strided: mismatch in length of strides and shape");
      int64_t off = a.none("storage_offset") ? t.offset() : a.i("storage_offset");
      FLOW_RUNTIME_CHECK(off >= 0, "as_strided: Tensor: invalid storage offset ", off);
      int64_t max_el = off;
      for (size_t i = 0; i < s.size(); ++i) {
        FLOW_RUNTIME_CHECK(s[i] >= 0 && st[i] >= 0, "as_strided: negative size or stride");
        if (s[i] == 0) {
          max_el = -1;
          break;
        }
        max_el += (s[i] - 1) * st[i];
      }
      if (t.has_storage() && max_el >= 0)
        FLOW_RUNTIME_CHECK((max_el + 1) * t.itemsize() <= static_cast<int64_t>(t.impl()->storage->nbytes),
                           "setStorage: sizes ", shape_str(s), ", strides ", shape_str(st), ", storage offset ", off,
                           " and itemsize ", t.itemsize(), " requiring a storage size of ", (max_el + 1) * t.itemsize(),
                           " are out of bounds for storage of size ", t.impl()->storage->nbytes);
      return {make_view(t, s, st, off)};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor inp = c.input(0);
      int64_t off = c.attrs.none("storage_offset") ? inp.offset() : c.attrs.i("storage_offset");
      return {ops::call1("as_strided_backward", {g[0], inp}, {c.attrs.at("size"), c.attrs.at("stride"), off})};
    });

// Gradient of as_strided for an input laid out contiguously from its own offset: scatter-add into zeros.
FLOW_OP(as_strided_backward)
    .schema("as_strided_backward(Tensor grad, Tensor input, int[] size, int[] stride, int storage_offset) -> Tensor")
    .traits(kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[1].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& grad = in[0];
      const Tensor& inp = in[1];
      FLOW_RUNTIME_CHECK(inp.is_contiguous(), "as_strided backward: only supported for inputs that were contiguous");
      Tensor z = ops::zeros({inp.numel()}, grad.dtype(), grad.device());
      Tensor gc = ops::contiguous(grad);
      const auto& s = a.ints("size");
      const auto& st = a.ints("stride");
      FLOW_RUNTIME_CHECK(s.size() == st.size(), "as_strided_backward: size ", shape_str(s), " and stride ",
                         shape_str(st), " differ in length");
      int64_t n_view = 1;
      for (int64_t v : s)
        FLOW_RUNTIME_CHECK(v >= 0 && !__builtin_mul_overflow(n_view, v, &n_view), "as_strided_backward: invalid size ",
                           shape_str(s));
      FLOW_RUNTIME_CHECK(n_view == grad.numel(), "as_strided_backward: grad of ", grad.numel(),
                         " elements for a view of size ", shape_str(s));
      int64_t rel = a.i("storage_offset") - inp.offset();
      dispatch_floating(grad.dtype(), "as_strided_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* zp = z.data<T>();
        const T* gp = gc.data<T>();
        int64_t n = gc.numel();
        std::vector<int64_t> idx(s.size(), 0);
        for (int64_t k = 0; k < n; ++k) {
          int64_t pos = rel;
          for (size_t d = 0; d < s.size(); ++d) pos += idx[d] * st[d];
          FLOW_INDEX_CHECK(pos >= 0 && pos < inp.numel(), "as_strided backward: position out of range");
          zp[pos] = T(static_cast<acc_t<T>>(zp[pos]) + static_cast<acc_t<T>>(gp[k]));
          for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
            if (++idx[d] < s[d]) break;
            idx[d] = 0;
          }
        }
      });
      return {ops::view(z, inp.sizes())};
    });

// geometry_within a base of `numel` elements, an empty region's offset also at most numel.
bool region_in_bounds(const Shape& size, const Shape& stride, int64_t offset, int64_t numel) {
  const bool empty = std::any_of(size.begin(), size.end(), [](int64_t n) { return n == 0; });
  return geometry_within(size, stride, offset, numel) && (!empty || offset <= numel);
}

// view_scatter(base, src, size, stride, offset): a copy of the contiguous `base` whose strided region
// (offset relative to base's first element) holds `src`. The functional form of writing through a view.
FLOW_OP(view_scatter)
    .schema("view_scatter(Tensor base, Tensor src, int[] size, int[] stride, int offset) -> Tensor")
    .traits(kBackwardHelper | kIndexing)
    .meta([](const TensorList& in, const Attrs&) { return meta_of(in[0].sizes(), in[0]); })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Tensor out = empty(in[0].sizes(), in[0].dtype(), in[0].device());
      ops::copy_into(out, in[0]);
      Shape s(a.ints("size").begin(), a.ints("size").end()), st(a.ints("stride").begin(), a.ints("stride").end());
      FLOW_RUNTIME_CHECK(s.size() == st.size(), "view_scatter: size ", shape_str(s), " and stride ", shape_str(st),
                         " differ in length");
      FLOW_INDEX_CHECK(region_in_bounds(s, st, a.i("offset"), out.numel()), "view_scatter: region out of bounds");
      ops::copy_into(make_view(out, s, st, out.offset() + a.i("offset")), in[1]);
      return {out};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gc = ops::contiguous(g[0]);
      const auto& s = c.attrs.ints("size");
      Tensor gb, gs;
      if (c.needs(0)) {
        Tensor z = ops::zeros(Shape(s.begin(), s.end()), g[0].dtype(), g[0].device());
        gb = ops::call1("view_scatter", {gc, z}, {c.attrs.at("size"), c.attrs.at("stride"), c.attrs.at("offset")});
      }
      if (c.needs(1))
        gs = ops::as_strided(gc, Shape(s.begin(), s.end()),
                             Shape(c.attrs.ints("stride").begin(), c.attrs.ints("stride").end()),
                             gc.offset() + c.attrs.i("offset"));
      return {gb, gs};
    });

// strided_view(base, size, stride, offset): the view of a contiguous `base` with that geometry (offset
// relative to base's first element). How a view written in place gets its new history; unlike as_strided
// its backward needs no saved tensor, so later in-place writes to the base do not invalidate it.
FLOW_OP(strided_view)
    .schema("strided_view(Tensor base, int[] size, int[] stride, int offset) -> Tensor")
    .traits(kBackwardHelper | kView)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& b = in[0];
      FLOW_RUNTIME_CHECK(b.is_contiguous(), "strided_view: base must be contiguous");
      Shape s(a.ints("size").begin(), a.ints("size").end()), st(a.ints("stride").begin(), a.ints("stride").end());
      FLOW_RUNTIME_CHECK(s.size() == st.size(), "strided_view: size ", shape_str(s), " and stride ", shape_str(st),
                         " differ in length");
      FLOW_INDEX_CHECK(region_in_bounds(s, st, a.i("offset"), b.numel()), "strided_view: region out of bounds");
      return {make_view(b, s, st, b.offset() + a.i("offset"))};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor z = ops::zeros(c.input_meta(0).sizes, g[0].dtype(), g[0].device());
      return {ops::call1("view_scatter", {z, g[0]}, {c.attrs.at("size"), c.attrs.at("stride"), c.attrs.at("offset")})};
    });

}  // namespace flow

namespace flow {
namespace {

// Tensor.view(dtype): the same bytes read as another dtype. A different element size rescales the last dim,
// under PyTorch's conditions (checked before any geometry is built, with its messages).
struct DtypeView {
  Shape sizes, strides;
  int64_t offset;
};

DtypeView dtype_view(const Tensor& t, DType to) {
  int64_t from_size = itemsize(t.dtype()), to_size = itemsize(to);
  DtypeView v{t.sizes(), t.strides(), t.offset()};
  if (from_size == to_size) return v;
  std::string what = std::string(" to view ") + torch_type_name(t.dtype()) + " as " + torch_type_name(to) +
                     " (different element sizes)";
  FLOW_RUNTIME_CHECK(t.dim() > 0, "self.dim() cannot be 0", what);
  int64_t last = t.dim() - 1;
  FLOW_RUNTIME_CHECK(t.stride(last) == 1, "self.stride(-1) must be 1", what, ", but got ", t.stride(last));
  if (from_size > to_size) {
    int64_t r = from_size / to_size;
    for (int64_t d = 0; d < last; ++d) v.strides[d] *= r;
    v.sizes[last] *= r;
    v.offset *= r;
    return v;
  }
  int64_t r = to_size / from_size;
  FLOW_RUNTIME_CHECK(t.size(last) % r == 0, "self.size(-1) must be divisible by ", r, what, ", but got ", t.size(last));
  FLOW_RUNTIME_CHECK(t.offset() % r == 0, "self.storage_offset() must be divisible by ", r, what, ", but got ",
                     t.offset());
  for (int64_t d = 0; d < last; ++d)
    FLOW_RUNTIME_CHECK(t.stride(d) % r == 0, "self.stride(", d, ") must be divisible by ", r, what, ", but got ",
                       t.stride(d));
  for (int64_t d = 0; d < last; ++d) v.strides[d] /= r;
  v.sizes[last] /= r;
  v.offset /= r;
  return v;
}

}  // namespace

// No backward: like PyTorch's, the result never requires grad (its bytes are not a function of self's values).
FLOW_OP(view_dtype)
    .schema("view_dtype(Tensor self, ScalarType dtype) -> Tensor")
    .traits(kView)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      return {{dtype_view(in[0], a.dtype("dtype")).sizes, a.dtype("dtype"), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      DtypeView v = dtype_view(in[0], a.dtype("dtype"));
      return {make_view(in[0], v.sizes, v.strides, v.offset, a.dtype("dtype"))};
    });

}  // namespace flow
