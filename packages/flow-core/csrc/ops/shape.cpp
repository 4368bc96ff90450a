// Shape ops that copy: cat, flip, roll, tril/triu, one_hot.
#include "index_util.h"

namespace flow {
namespace {

// PyTorch skips legacy empty tensors (1-D with 0 elements) in cat whatever the other shapes are.
bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// Checks the inputs; returns the output shape and the index of the reference tensor (-1: all skipped).
Shape cat_shape(const TensorList& in, int64_t dim_attr, int64_t* dim_out, DType* dt) {
  FLOW_VALUE_CHECK(!in.empty(), "torch.cat(): expected a non-empty list of Tensors");
  DType d = in[0].dtype();
  for (size_t i = 0; i < in.size(); ++i) {
    FLOW_RUNTIME_CHECK(in[i].defined(), "cat(): expected a list of Tensors");
    FLOW_RUNTIME_CHECK(in[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    d = promote_types(d, in[i].dtype());
  }
  *dt = d;
  int64_t ref = -1;
  for (size_t i = 0; i < in.size(); ++i)
    if (!legacy_empty(in[i])) {
      ref = static_cast<int64_t>(i);
      break;
    }
  if (ref < 0) {
    *dim_out = 0;
    return {0};
  }
  const Tensor& r = in[ref];
  int64_t dim = wrap_dim(dim_attr, r.dim(), "cat");
  Shape out = r.sizes();
  out[dim] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (legacy_empty(t)) continue;
    FLOW_RUNTIME_CHECK(t.dim() == r.dim(), "Tensors must have same number of dimensions: got ", r.dim(), " and ",
                       t.dim());
    for (int64_t j = 0; j < r.dim(); ++j)
      if (j != dim)
        FLOW_RUNTIME_CHECK(t.sizes()[j] == r.sizes()[j], "Sizes of tensors must match except in dimension ", dim,
                           ". Expected size ", r.sizes()[j], " but got size ", t.sizes()[j], " for tensor number ", i,
                           " in the list.");
    out[dim] += t.sizes()[dim];
  }
  *dim_out = dim;
  return out;
}

Tensor narrow_raw(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  Shape s = t.sizes();
  s[dim] = len;
  return make_view(t, s, t.strides(), t.offset() + (len > 0 ? start * t.strides()[dim] : 0));
}

// Writes `in` one after another along `dim` of `out`; piece i spans lens[i] indices of `dim`. An undefined
// piece is written as zeros (split_backward's missing gradients); cat's legacy empty pieces have length 0.
void cat_kernel(const TensorList& in, const std::vector<int64_t>& lens, const Tensor& out, int64_t dim) {
  if (out.numel() == 0) return;
  bool fast = out.is_contiguous();
  for (size_t i = 0; i < in.size(); ++i)
    if (lens[i] > 0 && in[i].defined() && (!in[i].is_contiguous() || in[i].dtype() != out.dtype())) fast = false;
  if (fast) {
    int64_t outer = 1, inner = out.itemsize();
    for (int64_t j = 0; j < dim; ++j) outer *= out.sizes()[j];
    for (int64_t j = dim + 1; j < out.dim(); ++j) inner *= out.sizes()[j];
    int64_t row = out.sizes()[dim] * inner;
    char* o = static_cast<char*>(out.raw_data());
    // (source or null for zeros, bytes per outer row)
    std::vector<std::pair<const char*, int64_t>> parts;
    for (size_t i = 0; i < in.size(); ++i)
      if (lens[i] > 0)
        parts.push_back({in[i].defined() ? static_cast<const char*>(in[i].raw_data()) : nullptr, lens[i] * inner});
    // Threads take equal byte ranges of the output, whatever the shape: along dim 0 there is a single
    // outer row, and splitting by rows left one thread copying everything.
    const int64_t total = outer * row, chunk = int64_t(1) << 16;
    parallel_for((total + chunk - 1) / chunk, 4, [&](int64_t c0, int64_t c1) {
      int64_t pos = c0 * chunk, end = std::min(total, c1 * chunk);
      while (pos < end) {
        int64_t k = pos / row, in_row = pos % row, start = 0;
        for (auto& p : parts) {
          if (in_row < start + p.second) {
            int64_t from = in_row - start, n = std::min(p.second - from, end - pos);
            if (p.first) std::memcpy(o + pos, p.first + k * p.second + from, static_cast<size_t>(n));
            else std::memset(o + pos, 0, static_cast<size_t>(n));
            pos += n;
            break;
          }
          start += p.second;
        }
      }
    });
    return;
  }
  int64_t off = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (lens[i] == 0) continue;
    Tensor part = narrow_raw(out, dim, off, lens[i]);
    if (in[i].defined()) ops::copy_into(part, in[i]);
    else ops::copy_into(part, ops::scalar_tensor(Scalar(int64_t(0)), out.dtype(), out.device()));
    off += lens[i];
  }
}

std::vector<int64_t> cat_lengths(const TensorList& in, int64_t dim) {
  std::vector<int64_t> lens(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i)
    if (!legacy_empty(in[i])) lens[i] = in[i].sizes()[dim];
  return lens;
}

// split_backward's output: the input's shape, dtype and device of the first gradient given.
TensorMeta split_backward_meta(const TensorList& in, const Attrs& a) {
  const std::vector<int64_t>& sizes = a.ints("input_sizes");
  const std::vector<int64_t>& lens = a.ints("split_sizes");
  FLOW_RUNTIME_CHECK(in.size() == lens.size(), "split_backward: got ", in.size(), " gradients for ", lens.size(),
                     " pieces");
  int64_t nd = static_cast<int64_t>(sizes.size());
  FLOW_RUNTIME_CHECK(nd > 0, "split_backward: expected the sizes of an input of at least one dim");
  int64_t dim = wrap_dim(a.i("dim"), nd, "split_backward");
  int64_t total = 0;
  for (int64_t l : lens) {
    FLOW_RUNTIME_CHECK(l >= 0, "split_backward: negative piece length");
    total += l;
  }
  FLOW_RUNTIME_CHECK(total == sizes[dim], "split_backward: piece lengths sum to ", total, ", not ", sizes[dim]);
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) continue;
    if (!ref) ref = &in[i];
    FLOW_RUNTIME_CHECK(in[i].dim() == nd, "split_backward: gradient ", i, " has ", in[i].dim(), " dims, expected ", nd);
    for (int64_t j = 0; j < nd; ++j)
      FLOW_RUNTIME_CHECK(in[i].sizes()[j] == (j == dim ? lens[i] : sizes[j]), "split_backward: gradient ", i,
                         " has shape ", shape_str(in[i].sizes()), ", which does not fit its piece of ",
                         shape_str(Shape(sizes.begin(), sizes.end())));
  }
  FLOW_RUNTIME_CHECK(ref != nullptr, "split_backward: expected at least one gradient");
  return {Shape(sizes.begin(), sizes.end()), ref->dtype(), common_device(in, "split_backward")};
}

