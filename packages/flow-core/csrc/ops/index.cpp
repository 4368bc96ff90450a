// Gather/scatter-style indexing along one dim (gather, scatter*, index_select, index_add/copy, take) and
// the mask ops (masked_fill, masked_select, masked_scatter, nonzero). Every index is range-checked before
// any memory is touched.
#include <string_view>

#include "binary_util.h"
#include "index_util.h"

#include "../core/mem_overlap.h"

namespace flow {
namespace {

using idx::Reduce;

// 0-dim tensors take part as 1-element 1-D views (PyTorch treats them so in gather/scatter).
Tensor as1d(const Tensor& t) { return t.dim() == 0 ? make_view(t, {1}, {1}, t.offset()) : t; }

Tensor wrap_num(const Tensor& t, DType dt) { return cast_for_kernel(t, dt); }

// ---- gather / scatter -----------------------------------------------------------------------------------
void check_gather_shapes(const Tensor& self, const Tensor& index, int64_t dim, const char* op) {
  FLOW_RUNTIME_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
                     "Index tensor must have the same number of dimensions as input tensor");
  Tensor s = as1d(self), ix = as1d(index);
  for (int64_t d = 0; d < s.dim(); ++d)
    if (d != dim)
      FLOW_RUNTIME_CHECK(ix.sizes()[d] <= s.sizes()[d], "Size does not match at dimension ", d, " expected index ",
                         shape_str(index.sizes()), " to be no larger than self ", shape_str(self.sizes()),
                         " apart from dimension ", dim);
  (void)op;
}

void gather_into(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor s = as1d(self), o = as1d(out), ix0 = as1d(index);
  if (o.numel() == 0) return;
  const int64_t size = s.sizes()[dim];
  // nothing to gather from: every index is out of range (raises before a view of the empty input is made)
  if (size == 0) idx::check_range(ix0, size, dim, ErrorKind::Runtime);
  Shape st = s.strides();
  st[dim] = 0;
  Tensor src_r = idx::restride(s, ix0.sizes(), st);
  if (ix0.dtype() == DType::Int64 && size > 0) {  // checked while gathering: one pass over the index
    if (!idx::offset_gather(o, src_r, ix0, s.strides()[dim], size))
      idx::check_range(ix0, size, dim, ErrorKind::Runtime);  // raises, naming the first bad index
    return;
  }
  idx::offset_gather(o, src_r, idx::wrapped_index(ix0, size, dim, ErrorKind::Runtime), s.strides()[dim]);
}

// out (already holding self's values) gets src scattered into it.
void scatter_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, Reduce r) {
  Tensor o = as1d(out), ix0 = as1d(index);
  if (ix0.numel() == 0) return;
  Tensor ix = idx::wrapped_index(ix0, o.sizes()[dim], dim, ErrorKind::Runtime);
  Shape st = o.strides();
  st[dim] = 0;
  Tensor src_c = wrap_num(src, out.dtype());
  Tensor src_r = src.dim() == 0 ? idx::restride(src_c, ix0.sizes(), Shape(ix0.dim(), 0))
                                : idx::restride(src_c, ix0.sizes(), src_c.strides());
  idx::offset_scatter(idx::restride(o, ix0.sizes(), st), src_r, ix, o.strides()[dim], r, ix0.sizes(),
                      is_non_overlapping_and_dense(o));
}

