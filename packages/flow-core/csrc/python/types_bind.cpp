// dtype and device objects, and conversions of Python values.
#include <array>

#include <nanobind/stl/string.h>

#include "bind.h"

namespace flow::py {

struct PyDType {
  DType d;
};
struct PyDevice {
  Device d;
};

static std::array<nb::handle, kNumDTypes> g_dtypes;  // owned, never released

nb::object dtype_object(DType d) { return nb::borrow(g_dtypes[static_cast<int>(d)]); }

bool to_dtype(PyObject* o, DType& out) {
  if (!nb::inst_check(o)) return false;
  PyDType* p = nullptr;
  if (!nb::try_cast<PyDType*>(nb::handle(o), p) || !p) return false;
  out = p->d;
  return true;
}

DType dtype_arg(nb::handle o) {
  DType d;
  if (to_dtype(o.ptr(), d)) return d;
  fail(ErrorKind::Type, "expected a oneflow dtype, got ", nb::str(nb::handle(o.type())).c_str());
}

Device device_arg(nb::handle o) {
  if (o.is_none()) return Device{};
  PyDevice* p = nullptr;
  if (nb::try_cast<PyDevice*>(o, p) && p) return p->d;
  if (nb::isinstance<nb::str>(o)) return parse_device(nb::cast<std::string>(o));
  if (nb::isinstance<nb::int_>(o)) return Device{DeviceType::CUDA, nb::cast<int>(o)};
  fail(ErrorKind::Type, "expected a device or a device string, got ", nb::str(nb::handle(o.type())).c_str());
}

bool to_device(nb::handle o, Device& out) {
  PyDevice* p = nullptr;
  if (nb::try_cast<PyDevice*>(o, p) && p) {
    out = p->d;
    return true;
  }
  if (nb::isinstance<nb::str>(o) || (nb::isinstance<nb::int_>(o) && !nb::isinstance<nb::bool_>(o))) {
    out = device_arg(o);
    return true;
  }
  return false;
}

nb::object device_object(const Device& d) { return nb::cast(PyDevice{d}); }

bool to_scalar(PyObject* o, Scalar& out) {
  if (PyBool_Check(o)) {
    out = Scalar(o == Py_True);
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) fail(ErrorKind::Runtime, "Overflow when unpacking long");
    out = Scalar(static_cast<int64_t>(v));
    return true;
  }
  if (PyFloat_Check(o)) {
    out = Scalar(PyFloat_AS_DOUBLE(o));
    return true;
  }
  // numpy scalars and other number-likes
  if (!is_tensor(o) && PyNumber_Check(o) && !PySequence_Check(o)) {
    nb::handle h(o);
    nb::object np_generic;
    if (PyIndex_Check(o)) {
      nb::object i = nb::steal(PyNumber_Index(o));
      if (!i) {
        PyErr_Clear();
        return false;
      }
      // numpy bool_ also has __index__ on some versions; keep it bool
      std::string tn = nb::str(nb::handle(o->ob_type)).c_str();
      if (tn.find("bool") != std::string::npos) {
        out = Scalar(PyObject_IsTrue(o) == 1);
        return true;
      }
      out = Scalar(static_cast<int64_t>(PyLong_AsLongLong(i.ptr())));
      return true;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out = Scalar(v);
    return true;
  }
  return false;
}

nb::object scalar_to_py(Scalar s) {
  if (s.is_bool()) return nb::bool_(s.v.b);
  if (s.is_int()) return nb::int_(s.v.i);
  return nb::float_(s.v.d);
}

nb::object attr_to_py(const AttrValue& v) {
  return std::visit([](const auto& x) -> nb::object {
    using X = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<X, std::monostate>) return nb::none();
    else if constexpr (std::is_same_v<X, bool>) return nb::bool_(x);
    else if constexpr (std::is_same_v<X, int64_t>) return nb::int_(x);
    else if constexpr (std::is_same_v<X, double>) return nb::float_(x);
    else if constexpr (std::is_same_v<X, std::string>) return nb::str(x.c_str());
    else if constexpr (std::is_same_v<X, Scalar>) return scalar_to_py(x);
    else if constexpr (std::is_same_v<X, DType>) return dtype_object(x);
    else if constexpr (std::is_same_v<X, Device>) return device_object(x);
    else {
      nb::list l;
      for (auto e : x) l.append(e);
      return l;
    }
  }, v);
}