std::vector<int64_t> wrap_dims_unique(const std::vector<int64_t>& dims, int64_t nd, const char* op) {
  std::vector<int64_t> r;
  std::vector<bool> seen(std::max<int64_t>(nd, 1), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), op);
    FLOW_RUNTIME_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    r.push_back(w);
  }
  return r;
}

std::vector<TensorMeta> same_meta(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// Zero the elements of the last two dims outside the kept triangle, in place (any strides).
void zero_triangle(const Tensor& t, int64_t k, bool lower) {
  int64_t nd = t.dim(), R = t.sizes()[nd - 2], C = t.sizes()[nd - 1];
  if (t.numel() == 0) return;
  int64_t rs = t.strides()[nd - 2] * t.itemsize(), cs = t.strides()[nd - 1] * t.itemsize(), isz = t.itemsize();
  int64_t batches = t.numel() / (R * C);
  char* base = static_cast<char*>(t.raw_data());
  // rows of every matrix split across threads; a contiguous row's zeros are one memset
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(C, 1));
  parallel_for(batches * R, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t b = r / R, i = r % R, rem = b, off = 0;
      for (int64_t d = nd - 3; d >= 0; --d) {
        off += (rem % t.sizes()[d]) * t.strides()[d] * isz;
        rem /= t.sizes()[d];
      }
      // lower keeps j <= i + k; upper keeps j >= i + k
      int64_t j0 = lower ? std::max<int64_t>(i + k + 1, 0) : 0;
      int64_t j1 = lower ? C : std::min<int64_t>(std::max<int64_t>(i + k, 0), C);
      if (j0 >= j1) continue;
      char* row = base + off + i * rs;
      if (cs == isz) {
        std::memset(row + j0 * cs, 0, static_cast<size_t>((j1 - j0) * isz));
      } else {
        for (int64_t j = j0; j < j1; ++j) std::memset(row + j * cs, 0, isz);
      }
    }
  });
}

}  // namespace