void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  idx::check_index_dtype(index, str_cat(op, "(): Expected dtype int64 for index").c_str());
  FLOW_RUNTIME_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
                     "Index tensor must have the same number of dimensions as self tensor");
  bool scalar_src = src.dim() == 0;
  if (!scalar_src) {
    FLOW_RUNTIME_CHECK(src.impl()->is_wrapped_number || src.dtype() == self.dtype(), op,
                       "(): Expected self.dtype to be equal to src.dtype");
    FLOW_RUNTIME_CHECK(std::max<int64_t>(src.dim(), 1) == std::max<int64_t>(index.dim(), 1),
                       "Index tensor must have the same number of dimensions as src tensor");
  }
  Tensor s = as1d(self), ix = as1d(index), sr = as1d(src);
  for (int64_t d = 0; d < s.dim(); ++d) {
    bool bad = (d != dim && ix.sizes()[d] > s.sizes()[d]) || (!scalar_src && ix.sizes()[d] > sr.sizes()[d]);
    FLOW_RUNTIME_CHECK(!bad, "Expected index ", shape_str(index.sizes()), " to be no larger than self ",
                       shape_str(self.sizes()), " apart from dimension ", dim, " and to be no larger size than src ",
                       shape_str(src.sizes()));
  }
}

int64_t gdim(const Tensor& self, int64_t dim, const char* op) {
  return wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
}

std::vector<TensorMeta> same_as_self(const TensorList& in, const Attrs&) {
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

void copy_self(const Tensor& out, const Tensor& self) {
  if (!out.is_same(self)) ops::copy_into(out, self);
}

}  // namespace