void init_types(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.d); })
      .def_prop_ro("is_signed", [](const PyDType& d) { return d.d != DType::Bool && d.d != DType::UInt8; })
      .def_prop_ro("itemsize", [](const PyDType& d) { return itemsize(d.d); })
      .def_prop_ro("is_complex", [](const PyDType&) { return false; })
      .def_prop_ro("name", [](const PyDType& d) { return std::string(dtype_name(d.d)); })
      .def("__repr__", [](const PyDType& d) { return std::string("oneflow.") + dtype_name(d.d); })
      .def("__eq__", [](const PyDType& a, nb::handle b) {
    DType o;
    return to_dtype(b.ptr(), o) && o == a.d;
  }).def("__hash__", [](const PyDType& d) {
    return static_cast<int>(d.d) + 1000;
  }).def("__reduce__", [](const PyDType& d) {
    return nb::make_tuple(nb::module_::import_("oneflow").attr("_dtype_from_name"),
                          nb::make_tuple(std::string(dtype_name(d.d))));
  });
  for (int i = 0; i < kNumDTypes; ++i) {
    g_dtypes[i] = nb::cast(PyDType{static_cast<DType>(i)}).release();
    m.attr(dtype_name(static_cast<DType>(i))) = g_dtypes[i];
  }
  m.def("get_default_dtype", []() { return dtype_object(default_float_dtype()); });
  m.def("set_default_dtype", [](nb::handle d) {
    DType t = dtype_arg(d);
    FLOW_TYPE_CHECK(t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16,
                    "only floating-point types are supported as the default type");
    set_default_float_dtype(t);
  });
  m.def("promote_types",
        [](nb::handle a, nb::handle b) { return dtype_object(promote_types(dtype_arg(a), dtype_arg(b))); });

  nb::class_<PyDevice>(m, "device")
      .def("__init__",
           [](PyDevice* self, nb::handle spec, nb::handle index) {
    Device d = device_arg(spec);
    if (!index.is_none()) d.index = nb::cast<int>(index);
    new (self) PyDevice{d};
  }, nb::arg("type"), nb::arg("index").none() = nb::none())
      .def_prop_ro("type",
                   [](const PyDevice& d) {
    return std::string(d.d.type == DeviceType::CPU ? "cpu" : d.d.type == DeviceType::CUDA ? "cuda" : "meta");
  })
      .def_prop_ro("index",
                   [](const PyDevice& d) -> nb::object {
    if (d.d.index < 0) return nb::none();
    return nb::int_(d.d.index);
  })
      .def("__repr__",
           [](const PyDevice& d) {
    std::string t = d.d.type == DeviceType::CPU ? "cpu" : d.d.type == DeviceType::CUDA ? "cuda" : "meta";
    return d.d.index < 0 ? "device(type='" + t + "')"
                         : "device(type='" + t + "', index=" + std::to_string(d.d.index) + ")";
  })
      .def("__str__", [](const PyDevice& d) { return d.d.str(); })
      .def("__eq__", [](const PyDevice& a, nb::handle b) {
    try {
      Device o = device_arg(b);
      return o.type == a.d.type && (o.index == a.d.index || (a.d.type == DeviceType::CPU));
    } catch (...) {
      return false;
    }
  }).def("__hash__", [](const PyDevice& d) { return static_cast<int>(d.d.type) * 1000 + d.d.index; });
}

}  // namespace flow::py
