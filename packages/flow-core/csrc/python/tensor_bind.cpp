// TensorBase: the C++ half of oneflow.Tensor (metadata, autograd state, hot operators). Python adds the
// rest of the methods in oneflow/_tensor.py on its subclass.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../autograd/grad_mode.h"
#include "../autograd/meta.h"
#include "../autograd/node.h"
#include "../core/mem_overlap.h"
#include "../dispatch/dispatch.h"
#include "../ops/functions.h"
#include "bind.h"

namespace flow::py {

PyTypeObject* g_base_type = nullptr;
PyTypeObject* g_tensor_type = nullptr;
static nb::handle g_size_class;  // oneflow.Size; owned, never released

// Subclass instances keep their attributes in a dict owned by the TensorImpl: when the Python object dies
// while C++ still holds the tensor (e.g. in the autograd graph), a new object gets the same attributes.
static void share_dict(nb::handle o, TensorImpl* impl) {
  if (impl->py_dict) {
    if (PyObject_SetAttrString(o.ptr(), "__dict__", static_cast<PyObject*>(impl->py_dict)) != 0) PyErr_Clear();
    return;
  }
  PyObject* d = PyObject_GetAttrString(o.ptr(), "__dict__");
  if (!d) {
    PyErr_Clear();
    return;
  }
  impl->py_dict = d;  // new reference, released in ~TensorImpl
}

nb::object wrap(Tensor t) {
  if (!t.defined()) return nb::none();
  TensorImpl* impl = t.impl();
  if (impl->pyobj) return nb::borrow(static_cast<PyObject*>(impl->pyobj));
  PyTypeObject* tp = impl->py_class ? static_cast<PyTypeObject*>(impl->py_class) : g_tensor_type;
  nb::object o = nb::inst_alloc(nb::handle(reinterpret_cast<PyObject*>(tp)));
  PyTensor* p = nb::inst_ptr<PyTensor>(o);
  new (p) PyTensor(std::move(t));
  p->self = o.ptr();
  nb::inst_mark_ready(o);
  impl->pyobj = o.ptr();
  if (impl->py_class) share_dict(o, impl);
  return o;
}

nb::object wrap_list(const TensorList& ts, bool as_tuple) {
  if (as_tuple) {
    nb::object tup = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(ts.size())));
    for (size_t i = 0; i < ts.size(); ++i) PyTuple_SET_ITEM(tup.ptr(), i, wrap(ts[i]).release().ptr());
    return tup;
  }
  nb::list l;
  for (auto& t : ts) l.append(wrap(t));
  return l;
}

bool to_tensor_or_scalar(PyObject* o, Tensor& out) {
  if (is_tensor(o)) {
    out = unwrap(o);
    return true;
  }
  Scalar s;
  if (to_scalar(o, s)) {
    out = ops::wrapped_scalar(s);
    return true;
  }
  return false;
}

Tensor to_tensor_arg(nb::handle o, const char* op, const char* arg) {
  Tensor t;
  if (!to_tensor_or_scalar(o.ptr(), t))
    fail(ErrorKind::Type, op, "(): argument '", arg, "' must be Tensor, not ",
         nb::str(nb::handle(o.type()).attr("__name__")).c_str());
  return t;
}

static nb::object size_object(const Shape& s) {
  nb::object tup = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(s.size())));
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(tup.ptr(), i, PyLong_FromLongLong(s[i]));
  return g_size_class.ptr() ? g_size_class(tup) : tup;
}

static const Tensor& self_t(nb::handle h) {
  const Tensor& t = unwrap(h.ptr());
  FLOW_RUNTIME_CHECK(t.defined(), "this tensor has not been initialised");
  return t;
}