FLOW_OP(gather)
    .schema("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      idx::check_index_dtype(in[1], "gather(): Expected dtype int32/int64 for index");
      int64_t d = gdim(in[0], a.i("dim"), "gather");
      check_gather_shapes(in[0], in[1], d, "gather");
      return {{in[1].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      gather_into(out[0], in[0], gdim(in[0], a.i("dim"), "gather"), in[1]);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor z = ops::zeros(c.input_meta(0).sizes, g[0].dtype(), g[0].device());
      return {ops::call1("scatter_add", {z, c.input(1), g[0]}, {c.attrs.i("dim")}), Tensor()};
    });

FLOW_OP(scatter)
    .schema("scatter(Tensor self, int dim, Tensor index, Tensor src, *, str? reduce=None) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) {
      check_scatter(in[0], gdim(in[0], a.i("dim"), "scatter"), in[1], in[2], "scatter");
      if (!a.none("reduce")) idx::parse_reduce(a.str("reduce"), false);
      return same_as_self(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      copy_self(out[0], in[0]);
      Reduce r = a.none("reduce") ? Reduce::Assign : idx::parse_reduce(a.str("reduce"), false);
      scatter_into(out[0], gdim(in[0], a.i("dim"), "scatter"), in[1], in[2], r);
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t dim = c.attrs.i("dim");
      Tensor ix = c.input(1);
      bool add = !c.attrs.none("reduce") && c.attrs.str("reduce") == "add";
      FLOW_RUNTIME_CHECK(c.attrs.none("reduce") || add,
                         "scatter: the derivative for reduce='multiply' is not implemented");
      Tensor gs, gsrc;
      if (c.needs(0))
        gs = add ? g[0] : ops::call1("scatter", {g[0], ix, ops::wrapped_scalar(Scalar(int64_t(0)))}, {dim});
      if (c.needs(2)) {
        gsrc = ops::call1("gather", {g[0], ix}, {dim});
        if (c.input_meta(2).sizes.empty()) gsrc = ops::sum(gsrc, {});
      }
      return {gs, Tensor(), gsrc};
    });

FLOW_OP(scatter_add)
    .schema("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) {
      check_scatter(in[0], gdim(in[0], a.i("dim"), "scatter_add"), in[1], in[2], "scatter_add");
      return same_as_self(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      copy_self(out[0], in[0]);
      scatter_into(out[0], gdim(in[0], a.i("dim"), "scatter_add"), in[1], in[2], Reduce::Add);
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gsrc;
      if (c.needs(2)) gsrc = ops::call1("gather", {g[0], c.input(1)}, {c.attrs.i("dim")});
      return {c.needs(0) ? g[0] : Tensor(), Tensor(), gsrc};
    });

// scatter_reduce: sum/prod/mean/amax/amin; include_self=False ignores self's values at scattered positions.
FLOW_OP(scatter_reduce)
    .schema(
        "scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> "
        "Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) {
      check_scatter(in[0], gdim(in[0], a.i("dim"), "scatter_reduce"), in[1], in[2], "scatter_reduce");
      idx::parse_reduce(a.str("reduce"), true);
      return same_as_self(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      int64_t dim = gdim(in[0], a.i("dim"), "scatter_reduce");
      Reduce r = idx::parse_reduce(a.str("reduce"), true);
      bool include_self = a.b("include_self");
      copy_self(out[0], in[0]);
      if (!include_self) {
        // Reset the targets to the reduction's identity first, so only src values count.
        Tensor init = ops::scalar_tensor(Scalar(int64_t(0)), out[0].dtype());
        if (r == Reduce::Mul) init = ops::scalar_tensor(Scalar(int64_t(1)), out[0].dtype());
        if (r == Reduce::Max || r == Reduce::Min) {
          // first src value per target wins: assign every target from src in reverse... simplest: assign then reduce.
          scatter_into(out[0], dim, in[1], in[2], Reduce::Assign);
        } else {
          scatter_into(out[0], dim, in[1], init, Reduce::Assign);
        }
      }
      scatter_into(out[0], dim, in[1], in[2], r);
      if (r == Reduce::Mean) {
        // divide by the number of contributions (plus one for self when included)
        Tensor cnt = ops::full(out[0].sizes(), Scalar(int64_t(include_self ? 1 : 0)), DType::Float64);
        Tensor one = ops::scalar_tensor(Scalar(1.0), DType::Float64);
        scatter_into(cnt, dim, in[1], one, Reduce::Add);
        dispatch_numeric(out[0].dtype(), "scatter_reduce", [&](auto tag) {
          using T = typename decltype(tag)::type;
          Tensor oc = ops::contiguous(out[0]);
          T* p = oc.data<T>();
          const double* q = cnt.data<double>();
          for (int64_t i = 0, n = oc.numel(); i < n; ++i) {
            double c = std::max(q[i], 1.0);
            if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(std::floor(static_cast<double>(p[i]) / c));
            else p[i] = static_cast<T>(static_cast<acc_t<T>>(p[i]) / static_cast<acc_t<T>>(c));
          }
          if (!oc.is_same(out[0])) ops::copy_into(out[0], oc);
        });
      }
    })
    .save_inputs({0, 1, 2})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      int64_t dim = c.attrs.i("dim");
      const std::string& red = c.attrs.str("reduce");
      bool include_self = c.attrs.b("include_self");
      Tensor ix = c.input(1), self = c.input(0), src = c.input(2), out = c.output(0);
      Tensor gs, gsrc;
      if (red == "sum") {
        if (c.needs(0))
          gs = include_self ? g[0] : ops::call1("scatter", {g[0], ix, ops::wrapped_scalar(Scalar(0.0))}, {dim});
        if (c.needs(2)) gsrc = ops::call1("gather", {g[0], ix}, {dim});
      } else if (red == "mean") {
        Tensor ones = ops::ones_like(src);
        Tensor cnt = ops::call1("scatter_reduce", {ops::full_like(self, Scalar(include_self ? 1.0 : 0.0)), ix, ones},
                                {dim, std::string("sum"), true});
        cnt = ops::call1("clamp_min_for_index", {cnt});
        Tensor gm = ops::div(g[0], cnt);
        if (c.needs(0))
          gs = include_self ? gm : ops::call1("scatter", {gm, ix, ops::wrapped_scalar(Scalar(0.0))}, {dim});
        if (c.needs(2)) gsrc = ops::call1("gather", {gm, ix}, {dim});
      } else if (red == "amax" || red == "amin") {
        // gradient split evenly among the elements equal to the result (PyTorch's rule)
        Tensor self_eq = ops::call1("eq", {self, out});
        Tensor src_eq = ops::call1("eq", {src, ops::call1("gather", {out, ix}, {dim})});
        Tensor selfw = ops::to_dtype(self_eq, g[0].dtype());
        if (!include_self) selfw = ops::call1("scatter", {selfw, ix, ops::wrapped_scalar(Scalar(0.0))}, {dim});
        Tensor cnt = ops::call1("scatter_add", {selfw, ix, ops::to_dtype(src_eq, g[0].dtype())}, {dim});
        Tensor gd = ops::div(g[0], cnt);
        if (c.needs(0)) gs = ops::mul(gd, selfw);
        if (c.needs(2)) gsrc = ops::mul(ops::call1("gather", {gd, ix}, {dim}), ops::to_dtype(src_eq, g[0].dtype()));
      } else if (red == "prod") {
        // d result / d x is the product of the other contributions: result / x, computed with a zero x replaced
        // by 1 (result would be 0) so that a single zero still gets the product of the rest (torch's formula)
        auto call = [&](const char* op, const TensorList& args, std::vector<AttrValue> at = {}) {
          return ops::call1(op, args, at);
        };
        Tensor one = ops::wrapped_scalar(Scalar(1.0));
        std::vector<AttrValue> sr{dim, red, include_self};
        if (c.needs(0)) {
          Tensor ms = call("masked_fill", {self, call("eq", {self, ops::wrapped_scalar(Scalar(0.0))}), one});
          gs = ops::div(ops::mul(g[0], call("scatter_reduce", {ms, ix, src}, sr)), ms);
          if (!include_self) gs = call("scatter", {gs, ix, ops::wrapped_scalar(Scalar(0.0))}, {dim});
        }
        if (c.needs(2)) {
          Tensor zero = call("eq", {src, ops::wrapped_scalar(Scalar(0.0))});
          Tensor zeros_at = call("scatter_add", {ops::zeros_like(self), ix, ops::to_dtype(zero, self.dtype())}, {dim});
          Tensor nzero = call("gather", {zeros_at, ix}, {dim});  // zeros of src meeting at each src's target
          Tensor single = call("logical_and", {zero, call("eq", {nzero, ops::wrapped_scalar(Scalar(1.0))})});
          Tensor with_single = call("scatter_reduce", {self, ix, call("masked_fill", {src, single, one})}, sr);
          Tensor via_single = call("gather", {ops::mul(g[0], with_single), ix}, {dim});
          Tensor via_result =
              ops::div(call("gather", {ops::mul(g[0], out), ix}, {dim}), call("masked_fill", {src, zero, one}));
          gsrc = ops::where(single, via_single, via_result);
        }
      } else {
        fail(ErrorKind::NotImplemented, "scatter_reduce: the derivative for reduce='", red, "' is not implemented");
      }
      return {gs, Tensor(), gsrc};
    });

