// Allocating creation ops: empty, empty_strided, full, zeros, ones, and to_device / lift_fresh for tensors
// made from Python data. They are registry ops (trait kCreation) with a `device` attribute that the dispatcher
// honours, so interception modes see every allocation and meta tensors are made the same way as CPU ones.
#include "functions.h"

namespace flow {
namespace {

// The size attribute checked as PyTorch's factories check it.
Shape size_of(const Attrs& a, const char* op) {
  const auto& v = a.ints("size");
  for (int64_t s : v)
    FLOW_RUNTIME_CHECK(s >= 0, op, ": Trying to create tensor with negative dimension ", s, ": ",
                       shape_str(Shape(v.begin(), v.end())));
  return Shape(v.begin(), v.end());
}

// full's dtype without dtype=: from the fill value's kind, as PyTorch infers it.
DType fill_dtype(Scalar v) { return v.is_bool() ? DType::Bool : v.is_int() ? DType::Int64 : default_float_dtype(); }

// One out-kernel for every filled op: the value comes from the attributes (full) or is fixed (zeros, ones).
OutKernelFn fill_with(std::optional<Scalar> fixed) {
  return [fixed](const TensorList&, const TensorList& out, const Attrs& a) {
    Scalar v = fixed ? *fixed : a.s("fill_value");
    if (!fixed) check_scalar_fits(v, out[0].dtype());
    ops::fill_cpu(out[0], v);
  };
}

MetaFn filled_meta(const char* op, bool has_value) {
  return [op, has_value](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
    DType dt = !a.none("dtype") ? a.dtype("dtype") : has_value ? fill_dtype(a.s("fill_value")) : default_float_dtype();
    return {{size_of(a, op), dt, Device{}}};
  };
}

TensorList make_empty_strided(const TensorList&, const Attrs& a) {
  Shape sizes = size_of(a, "empty_strided");
  const auto& st = a.ints("stride");
  FLOW_RUNTIME_CHECK(st.size() == sizes.size(), "empty_strided: mismatch in length of strides and shape");
  DType dt = a.opt_dtype("dtype").value_or(default_float_dtype());
  Device dev = a.none("device") ? Device{} : a.device("device");
  return {empty_strided(sizes, Shape(st.begin(), st.end()), dt, dev)};
}

}  // namespace

FLOW_OP(empty)
    .schema("empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta(filled_meta("empty", false))
    .cpu_out([](const TensorList&, const TensorList&, const Attrs&) {});  // uninitialised, as PyTorch's

FLOW_OP(empty_strided)
    .schema("empty_strided(int[] size, int[] stride, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta([](const TensorList&, const Attrs& a) -> std::vector<TensorMeta> {
      return {{size_of(a, "empty_strided"), a.opt_dtype("dtype").value_or(default_float_dtype()), Device{}}};
    })
    .cpu(make_empty_strided)
    .compute(DeviceType::Meta, make_empty_strided);

FLOW_OP(full)
    .schema("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta(filled_meta("full", true))
    .cpu_out(fill_with(std::nullopt));

FLOW_OP(zeros)
    .schema("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta(filled_meta("zeros", false))
    .cpu_out(fill_with(Scalar(int64_t(0))));

FLOW_OP(ones)
    .schema("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta(filled_meta("ones", false))
    .cpu_out(fill_with(Scalar(int64_t(1))));

// A copy of self on another device (Tensor.to(device)); the kernel runs on the target device. Nothing can be
// read out of a meta tensor, as in PyTorch.
FLOW_OP(to_device)
    .schema("to_device(Tensor self, *, Device? device=None) -> Tensor")
    .traits(kUnary)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      FLOW_CHECK(in[0].device().type != DeviceType::Meta, NotImplemented, "Cannot copy out of meta tensor; no data!");
      ops::copy_into(out[0], in[0]);
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("to_device", {g[0]}, {c.input_meta(0).device})};
    });

// A tensor made from Python data (oneflow.tensor, as_tensor): the identity, so that interception modes see
// such constants enter the program (PyTorch's lift_fresh).
FLOW_OP(lift_fresh)
    .schema("lift_fresh(Tensor self) -> Tensor")
    .traits(kCreation | kNonDifferentiable)
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs&) -> TensorList { return {in[0]}; });

}  // namespace flow
