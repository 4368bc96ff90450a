// Shared pieces of the nanobind module: the Python <-> C++ tensor bridge and conversions.
#pragma once
#include <nanobind/nanobind.h>

#include "../core/scalar.h"
#include "../core/tensor.h"
#include "../ops/registry.h"

namespace nb = nanobind;

namespace flow::py {

// The C++ payload inside every Python tensor object.
struct PyTensor {
  Tensor t;
  PyObject* self = nullptr;
  PyTensor() = default;
  explicit PyTensor(Tensor x) : t(std::move(x)) {}
  ~PyTensor() {
    if (t.defined() && t.impl()->pyobj == self) t.impl()->pyobj = nullptr;
  }
};

extern PyTypeObject* g_base_type;    // TensorBase (C++)
extern PyTypeObject* g_tensor_type;  // oneflow.Tensor (Python subclass), used for new objects

inline bool is_tensor(PyObject* o) { return g_base_type && PyObject_TypeCheck(o, g_base_type); }
inline const Tensor& unwrap(PyObject* o) { return nb::inst_ptr<PyTensor>(o)->t; }
nb::object wrap(Tensor t);
nb::object wrap_list(const TensorList& ts, bool as_tuple = true);

// Python number -> Scalar; returns false when `o` is not a number.
bool to_scalar(PyObject* o, Scalar& out);
// Tensor or Python number (wrapped 0-dim tensor); false when neither.
bool to_tensor_or_scalar(PyObject* o, Tensor& out);
Tensor to_tensor_arg(nb::handle o, const char* op, const char* arg);

// dtype objects
nb::object dtype_object(DType d);
bool to_dtype(PyObject* o, DType& out);
DType dtype_arg(nb::handle o);
Device device_arg(nb::handle o);
bool to_device(nb::handle o, Device& out);  // false when `o` is not a device, device string or index
nb::object device_object(const Device& d);

nb::object attr_to_py(const AttrValue& v);
// The op a oneflow._C.ops handle names (TypeError for anything else).
const OpDef& op_of(nb::handle h);
// Attributes given by name as op's Attrs: absent ones take their schema defaults, unknown names raise.
Attrs attrs_by_name(const OpDef& op, nb::dict attrs);
// t's values readable from Python: t itself, or what interception makes of the `_materialize` op for a tensor
// a handler owns (a global tensor gathered, a traced value refused).
Tensor readable(const Tensor& t);
nb::object scalar_to_py(Scalar s);

void init_tensor(nb::module_& m);
void init_ops(nb::module_& m);
void init_autograd(nb::module_& m);
void init_dispatch(nb::module_& m);
void init_interop(nb::module_& m);
void init_dlpack(nb::module_& m);
void init_types(nb::module_& m);
void init_random(nb::module_& m);
void init_autocast(nb::module_& m);
void init_plan(nb::module_& m);
void init_custom_ops(nb::module_& m);

}  // namespace flow::py

namespace nanobind::detail {
template <>
struct type_caster<flow::Tensor> {
  NB_TYPE_CASTER(flow::Tensor, const_name("Tensor"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (src.is_none()) {
      value = flow::Tensor();
      return true;
    }
    if (!flow::py::is_tensor(src.ptr())) return false;
    value = flow::py::unwrap(src.ptr());
    return true;
  }
  static handle from_cpp(const flow::Tensor& t, rv_policy, cleanup_list*) noexcept {
    try {
      return flow::py::wrap(t).release();
    } catch (...) {
      return handle();
    }
  }
};
}  // namespace nanobind::detail