// max(x, 1) for the mean's counts (no gradient flows through counts).
FLOW_OP(clamp_min_for_index)
    .schema("clamp_min_for_index(Tensor self) -> Tensor")
    .traits(kBackwardHelper | kNonDifferentiable)
    .meta(same_as_self)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      dispatch_floating(in[0].dtype(), "clamp_min_for_index", [&](auto tag) {
        using T = typename decltype(tag)::type;
        unary_loop<T, T>(out[0], in[0], [](auto x) { return x < 1 ? decltype(x)(1) : x; });
      });
    });

// ---- index_select / index_add / index_copy / take ----------------------------------------------------
namespace {
Tensor vector_index(const Tensor& index, const char* op) {
  idx::check_index_dtype(index, str_cat(op, "(): Expected dtype int32 or int64 for index").c_str());
  FLOW_INDEX_CHECK(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  return index.dim() == 0 ? make_view(index, {1}, {1}, index.offset()) : index;
}

// Views of `t` (shape S) and of the int64 vector `ix` restrided to S with S[dim] = n.
void along_dim(const Tensor& t, int64_t dim, const Tensor& ix, const Shape& sizes, Tensor& t_r, Tensor& ix_r) {
  Shape st = t.strides();
  st[dim] = 0;
  t_r = idx::restride(t, sizes, st);
  ix_r = idx::zero_strides_except(ix, sizes, dim, ix.strides()[0]);
}

void index_reduce_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, Reduce r) {
  Tensor o = as1d(out), s = as1d(src), ix0 = vector_index(index, "index_add");
  bool copy = r == Reduce::Assign;
  Tensor ix =
      idx::wrapped_index(ix0, o.sizes()[dim], dim, ErrorKind::Index, nullptr, false, copy ? "index_copy_(): " : "");
  if (s.numel() == 0) return;
  Tensor o_r, ix_r;
  along_dim(o, dim, ix, s.sizes(), o_r, ix_r);
  idx::offset_scatter(o_r, s, ix_r, o.strides()[dim], r, s.sizes(), is_non_overlapping_and_dense(o));
}

void check_index_source(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  Tensor ix = vector_index(index, op);
  FLOW_RUNTIME_CHECK(src.dim() == self.dim() || (src.dim() <= 1 && self.dim() <= 1), op,
                     "(): Source/destination tensor must have same number of dimensions");
  Tensor s = as1d(self), sr = as1d(src);
  if (std::string_view(op) == "index_copy_")  // PyTorch words and types index_copy_'s count check its own way
    FLOW_INDEX_CHECK(ix.numel() == sr.sizes()[dim], op, "(): Number of indices (", ix.numel(),
                     ") should be equal to source.size(dim) (", sr.sizes()[dim], ")");
  FLOW_RUNTIME_CHECK(ix.numel() == sr.sizes()[dim], op, "(): Number of indices (", ix.numel(),
                     ") should be equal to source.size(dim): (", sr.sizes()[dim], "), for dim: ", dim);
  for (int64_t d = 0; d < s.dim(); ++d)
    if (d != dim)
      FLOW_RUNTIME_CHECK(s.sizes()[d] == sr.sizes()[d], op, "(): self (", shape_str(self.sizes()), ") and source (",
                         shape_str(src.sizes()), ") must have the same size at dimension ", d);
  FLOW_RUNTIME_CHECK(src.dtype() == self.dtype(), op, "(): self (", dtype_name(self.dtype()), ") and source (",
                     dtype_name(src.dtype()), ") must have the same scalar type");
}
}  // namespace

