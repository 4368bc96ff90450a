#include "functions.h"

#include "../dispatch/dispatch.h"

namespace flow::ops {

TensorList call(const char* name, const TensorList& in, std::vector<AttrValue> attrs) {
  const OpDef& op = get_op(name);
  Attrs a;
  a.values = std::move(attrs);
  dispatch::fill_defaults(op.functional ? *op.functional : op, a);
  return dispatch::call(op, in, a);
}
Tensor call1(const char* name, const TensorList& in, std::vector<AttrValue> attrs) {
  return call(name, in, std::move(attrs)).at(0);
}
TensorList call_lists(const char* name, const std::vector<TensorList>& args, std::vector<AttrValue> attrs) {
  const OpDef& op = get_op(name);
  const OpDef& def = op.functional ? *op.functional : op;
  Attrs a;
  a.values = std::move(attrs);
  dispatch::fill_defaults(def, a);
  TensorList in = flatten_lists(def.schema, args, a);
  return dispatch::call(op, in, a);
}

namespace {
Tensor c1(const OpDef& op, const TensorList& in, std::vector<AttrValue> attrs = {}) {
  Attrs a;
  a.values = std::move(attrs);
  dispatch::fill_defaults(op.functional ? *op.functional : op, a);
  return dispatch::call1(op, in, a);
}
std::vector<int64_t> to_vec(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }
}  // namespace

Tensor clone(const Tensor& t) { return c1(FLOW_OPDEF("clone"), {t}); }
Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : c1(FLOW_OPDEF("contiguous"), {t}); }
Tensor to_dtype(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : c1(FLOW_OPDEF("to_dtype"), {t}, {dtype});
}
void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.device().type == DeviceType::Meta) return;  // nothing to write into
  const OpDef& op = FLOW_OPDEF("copy_");
  TensorList outs{dst};
  Attrs a;
  dispatch::fill_defaults(*op.functional, a);
  dispatch::run_kernel(*op.functional, {dst, src}, a, &outs);
}
Tensor copy_(const Tensor& self, const Tensor& src) { return c1(FLOW_OPDEF("copy_"), {self, src}); }
Tensor fill_(const Tensor& self, Scalar v) { return c1(FLOW_OPDEF("fill_"), {self}, {v}); }

// Through the registry's `full` op, so that interception modes see the tensors backward formulas allocate.
Tensor full(const Shape& sizes, Scalar v, DType dtype, Device device) {
  return c1(FLOW_OPDEF("full"), {}, {to_vec(sizes), v, dtype, device});
}
Tensor zeros(const Shape& sizes, DType dtype, Device device) { return full(sizes, Scalar(int64_t(0)), dtype, device); }
// Through the dispatcher (the `fill` op), so that subclass handlers and modes see these tensors made.
Tensor zeros_like(const Tensor& t) { return full_like(t, Scalar(int64_t(0))); }
Tensor ones_like(const Tensor& t) { return full_like(t, Scalar(int64_t(1))); }
Tensor full_like(const Tensor& t, Scalar v) { return c1(FLOW_OPDEF("fill"), {t}, {v}); }

Tensor scalar_tensor(Scalar v, DType dtype, Device device) {
  if (device.type == DeviceType::Meta) return empty({}, dtype, device);
  Tensor t = empty({}, dtype, Device{});
  dispatch_all(dtype, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data<T>() = v.to<T>();
  });
  if (!device.is_cpu()) {
    Tensor d = empty({}, dtype, device);
    copy_into(d, t);
    return d;
  }
  return t;
}
Tensor wrapped_scalar(Scalar v) {
  DType dt = v.is_bool() ? DType::Bool : v.is_int() ? DType::Int64 : DType::Float64;
  Tensor t = scalar_tensor(v, dt);
  t.impl()->is_wrapped_number = true;
  return t;
}

Tensor view(const Tensor& t, const Shape& sizes) { return c1(FLOW_OPDEF("view"), {t}, {to_vec(sizes)}); }
Tensor reshape(const Tensor& t, const Shape& sizes) { return c1(FLOW_OPDEF("reshape"), {t}, {to_vec(sizes)}); }
Tensor expand(const Tensor& t, const Shape& sizes) { return c1(FLOW_OPDEF("expand"), {t}, {to_vec(sizes)}); }
Tensor permute(const Tensor& t, const std::vector<int64_t>& dims) { return c1(FLOW_OPDEF("permute"), {t}, {dims}); }
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) { return c1(FLOW_OPDEF("transpose"), {t}, {d0, d1}); }
Tensor unsqueeze(const Tensor& t, int64_t dim) { return c1(FLOW_OPDEF("unsqueeze"), {t}, {dim}); }
Tensor squeeze(const Tensor& t, int64_t dim) { return c1(FLOW_OPDEF("squeeze_dim"), {t}, {dim}); }
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return c1(FLOW_OPDEF("slice"), {t}, {dim, start, end, step});
}
Tensor select(const Tensor& t, int64_t dim, int64_t index) { return c1(FLOW_OPDEF("select"), {t}, {dim, index}); }
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset) {
  return c1(FLOW_OPDEF("as_strided"), {t}, {to_vec(sizes), to_vec(strides), offset});
}

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) { return c1(FLOW_OPDEF("add"), {a, b}, {alpha}); }
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) { return c1(FLOW_OPDEF("sub"), {a, b}, {alpha}); }
Tensor mul(const Tensor& a, const Tensor& b) { return c1(FLOW_OPDEF("mul"), {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return c1(FLOW_OPDEF("div"), {a, b}); }
Tensor mul(const Tensor& a, Scalar b) { return mul(a, wrapped_scalar(b)); }
Tensor add(const Tensor& a, Scalar b) { return add(a, wrapped_scalar(b)); }
Tensor neg(const Tensor& a) { return c1(FLOW_OPDEF("neg"), {a}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return c1(FLOW_OPDEF("where"), {cond, a, b}); }

Tensor sum(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim, std::optional<DType> dtype) {
  AttrValue dt = dtype ? AttrValue(*dtype) : AttrValue(std::monostate{});
  return c1(FLOW_OPDEF("sum"), {t}, {dims, keepdim, dt});
}

Tensor sum_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  int64_t lead = t.dim() - static_cast<int64_t>(shape.size());
  FLOW_RUNTIME_CHECK(lead >= 0, "sum_to: cannot reduce ", shape_str(t.sizes()), " to ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && t.sizes()[lead + i] != 1) dims.push_back(lead + static_cast<int64_t>(i));
    else
      FLOW_RUNTIME_CHECK(shape[i] == t.sizes()[lead + i], "sum_to: cannot reduce ", shape_str(t.sizes()), " to ",
                         shape_str(shape));
  }
  Tensor r = dims.empty() ? t : sum(t, dims, true);
  return r.dim() == static_cast<int64_t>(shape.size()) && r.sizes() == shape ? r : view(r, shape);
}

}  // namespace flow::ops