FLOW_OP(cat)
    .schema("cat(Tensor[] tensors, int dim=0) -> Tensor")
    .traits(kShape)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      int64_t d;
      DType dt;
      Shape s = cat_shape(in, a.i("dim"), &d, &dt);
      return {{s, dt, common_device(in, "cat")}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t d;
      DType dt;
      cat_shape(in, a.i("dim"), &d, &dt);
      cat_kernel(in, cat_lengths(in, d), out[0], d);
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList grads(c.num_inputs());
      int64_t dim = -1;
      for (size_t i = 0; i < c.num_inputs(); ++i) {
        const Shape& s = c.input_meta(i).sizes;
        if (s.size() == 1 && s[0] == 0) continue;
        dim = wrap_dim(c.attrs.i("dim"), static_cast<int64_t>(s.size()), "cat");
        break;
      }
      int64_t off = 0;
      for (size_t i = 0; i < c.num_inputs(); ++i) {
        const Shape& s = c.input_meta(i).sizes;
        if (s.size() == 1 && s[0] == 0) continue;
        if (c.needs(static_cast<int>(i))) grads[i] = ops::slice(g[0], dim, off, off + s[dim]);
        off += s[dim];
      }
      return grads;
    });

// split_backward(grads, input_sizes, split_sizes, dim): the gradient of split_with_sizes / unbind, every
// piece's gradient written into its place of one tensor (zeros for a piece that got none).
FLOW_OP(split_backward)
    .schema("split_backward(Tensor?[] grads, int[] input_sizes, int[] split_sizes, int dim) -> Tensor")
    .traits(kBackwardHelper | kShape)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> { return {split_backward_meta(in, a)}; })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      split_backward_meta(in, a);
      cat_kernel(in, a.ints("split_sizes"), out[0], wrap_dim(a.i("dim"), out[0].dim(), "split_backward"));
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const std::vector<int64_t>& lens = c.attrs.ints("split_sizes");
      int64_t dim = wrap_dim(c.attrs.i("dim"), g[0].dim(), "split_backward");
      TensorList grads(c.num_inputs());
      int64_t off = 0;
      for (size_t i = 0; i < c.num_inputs() && i < lens.size(); ++i) {
        if (c.needs(static_cast<int>(i))) grads[i] = ops::slice(g[0], dim, off, off + lens[i]);
        off += lens[i];
      }
      return grads;
    });

FLOW_OP(flip)
    .schema("flip(Tensor self, int[] dims) -> Tensor")
    .traits(kShape)
    .dims_attr("dims")
    .meta(same_meta)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const Tensor& t = in[0];
      auto dims = wrap_dims_unique(a.ints("dims"), t.dim(), "flip");
      if (t.dim() == 0 || t.numel() == 0) {
        ops::copy_into(out[0], t);
        return;
      }
      Shape st = t.strides();
      int64_t off = t.offset();
      for (int64_t d : dims) {
        off += (t.sizes()[d] - 1) * st[d];
        st[d] = -st[d];
      }
      ops::copy_into(out[0], make_view(t, t.sizes(), st, off));
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("flip", {g[0]}, {c.attrs.at("dims")})};
    });