FLOW_OP(index_select)
    .schema("index_select(Tensor self, int dim, Tensor index) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      Tensor ix = vector_index(in[1], "index_select");
      int64_t d = gdim(in[0], a.i("dim"), "index_select");
      Shape s = as1d(in[0]).sizes();
      s[d] = ix.numel();
      if (in[0].dim() == 0) s.clear();  // torch keeps a 0-dim self 0-dim
      return {{s, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Tensor self = as1d(in[0]), o = as1d(out[0]);
      int64_t d = gdim(in[0], a.i("dim"), "index_select");
      Tensor ix = idx::wrapped_index(vector_index(in[1], "index_select"), self.sizes()[d], d, ErrorKind::Index,
                                     "index out of range in self");
      if (o.numel() == 0) return;
      if (self.is_contiguous() && o.is_contiguous()) {
        // rows of `inner` contiguous elements: one memcpy each
        int64_t outer = 1, inner = self.itemsize();
        for (int64_t j = 0; j < d; ++j) outer *= self.sizes()[j];
        for (int64_t j = d + 1; j < self.dim(); ++j) inner *= self.sizes()[j];
        int64_t n = ix.numel(), size = self.sizes()[d];
        const int64_t* ip = ix.data<int64_t>();
        const char* sp = static_cast<const char*>(self.raw_data());
        char* op = static_cast<char*>(o.raw_data());
        parallel_for(outer * n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(inner, 1)),
                     [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            int64_t oo = r / n, k = r % n;
            std::memcpy(op + r * inner, sp + (oo * size + ip[k]) * inner, inner);
          }
        });
        return;
      }
      Tensor s_r, ix_r;
      along_dim(self, d, ix, o.sizes(), s_r, ix_r);
      idx::offset_gather(o, s_r, ix_r, self.strides()[d]);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor z = ops::zeros(c.input_meta(0).sizes, g[0].dtype(), g[0].device());
      return {ops::call1("index_add", {z, c.input(1), g[0]}, {c.attrs.i("dim")}), Tensor()};
    });

