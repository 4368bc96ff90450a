// Advanced indexing (aten::index / index_put semantics).
#include "index_util.h"

#include "../core/mem_overlap.h"

namespace flow {
namespace {

// Where advanced indices put their elements: result shape, offsets (in elements of `target`) and the
// strides that lay `target` and the offsets out over the result shape.
struct AdvPlan {
  Shape result;
  Tensor off;          // int64, contiguous, the broadcast index shape
  Shape target_st;     // target's strides over `result` (0 on the broadcast dims)
  Shape off_st;        // off's strides over `result` (0 on the kept dims)
};

// Bool masks become long indices (one per mask dim); returns one entry per target dim (undefined = ':').
TensorList expand_indices(const Tensor& target, const TensorList& indices) {
  TensorList out;
  int64_t consumed = 0;
  for (const Tensor& ix : indices)
    consumed += !ix.defined() ? 1 : (ix.dtype() == DType::Bool || ix.dtype() == DType::UInt8) ? ix.dim() : 1;
  FLOW_INDEX_CHECK(consumed <= target.dim(), "too many indices for tensor of dimension ", target.dim(), " (got ",
                   consumed, ")");
  for (const Tensor& ix : indices) {
    if (!ix.defined()) {
      out.emplace_back();
      continue;
    }
    if (ix.dtype() == DType::Bool || ix.dtype() == DType::UInt8) {
      int64_t p = static_cast<int64_t>(out.size());
      FLOW_INDEX_CHECK(ix.dim() > 0, "index: a 0-dim boolean index is only supported through Tensor.__getitem__");
      for (int64_t j = 0; j < ix.dim(); ++j)
        FLOW_INDEX_CHECK(ix.sizes()[j] == target.sizes()[p + j], "The shape of the mask ", shape_str(ix.sizes()),
                         " at index ", j, " does not match the shape of the indexed tensor ", shape_str(target.sizes()),
                         " at index ", p + j);
      Tensor nz = ops::call1("nonzero", {ix});  // (n, k)
      for (int64_t j = 0; j < ix.dim(); ++j) out.push_back(ops::select(nz, 1, j));
      continue;
    }
    FLOW_INDEX_CHECK(ix.dtype() == DType::Int64 || ix.dtype() == DType::Int32,
                     "tensors used as indices must be long, int, byte or bool tensors");
    out.push_back(ix);
  }
  while (static_cast<int64_t>(out.size()) < target.dim()) out.emplace_back();
  return out;
}

AdvPlan plan_index(const Tensor& target, const TensorList& raw) {
  TensorList ix = expand_indices(target, raw);
  int64_t nd = target.dim();
  Shape bshape;
  bool first = true;
  std::vector<int64_t> adv;
  for (int64_t d = 0; d < nd; ++d) {
    if (!ix[d].defined()) continue;
    adv.push_back(d);
    if (first) {
      bshape = ix[d].sizes();
      first = false;
      continue;
    }
    try {
      bshape = broadcast_shapes(bshape, ix[d].sizes(), "index");
    } catch (const Error&) {
      std::string shapes;
      for (int64_t e = 0; e < nd; ++e)
        if (ix[e].defined()) shapes += (shapes.empty() ? "" : ", ") + shape_str(ix[e].sizes());
      fail(ErrorKind::Index, "shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
    }
  }
  FLOW_RUNTIME_CHECK(!adv.empty(), "index: expected at least one index tensor");
  bool adjacent = adv.back() - adv.front() + 1 == static_cast<int64_t>(adv.size());
  AdvPlan p;
  // offsets
  p.off = ops::zeros(bshape, DType::Int64);
  int64_t* op = p.off.data<int64_t>();
  int64_t nb = p.off.numel();
  for (int64_t d : adv) {
    Tensor e = ops::contiguous(ops::expand(idx::to_long(ix[d]), bshape));
    int64_t size = target.sizes()[d], st = target.strides()[d];
    if (nb == 0) continue;
    const int64_t* q = e.data<int64_t>();
    for (int64_t i = 0; i < nb; ++i) {
      int64_t v = q[i];
      FLOW_INDEX_CHECK(v >= -size && v < size, "index ", v, " is out of bounds for dimension ", d, " with size ", size);
      op[i] += (v < 0 ? v + size : v) * st;
    }
  }
  Shape bst = contiguous_strides(bshape);
  auto push_b = [&]() {
    for (size_t k = 0; k < bshape.size(); ++k) {
      p.result.push_back(bshape[k]);
      p.target_st.push_back(0);
      p.off_st.push_back(bst[k]);
    }
  };
  auto push_d = [&](int64_t d) {
    p.result.push_back(target.sizes()[d]);
    p.target_st.push_back(target.strides()[d]);
    p.off_st.push_back(0);
  };
  if (!adjacent) push_b();
  for (int64_t d = 0; d < nd; ++d) {
    if (ix[d].defined()) {
      if (adjacent && d == adv.front()) push_b();
      continue;
    }
    push_d(d);
  }
  return p;
}

TensorList list_tail(const TensorList& in, size_t from) { return TensorList(in.begin() + from, in.end()); }

bool any_defined(const TensorList& l) {
  for (const Tensor& t : l)
    if (t.defined()) return true;
  return false;
}

// values broadcast (by strides) to `shape`, or a RuntimeError in PyTorch's words.
Tensor broadcast_values(const Tensor& v, const Shape& shape) {
  Tensor vv = v;
  // leading size-1 dims of values beyond the result's rank are dropped (PyTorch's slicePrefix1sDims)
  while (vv.dim() > static_cast<int64_t>(shape.size()) && vv.sizes()[0] == 1)
    vv = make_view(vv, Shape(vv.sizes().begin() + 1, vv.sizes().end()),
                   Shape(vv.strides().begin() + 1, vv.strides().end()), vv.offset());
  bool ok = vv.dim() <= static_cast<int64_t>(shape.size());
  Shape st(shape.size(), 0);
  for (int64_t i = 0; ok && i < vv.dim(); ++i) {
    int64_t j = static_cast<int64_t>(shape.size()) - vv.dim() + i;
    if (vv.sizes()[i] == shape[j]) st[j] = vv.strides()[i];
    else if (vv.sizes()[i] != 1) ok = false;
  }
  FLOW_RUNTIME_CHECK(ok, "shape mismatch: value tensor of shape ", shape_str(v.sizes()),
                     " cannot be broadcast to indexing result of shape ", shape_str(shape));
  return idx::restride(vv, shape, st);
}

void index_put_into(const Tensor& target, const TensorList& indices, const Tensor& values, bool accumulate) {
  AdvPlan p = plan_index(target, indices);
  Tensor v = broadcast_values(cast_for_kernel(values, target.dtype()), p.result);
  if (shape_numel(p.result) == 0) return;
  Tensor off_r = idx::restride(p.off, p.result, p.off_st);
  idx::offset_scatter(idx::restride(target, p.result, p.target_st), v, off_r, 1,
                      accumulate ? idx::Reduce::Add : idx::Reduce::Assign, p.result,
                      is_non_overlapping_and_dense(target));
}

}  // namespace

// index(self, indices): advanced indexing; None entries keep their dim.
// index's result shape from the index shapes alone (PyTorch's rule): the broadcast index shape replaces the
// indexed dims where they are adjacent, else leads. Boolean masks make it depend on their values.
static std::vector<TensorMeta> index_meta(const TensorList& in, const Attrs&) {
  const Tensor& self = in[0];
  Shape b;
  int64_t first = -1, last = -1, n = 0;
  for (size_t i = 1; i < in.size(); ++i) {
    const Tensor& ix = in[i];
    if (!ix.defined()) continue;
    FLOW_CHECK(ix.dtype() != DType::Bool && ix.dtype() != DType::UInt8, NotImplemented,
               "index: a boolean mask index makes the result's shape depend on its values");
    FLOW_INDEX_CHECK(is_integral(ix.dtype()), "tensors used as indices must be long, int, byte or bool tensors");
    int64_t d = static_cast<int64_t>(i) - 1;
    if (first < 0) first = d;
    last = d;
    ++n;
    b = b.empty() && n == 1 ? ix.sizes() : broadcast_shapes(b, ix.sizes(), "index");
  }
  FLOW_INDEX_CHECK(static_cast<int64_t>(in.size()) - 1 <= self.dim(), "too many indices for tensor of dimension ",
                   self.dim());
  if (first < 0) return {{self.sizes(), self.dtype(), self.device()}};
  bool adjacent = last - first + 1 == n;
  Shape out;
  if (adjacent) out.insert(out.end(), self.sizes().begin(), self.sizes().begin() + first);
  out.insert(out.end(), b.begin(), b.end());
  for (int64_t d = 0; d < self.dim(); ++d) {
    bool indexed = d + 1 < static_cast<int64_t>(in.size()) && in[d + 1].defined();
    if (indexed || (adjacent && d < first)) continue;
    out.push_back(self.sizes()[d]);
  }
  return {{out, self.dtype(), self.device()}};
}

FLOW_OP(index)
    .schema("index(Tensor self, Tensor?[] indices) -> Tensor")
    .traits(kIndexing)
    .meta(index_meta)
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      const Tensor& self = in[0];
      TensorList ix = list_tail(in, 1);
      AdvPlan p = plan_index(self, ix);
      Tensor out = empty(p.result, self.dtype(), self.device());
      if (out.numel() == 0) return {out};
      idx::offset_gather(out, idx::restride(self, p.result, p.target_st), idx::restride(p.off, p.result, p.off_st), 1);
      return {out};
    })
    .save_inputs({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList args{ops::zeros(c.input_meta(0).sizes, g[0].dtype(), g[0].device()), g[0]};
      TensorList grads(c.num_inputs());
      for (size_t i = 1; i < c.num_inputs(); ++i) args.push_back(c.input(static_cast<int>(i)));
      grads[0] = ops::call1("index_put", args, {true});
      return grads;
    });