// Hot binary operators: one C++ call from Python to the kernel.
template <bool Reverse>
static nb::object binop(const OpDef& op, const Attrs& attrs, nb::handle self, nb::handle other) {
  Tensor o;
  if (!to_tensor_or_scalar(other.ptr(), o)) return nb::borrow(Py_NotImplemented);
  const Tensor& s = self_t(self);
  TensorList in = Reverse ? TensorList{o, s} : TensorList{s, o};
  return wrap(dispatch::call1(op, in, attrs));
}

static Attrs attrs_for(const char* name, std::vector<AttrValue> v = {}) {
  const OpDef& op = get_op(name);
  Attrs a;
  a.values = std::move(v);
  dispatch::fill_defaults(op.functional ? *op.functional : op, a);
  return a;
}

#define FLOW_BINOP(PYNAME, OPNAME, REV)                   \
  cls.def(PYNAME, [](nb::handle self, nb::handle other) { \
    static const OpDef& op = get_op(OPNAME);              \
    static const Attrs a = attrs_for(OPNAME);             \
    return binop<REV>(op, a, self, other);                \
  });

static Tensor detach(const Tensor& t) { return shallow_copy(t); }

void init_tensor(nb::module_& m) {
  auto cls = nb::class_<PyTensor>(m, "TensorBase", nb::dynamic_attr(), nb::is_weak_referenceable());
  g_base_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  cls.def("__init__", [](PyTensor* self) { new (self) PyTensor(); })
      .def("_assign",
           [](nb::handle self, const Tensor& other) {
    PyTensor* p = nb::inst_ptr<PyTensor>(self);
    FLOW_RUNTIME_CHECK(other.defined(), "_assign: expected a tensor");
    p->t = other;
    p->self = self.ptr();
    other.impl()->pyobj = self.ptr();
    PyTypeObject* tp = Py_TYPE(self.ptr());
    if (tp != g_tensor_type && tp != g_base_type && !other.impl()->py_class) {
      Py_INCREF(tp);
      other.impl()->py_class = tp;
      other.impl()->py_handler = nb::hasattr(nb::handle(reinterpret_cast<PyObject*>(tp)), "__flow_dispatch__");
      share_dict(self, other.impl());
    }
  })
      .def_prop_ro("shape", [](nb::handle h) { return size_object(self_t(h).sizes()); })
      .def("size",
           [](nb::handle h, nb::handle dim) -> nb::object {
    const Tensor& t = self_t(h);
    if (dim.is_none()) return size_object(t.sizes());
    return nb::int_(t.size(nb::cast<int64_t>(dim)));
  }, nb::arg("dim").none() = nb::none())
      .def("stride",
           [](nb::handle h, nb::handle dim) -> nb::object {
    const Tensor& t = self_t(h);
    if (dim.is_none()) {
      nb::object tup = nb::steal(PyTuple_New(t.dim()));
      for (int64_t i = 0; i < t.dim(); ++i) PyTuple_SET_ITEM(tup.ptr(), i, PyLong_FromLongLong(t.strides()[i]));
      return tup;
    }
    return nb::int_(t.stride(nb::cast<int64_t>(dim)));
  }, nb::arg("dim").none() = nb::none())
      .def("dim", [](nb::handle h) { return self_t(h).dim(); })
      .def_prop_ro("ndim", [](nb::handle h) { return self_t(h).dim(); })
      .def("numel", [](nb::handle h) { return self_t(h).numel(); })
      .def("nelement", [](nb::handle h) { return self_t(h).numel(); })
      .def("element_size", [](nb::handle h) { return self_t(h).itemsize(); })
      .def("storage_offset", [](nb::handle h) { return self_t(h).offset(); })
      .def("is_contiguous", [](nb::handle h, nb::handle) { return self_t(h).is_contiguous(); },
           nb::arg("memory_format").none() = nb::none())
      .def("data_ptr", [](nb::handle h) { return reinterpret_cast<intptr_t>(self_t(h).raw_data()); })
      .def("_storage_ptr",
           [](nb::handle h) {
    const Tensor& t = self_t(h);
    return t.has_storage() ? reinterpret_cast<intptr_t>(t.impl()->storage->data) : intptr_t(0);
  })
      .def("_storage_nbytes",
           [](nb::handle h) {
    const Tensor& t = self_t(h);
    return t.has_storage() ? static_cast<int64_t>(t.impl()->storage->nbytes) : int64_t(0);
  })
      .def_prop_ro("dtype", [](nb::handle h) { return dtype_object(self_t(h).dtype()); })
      .def_prop_ro("device", [](nb::handle h) { return device_object(self_t(h).device()); })
      .def_prop_ro("is_cuda", [](nb::handle h) { return self_t(h).device().type == DeviceType::CUDA; })
      .def_prop_ro("is_cpu", [](nb::handle h) { return self_t(h).device().type == DeviceType::CPU; })
      .def_prop_ro("is_meta", [](nb::handle h) { return !self_t(h).has_storage(); })
      .def_prop_ro("_version", [](nb::handle h) { return self_t(h).version(); })
      .def("_bump_version", [](nb::handle h) { self_t(h).bump_version(); })
      .def_prop_ro("is_leaf", [](nb::handle h) { return self_t(h).is_leaf(); })
      // a Python number the binding made into a 0-dim tensor: the weakest operand in type promotion; tracers
      // carry the flag onto their stand-ins so that they promote as the real operand does
      .def_prop_rw("_is_wrapped_number", [](nb::handle h) { return self_t(h).impl()->is_wrapped_number; },
                   [](nb::handle h, bool v) {
    const Tensor& t = self_t(h);
    FLOW_VALUE_CHECK(!v || t.dim() == 0,
                     "_is_wrapped_number: only a 0-dim tensor can stand for a Python number, "
                     "got ",
                     t.dim(), " dims");
    t.impl()->is_wrapped_number = v;
  })
      .def_prop_ro("_is_view", [](nb::handle h) { return self_t(h).impl()->base != nullptr; })
      .def_prop_ro("_base",
                   [](nb::handle h) -> nb::object {
    auto& b = self_t(h).impl()->base;
    return b ? wrap(Tensor(b)) : nb::none();
  })
      .def_prop_ro("is_inference_tensor", [](nb::handle h) { return self_t(h).impl()->is_inference; })
      .def("is_inference", [](nb::handle h) { return self_t(h).impl()->is_inference; })
      .def_prop_rw("requires_grad", [](nb::handle h) { return self_t(h).requires_grad(); },
                   [](nb::handle h, bool r) { self_t(h).set_requires_grad(r); })
      .def("requires_grad_",
           [](nb::handle h, bool r) {
    self_t(h).set_requires_grad(r);
    return nb::borrow(h);
  }, nb::arg("requires_grad") = true)
      .def_prop_rw("grad",
                   [](nb::handle h) -> nb::object {
    const Tensor& t = self_t(h);
    // torch's warning: a non-leaf's .grad stays None unless retain_grad() was called
    if (t.impl()->autograd && t.impl()->autograd->grad_fn && !t.impl()->autograd->retains_grad &&
        !t.impl()->autograd->grad.defined())
      if (PyErr_WarnEx(PyExc_UserWarning,
                       "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                       "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                       "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
                       "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
                       "instead.",
                       1) < 0)
        throw nb::python_error();  // the warning filter turned it into an error
    return t.impl()->autograd ? wrap(t.impl()->autograd->grad) : nb::none();
  },
                   [](nb::handle h, nb::handle g) {
    const Tensor& t = self_t(h);
    if (g.is_none()) {
      if (t.impl()->autograd) t.impl()->autograd->grad = Tensor();
      return;
    }
    FLOW_TYPE_CHECK(is_tensor(g.ptr()), "assigned grad expected to be a Tensor or None but got grad of type ",
                    nb::str(nb::handle(g.type()).attr("__name__")).c_str());
    const Tensor& gt = unwrap(g.ptr());
    FLOW_RUNTIME_CHECK(gt.dtype() == t.dtype(), "assigned grad has data of a different type");
    FLOW_RUNTIME_CHECK(gt.sizes() == t.sizes(), "assigned grad has data of a different size");
    t.autograd_meta().grad = gt;
  }, nb::arg("value").none())
      .def_prop_ro("grad_fn",
                   [](nb::handle h) -> nb::object {
    const auto& fn = self_t(h).grad_fn();
    if (!fn) return nb::none();
    return nb::cast(fn);
  })
      .def("_grad_fn_name",
           [](nb::handle h) -> nb::object {
    const auto& fn = self_t(h).grad_fn();
    if (!fn) return nb::none();
    return nb::str(fn->name().c_str());
  })
      .def("detach", [](nb::handle h) { return wrap(detach(self_t(h))); })
      .def("detach_",
           [](nb::handle h) {
    const Tensor& t = self_t(h);
    if (t.impl()->autograd) {
      t.impl()->autograd->grad_fn = nullptr;
      t.impl()->autograd->requires_grad = false;
    }
    return nb::borrow(h);
  })
      .def_prop_rw("data", [](nb::handle h) { return wrap(detach(self_t(h))); },
                   [](nb::handle h, const Tensor& src) {
    // x.data = y: x now views y's memory, keeping its own autograd identity.
    const Tensor& t = self_t(h);
    TensorImpl* d = t.impl();
    TensorImpl* s = src.impl();
    d->storage = s->storage;
    d->sizes = s->sizes;
    d->strides = s->strides;
    d->offset = s->offset;
    d->numel = s->numel;
    d->dtype = s->dtype;
    d->device = s->device;
    d->contiguous = s->contiguous;
  })
      .def("item",
           [](nb::handle h) -> nb::object {
    const Tensor& t0 = self_t(h);
    FLOW_RUNTIME_CHECK(t0.device().type != DeviceType::Meta, "Tensor.item() cannot be called on meta tensors");
    FLOW_RUNTIME_CHECK(t0.numel() == 1, "a Tensor with ", t0.numel(), " elements cannot be converted to Scalar");
    Tensor t = readable(t0);
    return dispatch_all(t.dtype(), "item", [&](auto tag) -> nb::object {
      using T = typename decltype(tag)::type;
      T v = *t.data<T>();
      if constexpr (std::is_same_v<T, bool>) return nb::bool_(v);
      else if constexpr (std::is_integral_v<T>) return nb::int_(static_cast<int64_t>(v));
      else return nb::float_(static_cast<double>(static_cast<acc_t<T>>(v)));
    });
  })
      .def("retain_grad", [](nb::handle h) {
    const Tensor& t = self_t(h);
    FLOW_RUNTIME_CHECK(t.requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
    if (t.is_leaf()) return;
    auto& m = t.autograd_meta();
    if (m.retains_grad) return;
    m.retains_grad = true;
    std::weak_ptr<TensorImpl> weak = t.impl_ptr();
    auto& rh = m.grad_fn->retain_hooks;
    if (rh.size() <= m.output_nr) rh.resize(m.output_nr + 1);
    rh[m.output_nr] = [weak](const Tensor& g) -> Tensor {
      if (auto impl = weak.lock()) {
        Tensor self(impl);
        auto& mm = self.autograd_meta();
        if (!mm.grad.defined()) mm.grad = autograd::GradMode::is_enabled() ? g : ops::clone(g);
        else mm.grad = ops::add(mm.grad, g);
      }
      return Tensor();
    };
  }).def_prop_ro("retains_grad", [](nb::handle h) {
    const Tensor& t = self_t(h);
    return t.impl()->autograd && t.impl()->autograd->retains_grad;
  });

  FLOW_BINOP("__add__", "add", false)
  FLOW_BINOP("__radd__", "add", true)
  FLOW_BINOP("__sub__", "sub", false)
  FLOW_BINOP("__rsub__", "sub", true)
  FLOW_BINOP("__mul__", "mul", false)
  FLOW_BINOP("__rmul__", "mul", true)
  FLOW_BINOP("__truediv__", "div", false)
  FLOW_BINOP("__rtruediv__", "div", true)
  FLOW_BINOP("__iadd__", "add_", false)
  FLOW_BINOP("__isub__", "sub_", false)
  FLOW_BINOP("__imul__", "mul_", false)
  FLOW_BINOP("__itruediv__", "div_", false)
  cls.def("__neg__", [](nb::handle self) { return wrap(ops::neg(self_t(self))); });

  m.def("_set_tensor_class", [](nb::handle tp) {
    Py_INCREF(tp.ptr());
    g_tensor_type = reinterpret_cast<PyTypeObject*>(tp.ptr());
  });
  m.def("_set_size_class", [](nb::handle c) { g_size_class = c.inc_ref(); });
  m.def("_share_memory_", [](nb::handle h) {
    share_memory_(self_t(h));
    return nb::borrow(h);
  });
  m.def("_empty_reserved", [](std::vector<int64_t> sizes, std::vector<int64_t> strides, nb::handle dtype) {
    return wrap(
        empty_reserved(Shape(sizes.begin(), sizes.end()), Shape(strides.begin(), strides.end()), dtype_arg(dtype)));
  });
  m.def("_is_shared", [](nb::handle h) { return is_shared(self_t(h)); });
  // PyTorch's rule for writes: some element is reached through more than one index (e.g. an expanded tensor)
  m.def("_has_internal_overlap", [](nb::handle h) { return has_internal_overlap(self_t(h)); });
  m.def("_resize_", [](nb::handle h, std::vector<int64_t> sizes) {
    const Tensor& t = self_t(h);
    FLOW_RUNTIME_CHECK(!t.requires_grad(), "cannot resize variables that require grad");
    resize_(t, Shape(sizes.begin(), sizes.end()));
    t.bump_version();
    return nb::borrow(h);
  });
  // The in-place view ops (squeeze_, transpose_, ...): `self` takes the geometry of `v`, a view of it just
  // made out of place, and (when recording) v's history, so gradients see the op as a view.
  m.def("_adopt_view_", [](nb::handle h, const Tensor& v) {
    const Tensor& t = self_t(h);
    FLOW_RUNTIME_CHECK(t.impl()->storage == v.impl()->storage, "_adopt_view_: not a view of the tensor");
    if (t.is_leaf() && t.requires_grad() && autograd::GradMode::is_enabled())
      fail(ErrorKind::Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
    TensorImpl* d = t.impl();
    d->sizes = v.sizes();
    d->strides = v.strides();
    d->offset = v.offset();
    d->refresh_geometry();
    if (v.grad_fn()) {
      auto& m = t.autograd_meta();
      m.grad_fn = v.grad_fn();
      m.output_nr = v.autograd_meta().output_nr;
      m.view_version = v.autograd_meta().view_version;
    }
    return nb::borrow(h);
  });
  // A tensor of class `cls` sharing `t`'s memory (Parameter and plain subclasses).
  m.def("_make_subclass", [](nb::handle cls, const Tensor& t, bool requires_grad) {
    Tensor d = detach(t);
    Py_INCREF(cls.ptr());
    d.impl()->py_class = cls.ptr();
    d.impl()->py_handler = nb::hasattr(cls, "__flow_dispatch__");
    if (requires_grad) d.set_requires_grad(true);
    return wrap(d);
  }, nb::arg("cls"), nb::arg("data"), nb::arg("requires_grad") = false);
  // A storage-less tensor of class `cls` carrying only metadata: the outer object of a wrapper subclass.
  m.def("_make_wrapper",
        [](nb::handle cls, std::vector<int64_t> shape, nb::handle dtype, nb::handle device, bool requires_grad) {
    Tensor t = empty_meta(Shape(shape.begin(), shape.end()), dtype_arg(dtype), device_arg(device));
    Py_INCREF(cls.ptr());
    t.impl()->py_class = cls.ptr();
    t.impl()->py_handler = nb::hasattr(cls, "__flow_dispatch__");
    if (requires_grad) t.set_requires_grad(true);
    return wrap(t);
  }, nb::arg("cls"), nb::arg("shape"), nb::arg("dtype"), nb::arg("device").none() = nb::none(),
        nb::arg("requires_grad") = false);
  // A tensor subclass's view: `view`, the wrapper a handler made for a view op's result, gets the strides and
  // offset the op gives in `base`'s logical geometry, and `base`'s base (or `base`) as its base, so that autograd
  // rebases an in-place change of it onto the base (CopySlices) as it does for a local view.
  m.def("_mark_view", [](nb::handle view, nb::handle base, std::vector<int64_t> stride, int64_t offset) {
    const Tensor& v = self_t(view);
    const Tensor& b = self_t(base);
    FLOW_VALUE_CHECK(!v.has_storage() && !b.has_storage(), "_mark_view: expected two wrapper tensors");
    FLOW_VALUE_CHECK(stride.size() == v.sizes().size() && offset >= 0, "_mark_view: ", stride.size(),
                     " strides and offset ", offset, " for a view of ", v.sizes().size(), " dims");
    TensorImpl* impl = v.impl();
    impl->strides = Shape(stride.begin(), stride.end());
    impl->offset = offset;
    impl->base = b.impl()->base ? b.impl()->base : b.impl_ptr();
    impl->refresh_geometry();
  }, nb::arg("view"), nb::arg("base"), nb::arg("stride"), nb::arg("offset"));
  // The creation functions allocate through the registry's empty/empty_strided ops (so modes see them, and
  // device= is honoured); the dispatcher marks tensors made inside inference_mode as inference tensors.
  auto opt = [](nb::handle h, auto conv) -> AttrValue {
    if (h.is_none()) return std::monostate{};
    return conv(h);
  };
  m.def("_empty", [opt](std::vector<int64_t> shape, nb::handle dtype, nb::handle device) {
    const OpDef& op = FLOW_OPDEF("empty");
    Attrs a{shape, opt(dtype, dtype_arg), opt(device, device_arg)};
    a.schema = &op.schema;
    return wrap(dispatch::call1(op, {}, a));
  }, nb::arg("shape"), nb::arg("dtype"), nb::arg("device").none() = nb::none());
  m.def("_empty_strided",
        [opt](std::vector<int64_t> shape, std::vector<int64_t> stride, nb::handle dtype, nb::handle device) {
    const OpDef& op = FLOW_OPDEF("empty_strided");
    Attrs a{shape, stride, opt(dtype, dtype_arg), opt(device, device_arg)};
    a.schema = &op.schema;
    return wrap(dispatch::call1(op, {}, a));
  }, nb::arg("shape"), nb::arg("stride"), nb::arg("dtype"), nb::arg("device").none() = nb::none());
  m.def("_wrapped_scalar", [](nb::handle v) { return wrap(to_tensor_arg(v, "scalar", "value")); });
  m.def("_result_type", [](nb::handle seq) {
    TensorList ts;
    for (nb::handle e : nb::borrow<nb::sequence>(seq)) ts.push_back(to_tensor_arg(e, "result_type", "tensors"));
    return dtype_object(result_type(ts));
  });
  m.def("_broadcast_shapes", [](std::vector<int64_t> a, std::vector<int64_t> b) {
    Shape r = broadcast_shapes(Shape(a.begin(), a.end()), Shape(b.begin(), b.end()), "broadcast_shapes");
    return std::vector<int64_t>(r.begin(), r.end());
  });
  m.def("_copy_into", [](const Tensor& dst, const Tensor& src) { ops::copy_into(dst, src); });
}

}  // namespace flow::py