FLOW_OP(index_add)
    .schema("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) {
      check_index_source(in[0], gdim(in[0], a.i("dim"), "index_add"), in[1], in[2], "index_add_");
      return same_as_self(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      copy_self(out[0], in[0]);
      Tensor src = in[2];
      Scalar alpha = a.s("alpha");
      if (!(alpha.to_double() == 1.0)) src = ops::mul(src, alpha);
      src = cast_for_kernel(src, out[0].dtype());
      index_reduce_into(out[0], gdim(in[0], a.i("dim"), "index_add"), in[1], src, Reduce::Add);
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gsrc;
      if (c.needs(2)) {
        gsrc = ops::call1("index_select", {g[0], c.input(1)}, {c.attrs.i("dim")});
        Scalar alpha = c.attrs.s("alpha");
        if (alpha.to_double() != 1.0) gsrc = ops::mul(gsrc, alpha);
        if (c.input_meta(2).sizes.size() != static_cast<size_t>(gsrc.dim()))
          gsrc = ops::reshape(gsrc, c.input_meta(2).sizes);
      }
      return {c.needs(0) ? g[0] : Tensor(), Tensor(), gsrc};
    });

FLOW_OP(index_copy)
    .schema("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs& a) {
      check_index_source(in[0], gdim(in[0], a.i("dim"), "index_copy"), in[1], in[2], "index_copy_");
      return same_as_self(in, a);
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      copy_self(out[0], in[0]);
      index_reduce_into(out[0], gdim(in[0], a.i("dim"), "index_copy"), in[1], in[2], Reduce::Assign);
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor gs, gsrc;
      int64_t dim = c.attrs.i("dim");
      if (c.needs(0)) {
        const auto& sm = c.input_meta(2);
        gs = ops::call1("index_copy", {g[0], c.input(1), ops::zeros(sm.sizes, g[0].dtype(), g[0].device())}, {dim});
      }
      if (c.needs(2)) {
        gsrc = ops::call1("index_select", {g[0], c.input(1)}, {dim});
        if (c.input_meta(2).sizes.size() != static_cast<size_t>(gsrc.dim()))
          gsrc = ops::reshape(gsrc, c.input_meta(2).sizes);
      }
      return {gs, Tensor(), gsrc};
    });

FLOW_OP(take)
    .schema("take(Tensor self, Tensor index) -> Tensor")
    .traits(kIndexing | kNoInputOverlap)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Int64, "take(): Expected a long tensor for index, but got ",
                         dtype_name(in[1].dtype()));
      return {{in[1].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      int64_t n = in[0].numel();
      Tensor ix = ops::contiguous(in[1]);
      const int64_t* p = ix.data<int64_t>();
      for (int64_t i = 0; i < ix.numel(); ++i)
        FLOW_INDEX_CHECK(p[i] >= -n && p[i] < n, "out of range: tried to access index ", p[i], " on a tensor of ", n,
                         " elements.");
      Tensor w = idx::wrapped_index(ix, n, 0, ErrorKind::Index, nullptr, true);
      if (out[0].numel() == 0) return;
      Tensor flat = ops::contiguous(in[0]);
      flat = make_view(flat, {n}, {1}, flat.offset());
      Tensor o = make_view(out[0], {out[0].numel()}, {1}, out[0].offset());
      Tensor wv = make_view(w, {w.numel()}, {1}, w.offset());
      idx::offset_gather(o, idx::restride(flat, o.sizes(), {0}), wv, 1);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& s = c.input_meta(0).sizes;
      Tensor z = ops::zeros({shape_numel(s)}, g[0].dtype(), g[0].device());
      Tensor ix = idx::wrapped_index(c.input(1), shape_numel(s), 0, ErrorKind::Index, nullptr, true);
      ix = ops::reshape(ix, {ix.numel()});
      Tensor r = ops::call1("index_add", {z, ix, ops::reshape(g[0], {g[0].numel()})}, {int64_t(0)});
      return {ops::reshape(r, s), Tensor()};
    });