// index_put(self, values, indices, accumulate): the list comes last here (the registry's rule); the Python
// wrappers take PyTorch's order (self, indices, values).
FLOW_OP(index_put)
    .schema("index_put(Tensor self, Tensor values, Tensor?[] indices, bool accumulate=False) -> Tensor")
    .traits(kIndexing)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      FLOW_RUNTIME_CHECK(in[1].dtype() == in[0].dtype() || in[1].impl()->is_wrapped_number,
                         "Index put requires the source and destination dtypes match, got ",
                         torch_type_name(in[0].dtype()), " for the destination and ", torch_type_name(in[1].dtype()),
                         " for the source.");
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      TensorList ix = list_tail(in, 2);
      if (!out[0].is_same(in[0])) ops::copy_into(out[0], in[0]);
      if (!any_defined(ix)) {
        // all-None indices: the whole tensor is the indexing result
        Tensor v = broadcast_values(cast_for_kernel(in[1], out[0].dtype()), out[0].sizes());
        if (a.b("accumulate")) {
          Tensor sum = ops::add(out[0], v);
          ops::copy_into(out[0], sum);
        } else {
          ops::copy_into(out[0], v);
        }
        return;
      }
      index_put_into(out[0], ix, in[1], a.b("accumulate"));
    })
    .inplace_variant()
    .save_inputs({2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList ix;
      for (size_t i = 2; i < c.num_inputs(); ++i) ix.push_back(c.input(static_cast<int>(i)));
      TensorList grads(c.num_inputs());
      if (c.needs(0)) {
        if (c.attrs.b("accumulate")) {
          grads[0] = g[0];
        } else {
          TensorList args{g[0], ops::scalar_tensor(Scalar(int64_t(0)), g[0].dtype(), g[0].device())};
          args.insert(args.end(), ix.begin(), ix.end());
          grads[0] = ops::call1("index_put", args, {false});
        }
      }
      if (c.needs(1)) {
        TensorList args{g[0]};
        args.insert(args.end(), ix.begin(), ix.end());
        Tensor gv = any_defined(ix) ? ops::call1("index", args) : g[0];
        const Shape& vs = c.input_meta(1).sizes;
        if (gv.dim() < static_cast<int64_t>(vs.size())) {
          Shape s(vs.size() - gv.dim(), 1);
          s.insert(s.end(), gv.sizes().begin(), gv.sizes().end());
          gv = ops::reshape(gv, s);
        }
        grads[1] = gv;
      }
      return grads;
    });

}  // namespace flow