FLOW_OP(roll)
    .schema("roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor")
    .traits(kShape)
    .dims_attr("dims")
    .meta([](const TensorList& in, const Attrs& a) {
      const auto& sh = a.ints("shifts");
      const auto& dims = a.ints("dims");
      FLOW_RUNTIME_CHECK(!sh.empty(), "`shifts` required");
      if (dims.empty())
        FLOW_RUNTIME_CHECK(sh.size() == 1, "shifts and dimensions must align. shifts: ", sh.size(), ", dims:0");
      else
        FLOW_RUNTIME_CHECK(sh.size() == dims.size(), "shifts and dimensions must align. shifts: ", sh.size(),
                           ", dims:", dims.size());
      for (int64_t d : dims) wrap_dim(d, std::max<int64_t>(in[0].dim(), 1), "roll");
      return same_meta(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const auto& sh = a.ints("shifts");
      std::vector<int64_t> dims = a.ints("dims");
      Tensor src = in[0], dst_final = out[0];
      if (dims.empty() || src.dim() == 0) {
        // roll the flattened tensor
        src = ops::contiguous(src);
        src = make_view(src, {src.numel()}, {1}, src.offset());
        dst_final = make_view(out[0], {out[0].numel()}, {1}, out[0].offset());
        dims = {0};
      }
      if (src.numel() == 0) return;
      for (size_t k = 0; k < dims.size(); ++k) {
        int64_t d = wrap_dim(dims[k], src.dim(), "roll");
        int64_t n = src.sizes()[d];
        int64_t s = ((sh[k] % n) + n) % n;
        Tensor dst = k + 1 == dims.size() ? dst_final : empty(src.sizes(), src.dtype(), src.device());
        ops::copy_into(narrow_raw(dst, d, s, n - s), narrow_raw(src, d, 0, n - s));
        if (s > 0) ops::copy_into(narrow_raw(dst, d, 0, s), narrow_raw(src, d, n - s, s));
        src = dst;
      }
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      std::vector<int64_t> sh = c.attrs.ints("shifts");
      for (auto& v : sh) v = -v;
      return {ops::call1("roll", {g[0]}, {sh, c.attrs.at("dims")})};
    });

#define FLOW_TRI_OP(NAME, LOWER)                                                                  \
  FLOW_OP(NAME)                                                                                   \
      .schema(#NAME "(Tensor self, int diagonal=0) -> Tensor")                                    \
      .traits(kShape)                                                                             \
      .meta([](const TensorList& in, const Attrs& a) {                                            \
    FLOW_RUNTIME_CHECK(in[0].dim() >= 2, #NAME ": input tensor must have at least 2 dimensions"); \
    return same_meta(in, a);                                                                      \
  })                                                                                              \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                  \
    if (!out[0].is_same(in[0])) ops::copy_into(out[0], in[0]);                                    \
    zero_triangle(out[0], a.i("diagonal"), LOWER);                                                \
  })                                                                                              \
      .inplace_variant()                                                                          \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                           \
    return {ops::call1(#NAME, {g[0]}, {c.attrs.i("diagonal")})};                                  \
  });
FLOW_TRI_OP(tril, true)
FLOW_TRI_OP(triu, false)
#undef FLOW_TRI_OP

FLOW_OP(one_hot)
    .schema("one_hot(Tensor self, int num_classes=-1) -> Tensor")
    .traits(kIndexing | kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      FLOW_RUNTIME_CHECK(in[0].dtype() == DType::Int64,
                         "one_hot is only applicable to index tensor of type LongTensor.");
      FLOW_CHECK(a.i("num_classes") >= 0, NotImplemented,
                 "one_hot: without num_classes the result's shape depends on the "
                 "values (pass num_classes)");
      Shape s = in[0].sizes();
      s.push_back(a.i("num_classes"));
      return {{s, DType::Int64, in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const Tensor& t = in[0];
      FLOW_RUNTIME_CHECK(t.dtype() == DType::Int64, "one_hot is only applicable to index tensor of type LongTensor.");
      int64_t nc = a.i("num_classes");
      Tensor c = ops::contiguous(t);
      const int64_t* p = c.data<int64_t>();
      int64_t n = c.numel();
      if (n == 0) {
        FLOW_RUNTIME_CHECK(nc > 0, "Can not infer total number of classes from empty tensor.");
      } else {
        int64_t mn = p[0], mx = p[0];
        for (int64_t i = 1; i < n; ++i) {
          mn = std::min(mn, p[i]);
          mx = std::max(mx, p[i]);
        }
        FLOW_RUNTIME_CHECK(mn >= 0, "Class values must be non-negative.");
        if (nc == -1) nc = mx + 1;
        else FLOW_RUNTIME_CHECK(mx < nc, "Class values must be smaller than num_classes.");
      }
      FLOW_RUNTIME_CHECK(nc >= 0, "one_hot: num_classes should be -1 or a non-negative number");
      Shape s = t.sizes();
      s.push_back(nc);
      Tensor out = ops::zeros(s, DType::Int64, t.device());
      int64_t* q = out.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) q[i * nc + p[i]] = 1;
      return {out};
    });

}  // namespace flow