// ---- masks ---------------------------------------------------------------------------------------------
namespace {
void check_bool_mask(const Tensor& mask, const char* msg_prefix) {
  FLOW_RUNTIME_CHECK(mask.dtype() == DType::Bool, msg_prefix, " only supports boolean masks, but got mask with dtype ",
                     dtype_name(mask.dtype()));
}
}  // namespace

// masked_fill(self, mask, value): value is a Python number or a 0-dim tensor.
FLOW_OP(masked_fill)
    .schema("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor")
    .traits(kIndexing | kElementwise | kAliasedOutputOk)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      check_bool_mask(in[1], "masked_fill_");
      FLOW_RUNTIME_CHECK(in[2].dim() == 0,
                         "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ", in[2].dim(),
                         " dimension(s).");
      if (in[2].has_storage()) check_scalar_fits(binary::scalar_value(in[2]), in[0].dtype());
      return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "masked_fill"), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      Tensor v = cast_for_kernel(in[2], out[0].dtype());
      const Tensor& o = out[0];
      const Tensor& self = in[0];
      const Tensor& mask = in[1];
      dispatch_all(o.dtype(), "masked_fill", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T val = *v.data<T>();
        if (o.is_same(self)) {
          for_each_element<2>({&o, &mask}, o.sizes(),
                              [val](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
            for (int64_t i = 0; i < n; ++i)
              if (*reinterpret_cast<const bool*>(p[1] + i * s[1])) *reinterpret_cast<T*>(p[0] + i * s[0]) = val;
          });
        } else {
          for_each_element<3>({&o, &self, &mask}, o.sizes(),
                              [val](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<T*>(p[0] + i * s[0]) =
                  *reinterpret_cast<const bool*>(p[2] + i * s[2]) ? val : *reinterpret_cast<const T*>(p[1] + i * s[1]);
          });
        }
      });
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor mask = c.input(1);
      Tensor zero = ops::wrapped_scalar(Scalar(int64_t(0)));
      Tensor gs, gv;
      if (c.needs(0) || c.needs(2)) gs = ops::call1("masked_fill", {g[0], mask, zero});
      if (c.needs(2)) gv = ops::sum(ops::sub(g[0], gs), {});
      return {c.needs(0) ? gs : Tensor(), Tensor(), gv};
    });

// The positions of true (nonzero) elements, in row-major order, as an (n, ndim) int64 tensor.
FLOW_OP(nonzero)
    .schema("nonzero(Tensor self) -> Tensor")
    .traits(kIndexing | kDataDependentShape | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      Tensor t = ops::contiguous(in[0]);
      int64_t nd = t.dim(), n = t.numel();
      Tensor b = cast_for_kernel(t, DType::Bool);
      const bool* p = b.data<bool>();
      int64_t cnt = 0;
      for (int64_t i = 0; i < n; ++i) cnt += p[i];
      Tensor out = empty({cnt, nd}, DType::Int64, t.device());
      int64_t* q = out.data<int64_t>();
      std::vector<int64_t> ix(nd, 0);
      for (int64_t i = 0; i < n; ++i) {
        if (p[i]) {
          for (int64_t d = 0; d < nd; ++d) *q++ = ix[d];
        }
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++ix[d] < t.sizes()[d]) break;
          ix[d] = 0;
        }
      }
      return {out};
    });

