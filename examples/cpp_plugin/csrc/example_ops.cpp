// An example C++ plugin: one op and one tensor handler registered into oneflow's registry from a library of
// its own, built against the installed core (oneflow.sysconfig). Loaded with oneflow.ops.load_library.
#include <oneflow/autograd/node.h>
#include <oneflow/dispatch/dispatch.h>
#include <oneflow/ops/functions.h>
#include <oneflow/ops/registry.h>

#include <atomic>

namespace flow_example {
using namespace flow;

// self + alpha * other: schema, meta inference, kernel, backward and traits in one definition.
FLOW_OP(example_scaled_add)
    .schema("example_scaled_add(Tensor self, Tensor other, *, float alpha=1) -> Tensor")
    .traits(kElementwise | kBroadcastBinary)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      DType dt = result_type(in);
      FLOW_TYPE_CHECK(dt == DType::Float32 || dt == DType::Float64,
                      "example_scaled_add: expected float32 or float64 inputs, got ", dtype_name(dt));
      return {{broadcast_shapes(in[0].sizes(), in[1].sizes(), "example_scaled_add"), dt,
               common_device(in, "example_scaled_add")}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const Tensor& o = out[0];
      const double alpha = a.f("alpha");
      // operands broadcast and made contiguous in the result's dtype (the kernel then reads flat arrays)
      Tensor x = ops::contiguous(ops::expand(ops::to_dtype(in[0], o.dtype()), o.sizes()));
      Tensor y = ops::contiguous(ops::expand(ops::to_dtype(in[1], o.dtype()), o.sizes()));
      Tensor r = o.is_contiguous() ? o : empty(o.sizes(), o.dtype(), o.device());
      const int64_t n = r.numel();
      if (o.dtype() == DType::Float32) {
        const float *px = x.data<float>(), *py = y.data<float>();
        float* pr = r.data<float>();
        const float al = static_cast<float>(alpha);
        for (int64_t i = 0; i < n; ++i) pr[i] = px[i] + al * py[i];
      } else {
        const double *px = x.data<double>(), *py = y.data<double>();
        double* pr = r.data<double>();
        for (int64_t i = 0; i < n; ++i) pr[i] = px[i] + alpha * py[i];
      }
      if (!r.is_same(o)) ops::copy_into(o, r);
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const double alpha = c.attrs.f("alpha");
      auto to_input = [&](const Tensor& t, int i) {
        return ops::to_dtype(ops::sum_to(t, c.input_meta(i).sizes), c.input_meta(i).dtype);
      };
      return {c.needs(0) ? to_input(g[0], 0) : Tensor(),
              c.needs(1) ? to_input(ops::mul(g[0], Scalar(alpha)), 1) : Tensor()};
    });

// Reads an attribute its schema lacks ("scael" for "scale"): attributes are read by name, so the slip is a
// RuntimeError naming the op and the attribute when the kernel runs, never another attribute's value.
FLOW_OP(example_misread_attr)
    .schema("example_misread_attr(Tensor self, *, float scale=1) -> Tensor")
    .traits(kNonDifferentiable)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList&, const TensorList&, const Attrs& a) { (void)a.f("scael"); });

// ---- a C++ tensor handler ---------------------------------------------------------------------------------
// Every op with a tagged input comes here instead of to a kernel (after any Python dispatch mode): it is
// counted, run on untagged aliases, and its results are tagged. A global tensor's handler has this shape,
// with boxing where this one counts.
namespace {
std::atomic<int64_t> g_calls{0};

Tensor untagged(const Tensor& t) {
  if (!t.defined() || t.impl()->handler_key == 0) return t;
  Tensor u = shallow_copy(t);
  u.impl()->handler_key = 0;
  return u;
}

TensorList counting_handler(const OpDef& op, const TensorList& in, const Attrs& a);
const int g_key = dispatch::register_tensor_handler("example.counting", 10, counting_handler);

TensorList counting_handler(const OpDef& op, const TensorList& in, const Attrs& a) {
  g_calls.fetch_add(1);
  TensorList plain;
  plain.reserve(in.size());
  for (const Tensor& t : in) plain.push_back(untagged(t));
  TensorList out = dispatch::call(op, plain, a);
  for (Tensor& t : out)
    if (t.defined()) {
      t = shallow_copy(t);
      dispatch::set_handler_key(t, g_key);
    }
  return out;
}
}  // namespace

FLOW_OP(example_tag)
    .schema("example_tag(Tensor self) -> Tensor")
    .traits(kNonDifferentiable)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs&) -> TensorList {
      Tensor t = shallow_copy(in[0]);
      dispatch::set_handler_key(t, g_key);
      return {t};
    });

FLOW_OP(example_handler_calls)
    .schema("example_handler_calls() -> Tensor")
    .traits(kNonDifferentiable)
    .meta([](const TensorList&, const Attrs&) -> std::vector<TensorMeta> { return {{{}, DType::Int64, Device{}}}; })
    .cpu([](const TensorList&, const Attrs&) -> TensorList {
      Tensor t = empty({}, DType::Int64);
      *t.data<int64_t>() = g_calls.load();
      return {t};
    });

}  // namespace flow_example