FLOW_OP(masked_select)
    .schema("masked_select(Tensor self, Tensor mask) -> Tensor")
    .traits(kIndexing | kDataDependentShape)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Bool, "masked_select: expected BoolTensor for mask");
      Shape s = broadcast_shapes(in[0].sizes(), in[1].sizes(), "masked_select");
      Tensor x = ops::contiguous(ops::expand(in[0], s)), m = ops::contiguous(ops::expand(in[1], s));
      const bool* mp = m.data<bool>();
      int64_t n = m.numel(), cnt = 0;
      for (int64_t i = 0; i < n; ++i) cnt += mp[i];
      Tensor out = empty({cnt}, in[0].dtype(), in[0].device());
      int64_t isz = x.itemsize();
      const char* xp = static_cast<const char*>(x.raw_data());
      char* op = static_cast<char*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i)
        if (mp[i]) {
          std::memcpy(op, xp + i * isz, isz);
          op += isz;
        }
      return {out};
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor mask = c.input(1);
      Shape s = broadcast_shapes(c.input_meta(0).sizes, mask.sizes(), "masked_select");
      Tensor z = ops::zeros(s, g[0].dtype(), g[0].device());
      return {ops::call1("masked_scatter", {z, mask, g[0]}), Tensor()};
    });

// masked_scatter(self, mask, source): copies source's elements, in order, into self where mask is true.
FLOW_OP(masked_scatter)
    .schema("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor")
    .traits(kIndexing)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      FLOW_RUNTIME_CHECK(in[1].dtype() == DType::Bool,
                         "masked_scatter_ only supports boolean masks, but got mask with dtype ",
                         dtype_name(in[1].dtype()));
      FLOW_RUNTIME_CHECK(in[0].dtype() == in[2].dtype(),
                         "masked_scatter: expected self and source to have same dtypes but got ",
                         dtype_name(in[0].dtype()), " and ", dtype_name(in[2].dtype()));
      return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "masked_scatter"), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      const Tensor& o = out[0];
      Tensor m = ops::contiguous(ops::expand(in[1], o.sizes()));
      const bool* mp = m.data<bool>();
      int64_t n = m.numel(), cnt = 0;
      for (int64_t i = 0; i < n; ++i) cnt += mp[i];
      FLOW_RUNTIME_CHECK(cnt <= in[2].numel(), "Number of elements of source < number of ones in mask");
      if (!o.is_same(in[0])) ops::copy_into(o, in[0]);
      Tensor src = ops::contiguous(in[2]);
      Tensor oc = o.is_contiguous() ? o : ops::contiguous(o);
      int64_t isz = o.itemsize();
      const char* sp = static_cast<const char*>(src.raw_data());
      char* op = static_cast<char*>(oc.raw_data());
      for (int64_t i = 0; i < n; ++i)
        if (mp[i]) {
          std::memcpy(op + i * isz, sp, isz);
          sp += isz;
        }
      if (!oc.is_same(o)) ops::copy_into(o, oc);
    })
    .inplace_variant()
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor mask = c.input(1);
      Tensor gs, gsrc;
      if (c.needs(0)) gs = ops::call1("masked_fill", {g[0], mask, ops::wrapped_scalar(Scalar(int64_t(0)))});
      if (c.needs(2)) {
        const Shape& ss = c.input_meta(2).sizes;
        Tensor sel = ops::call1("masked_select", {g[0], mask});
        int64_t pad = shape_numel(ss) - sel.numel();
        if (pad > 0) sel = ops::call1("cat", {sel, ops::zeros({pad}, sel.dtype(), sel.device())}, {int64_t(0)});
        gsrc = ops::reshape(sel, ss);
      }
      return {gs, Tensor(), gsrc};
    });

}  // namespace flow
