// Registry ops as Python callables: `_C.ops.<name>(*args, **kwargs)` parses arguments by the op's schema
// and enters the dispatcher. OpHandle objects are also method descriptors, so `Tensor.sin = ops.sin` binds.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>

#include "../autograd/grad_mode.h"
#include "../core/mem_overlap.h"
#include "../dispatch/dispatch.h"
#include "../ops/functions.h"
#include "bind.h"
#include "errors.h"

namespace flow::py {

struct OpHandle {
  const OpDef* op;
};
// The definition an in-place variant mutates with (its traits, meta and trait data), else the op's own.
static const OpDef& own_def(const OpHandle& h) { return h.op->functional ? *h.op->functional : *h.op; }

static const char* type_name(ArgType t) {
  switch (t) {
    case ArgType::Tensor: return "Tensor";
    case ArgType::TensorList: return "tuple of Tensors";
    case ArgType::Int: return "int";
    case ArgType::IntList: return "tuple of ints";
    case ArgType::Float: return "float";
    case ArgType::FloatList: return "tuple of floats";
    case ArgType::Bool: return "bool";
    case ArgType::Str: return "str";
    case ArgType::Scalar: return "Number";
    case ArgType::ScalarType: return "dtype";
    case ArgType::Device: return "device";
  }
  return "?";
}

[[noreturn]] static void bad_arg(const OpDef& op, const ArgDef& a, int pos, nb::handle v) {
  std::string got = nb::str(nb::handle(v.type()).attr("__name__")).c_str();
  std::string hint;
  if (a.type == ArgType::Tensor || a.type == ArgType::TensorList) {
    // a NumPy array or another framework's tensor: name it in full ("not Tensor" would read as ours) and say
    // how to convert (an error path only: the import costs nothing on successful calls)
    nb::object errs = nb::module_::import_("oneflow._input_errors");
    nb::object name = errs.attr("foreign_type_name")(v);
    if (!name.is_none()) {
      got = nb::cast<std::string>(name);
      hint = " " + nb::cast<std::string>(errs.attr("conversion_hint")(v));
    }
  }
  if (pos >= 0)
    fail(ErrorKind::Type, op.name, "(): argument '", a.name, "' (position ", pos + 1, ") must be ", type_name(a.type),
         ", not ", got, hint);
  fail(ErrorKind::Type, op.name, "(): argument '", a.name, "' must be ", type_name(a.type), ", not ", got, hint);
}

static bool to_int(PyObject* o, int64_t& out) {
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) {
    out = PyLong_AsLongLong(o);
    return true;
  }
  if (is_tensor(o)) {
    const Tensor& t = unwrap(o);
    if (t.numel() != 1 || is_floating(t.dtype()) || !t.has_storage()) return false;
    Tensor c = ops::to_dtype(t, DType::Int64);
    out = *c.data<int64_t>();
    return true;
  }
  if (PyIndex_Check(o)) {
    nb::object i = nb::steal(PyNumber_Index(o));
    if (!i) {
      PyErr_Clear();
      return false;
    }
    out = PyLong_AsLongLong(i.ptr());
    return true;
  }
  return false;
}

static AttrValue parse_attr(const OpDef& op, const ArgDef& a, int pos, nb::handle v) {
  PyObject* o = v.ptr();
  if (v.is_none()) {
    if (a.optional) return std::monostate{};
    bad_arg(op, a, pos, v);
  }
  switch (a.type) {
    case ArgType::Int: {
      int64_t i;
      if (to_int(o, i)) return i;
      if (PyBool_Check(o)) return static_cast<int64_t>(o == Py_True);
      break;
    }
    case ArgType::IntList: {
      int64_t i;
      if (to_int(o, i)) return std::vector<int64_t>{i};
      if (PySequence_Check(o) && !PyUnicode_Check(o) && !is_tensor(o)) {
        std::vector<int64_t> out;
        nb::sequence seq = nb::borrow<nb::sequence>(v);
        for (nb::handle e : seq) {
          int64_t x;
          if (!to_int(e.ptr(), x)) bad_arg(op, a, pos, v);
          out.push_back(x);
        }
        return out;
      }
      break;
    }
    case ArgType::Float: {
      Scalar s;
      if (to_scalar(o, s) && !s.is_bool()) return s.to_double();
      if (is_tensor(o) && unwrap(o).numel() == 1) {
        Tensor c = ops::to_dtype(unwrap(o), DType::Float64);
        return *c.data<double>();
      }
      break;
    }
    case ArgType::FloatList: {
      if (PySequence_Check(o) && !PyUnicode_Check(o)) {
        std::vector<double> out;
        for (nb::handle e : nb::borrow<nb::sequence>(v)) {
          Scalar s;
          if (!to_scalar(e.ptr(), s)) bad_arg(op, a, pos, v);
          out.push_back(s.to_double());
        }
        return out;
      }
      Scalar s;
      if (to_scalar(o, s)) return std::vector<double>{s.to_double()};
      break;
    }
    case ArgType::Bool:
      if (PyBool_Check(o)) return o == Py_True;
      if (PyLong_Check(o)) return PyLong_AsLong(o) != 0;
      break;
    case ArgType::Str:
      if (PyUnicode_Check(o)) return std::string(PyUnicode_AsUTF8(o));
      break;
    case ArgType::Scalar: {
      Scalar s;
      if (to_scalar(o, s)) return s;
      if (is_tensor(o) && unwrap(o).numel() == 1 && unwrap(o).has_storage()) {
        const Tensor& t = unwrap(o);
        if (is_floating(t.dtype())) return Scalar(*ops::to_dtype(t, DType::Float64).data<double>());
        if (t.dtype() == DType::Bool) return Scalar(*t.data<bool>());
        return Scalar(*ops::to_dtype(t, DType::Int64).data<int64_t>());
      }
      break;
    }
    case ArgType::ScalarType: {
      DType d;
      if (to_dtype(o, d)) return d;
      break;
    }
    case ArgType::Device: {
      Device d;
      if (to_device(v, d)) return d;
      break;
    }
    default: break;
  }
  bad_arg(op, a, pos, v);
}

static void parse_tensor_arg(const OpDef& op, const ArgDef& a, int pos, nb::handle v, TensorList& inputs) {
  PyObject* o = v.ptr();
  if (a.type == ArgType::Tensor) {
    if (v.is_none()) {
      if (!a.optional) bad_arg(op, a, pos, v);
      inputs.emplace_back();
      return;
    }
    Tensor t;
    if ((a.strict_tensor && !is_tensor(o)) || !to_tensor_or_scalar(o, t)) bad_arg(op, a, pos, v);
    inputs.push_back(std::move(t));
    return;
  }
  if (is_tensor(o) || !PySequence_Check(o) || PyUnicode_Check(o)) bad_arg(op, a, pos, v);
  for (nb::handle e : nb::borrow<nb::sequence>(v)) {
    if (e.is_none() && a.list_elem_optional) {
      inputs.emplace_back();
      continue;
    }
    Tensor t;
    if (!to_tensor_or_scalar(e.ptr(), t)) bad_arg(op, a, pos, v);
    inputs.push_back(std::move(t));
  }
}

// Ops with PyTorch's out= keyword: those that return new tensors (not views or in-place ops).
static bool takes_out(const OpDef& op) {
  if (op.functional || (op.traits & (kView | kInplace))) return false;
  for (const ArgDef& a : op.schema.attr_args)
    if (a.name == "out") return false;
  for (const ArgDef& a : op.schema.tensor_args)
    if (a.name == "out") return false;
  return true;
}

// Parse Python arguments into inputs and attrs by the schema; an out= keyword, where the op takes one, goes
// to *out.
void parse_args(const OpDef& op, PyObject* const* args, size_t nargs, PyObject* kwnames, TensorList& inputs,
                Attrs& attrs, PyObject** out) {
  const Schema& s = (op.functional ? op.functional->schema : op.schema);
  const size_t nparams = s.order.size();
  // the argument given for each parameter (on the stack for every schema but the longest)
  PyObject* given_small[24] = {};
  std::vector<PyObject*> given_big;
  if (nparams > 24) given_big.assign(nparams, nullptr);
  PyObject** given = nparams > 24 ? given_big.data() : given_small;
  FLOW_TYPE_CHECK(nargs <= nparams, op.name, "() takes ", nparams, " positional arguments but ", nargs, " were given");
  for (size_t i = 0; i < nargs; ++i) {
    auto [is_t, idx] = s.order[i];
    const ArgDef& a = is_t ? s.tensor_args[idx] : s.attr_args[idx];
    FLOW_TYPE_CHECK(!a.kwarg_only, op.name, "() takes ", i, " positional arguments but ", nargs, " were given");
    given[i] = args[i];
  }
  if (kwnames) {
    Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nk; ++k) {
      Py_ssize_t len = 0;
      const char* name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kwnames, k), &len);
      if (out && std::strcmp(name, "out") == 0 && takes_out(op)) {
        *out = args[nargs + k];
        continue;
      }
      size_t found = nparams;
      for (size_t i = 0; i < nparams; ++i) {
        auto [is_t, idx] = s.order[i];
        const ArgDef& a = is_t ? s.tensor_args[idx] : s.attr_args[idx];
        const bool same = a.name.size() == static_cast<size_t>(len) && std::memcmp(a.name.data(), name, len) == 0;
        if (same || (i == 0 && len == 5 && std::memcmp(name, "input", 5) == 0)) {
          found = i;
          break;
        }
      }
      FLOW_TYPE_CHECK(found < nparams, op.name, "() got an unexpected keyword argument '", name, "'");
      FLOW_TYPE_CHECK(given[found] == nullptr, op.name, "() got multiple values for argument '", name, "'");
      given[found] = args[nargs + k];
    }
  }
  attrs.values.resize(s.attr_args.size());
  attrs.schema = &s;
  inputs.reserve(s.tensor_args.size());
  std::vector<int64_t> list_lengths;  // kept only where the schema has `_list_lengths`
  for (size_t i = 0; i < nparams; ++i) {
    auto [is_t, idx] = s.order[i];
    const ArgDef& a = is_t ? s.tensor_args[idx] : s.attr_args[idx];
    int pos = i < nargs ? static_cast<int>(i) : -1;
    const size_t before = inputs.size();
    if (!given[i]) {
      FLOW_TYPE_CHECK(a.optional || a.has_default, op.name, "() missing required argument '", a.name, "'");
      if (is_t) inputs.emplace_back();
      else attrs.values[idx] = dispatch::parse_default(a);
    } else if (is_t) {
      parse_tensor_arg(op, a, pos, nb::handle(given[i]), inputs);
    } else {
      attrs.values[idx] = parse_attr(op, a, pos, nb::handle(given[i]));
    }
    if (s.list_lengths_attr >= 0 && a.type == ArgType::TensorList)
      list_lengths.push_back(static_cast<int64_t>(inputs.size() - before));
  }
  if (s.list_lengths_attr >= 0) attrs.values[s.list_lengths_attr] = std::move(list_lengths);
}

// The schema's spelling of an argument's type ("Tensor?", "int[]", "ScalarType?", ...).
static std::string schema_type_name(const ArgDef& a) {
  static const char* names[] = {"Tensor", "Tensor[]", "int",    "int[]",      "float", "float[]",
                                "bool",   "str",      "Scalar", "ScalarType", "Device"};
  std::string t = names[static_cast<int>(a.type)];
  if (a.type == ArgType::TensorList && a.list_elem_optional) t = "Tensor?[]";
  return a.optional ? t + "?" : t;
}

// A handler's (inputs, attrs-by-name) as the dispatcher's TensorList and Attrs; absent attributes take their
// schema defaults.
struct HandlerArgs {
  TensorList in;
  Attrs a;
};
static HandlerArgs handler_args(const OpDef& op, nb::handle inputs, nb::dict attrs) {
  const Schema& s = op.functional ? op.functional->schema : op.schema;
  HandlerArgs r;
  for (nb::handle e : nb::borrow<nb::sequence>(inputs)) {
    if (e.is_none()) r.in.emplace_back();
    else r.in.push_back(to_tensor_arg(e, op.name.c_str(), "inputs"));
  }
  r.a.schema = &s;
  r.a.values.resize(s.attr_args.size());
  for (size_t k = 0; k < s.attr_args.size(); ++k) {
    const ArgDef& d = s.attr_args[k];
    if (attrs.contains(d.name.c_str())) r.a.values[k] = parse_attr(op, d, -1, attrs[d.name.c_str()]);
    else r.a.values[k] = dispatch::parse_default(d);
  }
  return r;
}

// handler_args of an op about to run or be inferred: kernels and meta functions take a required input as
// defined, so a None there (or a missing input) is refused before either could read it.
static HandlerArgs checked_handler_args(const OpDef& op, nb::handle inputs, nb::dict attrs) {
  HandlerArgs r = handler_args(op, inputs, attrs);
  const Schema& s = *r.a.schema;
  const std::vector<InputSpan> spans = split_inputs(r.in, r.a);
  for (size_t k = 0; k < spans.size(); ++k) {
    const ArgDef& t = s.tensor_args[k];
    if (t.type == ArgType::TensorList ? t.list_elem_optional : t.optional) continue;
    for (const Tensor& x : spans[k])
      FLOW_TYPE_CHECK(x.defined(), op.name, "(): argument '", t.name, "' must be ",
                      t.type == ArgType::TensorList ? "a list of Tensors" : "a Tensor", ", not None");
  }
  return r;
}

Attrs attrs_by_name(const OpDef& op, nb::dict attrs) {
  const Schema& s = op.functional ? op.functional->schema : op.schema;
  for (auto [key, value] : attrs) {
    std::string name = nb::cast<std::string>(key);
    bool known = false;
    for (const ArgDef& d : s.attr_args) known |= d.name == name;
    FLOW_TYPE_CHECK(known, op.name, "() has no attribute '", name, "'");
  }
  return handler_args(op, nb::list(), attrs).a;
}

const OpDef& op_of(nb::handle h) {
  FLOW_TYPE_CHECK(nb::isinstance<OpHandle>(h), "expected a registry op (oneflow._C.ops.<name>), not ",
                  Py_TYPE(h.ptr())->tp_name);
  return *nb::cast<OpHandle&>(h).op;
}

static nb::object results_to_py(const OpDef& op, TensorList&& r) {
  const Schema& s = op.functional ? op.functional->schema : op.schema;
  if (s.num_outputs == 1 && r.size() == 1) return wrap(std::move(r[0]));
  return wrap_list(r, true);
}

// PyTorch's out= argument, for every op that returns new tensors: the result is computed as usual, then
// written into `out` (a tensor, or a tuple of them for several outputs), which is resized when its shape
// differs (warning when it held elements) and returned. As in PyTorch, the result's dtype must cast to out's
// without loss of kind, and out= refuses autograd.
static PyObject* call_with_out(const OpDef& op, const TensorList& inputs, const Attrs& attrs, PyObject* out) {
  const size_t n = static_cast<size_t>(op.schema.num_outputs);
  TensorList outs;
  if (n == 1) {
    FLOW_TYPE_CHECK(is_tensor(out), op.name, "(): argument 'out' must be Tensor, not ", Py_TYPE(out)->tp_name);
    outs.push_back(unwrap(out));
  } else {
    bool seq = PyTuple_Check(out) || PyList_Check(out);
    FLOW_TYPE_CHECK(seq && static_cast<size_t>(PySequence_Size(out)) == n, op.name,
                    "(): argument 'out' must be a tuple of ", n, " Tensors");
    for (size_t i = 0; i < n; ++i) {
      PyObject* o = PySequence_Fast_GET_ITEM(out, static_cast<Py_ssize_t>(i));
      FLOW_TYPE_CHECK(is_tensor(o), op.name, "(): argument 'out' must be a tuple of ", n, " Tensors, not ",
                      Py_TYPE(o)->tp_name);
      outs.push_back(unwrap(o));
    }
  }
  if (autograd::GradMode::is_enabled()) {
    auto needs = [](const Tensor& t) { return t.defined() && t.requires_grad(); };
    bool any = std::any_of(inputs.begin(), inputs.end(), needs) || std::any_of(outs.begin(), outs.end(), needs);
    FLOW_RUNTIME_CHECK(!any, op.name,
                       "(): functions with out=... arguments don't support automatic differentiation, "
                       "but one of the arguments requires grad.");
  }
  if (op.has(kElementwise))  // PyTorch's TensorIterator refuses an out that partly overlaps an input
    for (const Tensor& o : outs) check_inplace_overlap(o, inputs, false);
  else if (op.has(kNoInputOverlap))
    for (const Tensor& o : outs) check_no_overlap(o, inputs, 0);
  if (dispatch::try_call_into(op, inputs, attrs, outs)) {
    for (const Tensor& o : outs) o.bump_version();
    Py_INCREF(out);
    return out;
  }
  TensorList r = dispatch::call(op, inputs, attrs);
  for (size_t i = 0; i < n && i < r.size(); ++i) {
    const Tensor& o = outs[i];
    dispatch::check_castable(op.name, r[i].dtype(), o.dtype());
    FLOW_RUNTIME_CHECK(r[i].device() == o.device(), op.name, ": Expected out tensor to have device ",
                       r[i].device().str(), ", but got ", o.device().str(), " instead");
    if (o.sizes() != r[i].sizes()) {
      if (o.numel() != 0) {
        std::string msg = op.name + ": an output with one or more elements was resized since it had shape " +
                          shape_str(o.sizes()) + ", which does not match the required output shape " +
                          shape_str(r[i].sizes()) + ". Pass outputs with zero elements to resize them silently.";
        if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw nb::python_error();
      }
      resize_(o, r[i].sizes());
    }
    if (dispatch::intercepted({o, r[i]})) {
      ops::copy_(o, r[i]);  // through the dispatcher, so the handlers see the write (bumps o's version)
    } else {
      ops::copy_into(o, r[i]);
      o.bump_version();
    }
  }
  Py_INCREF(out);
  return out;
}

static PyObject* op_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  try {
    const OpDef& op = *nb::inst_ptr<OpHandle>(self)->op;
    TensorList inputs;
    Attrs attrs;
    PyObject* out = nullptr;
    parse_args(op, args, PyVectorcall_NARGS(nargsf), kwnames, inputs, attrs, &out);
    if (out && out != Py_None) return call_with_out(op, inputs, attrs, out);
    return results_to_py(op, dispatch::call(op, inputs, attrs)).release().ptr();
  } catch (const Error& e) {
    set_python_error(e);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

static PyObject* op_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  // Slow path (tp_call): convert to vectorcall form.
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  std::vector<PyObject*> flat;
  for (Py_ssize_t i = 0; i < n; ++i) flat.push_back(PyTuple_GET_ITEM(args, i));
  PyObject* kwnames = nullptr;
  if (kwargs && PyDict_Size(kwargs) > 0) {
    kwnames = PyTuple_New(PyDict_Size(kwargs));
    Py_ssize_t pos = 0, k = 0;
    PyObject *key, *val;
    while (PyDict_Next(kwargs, &pos, &key, &val)) {
      Py_INCREF(key);
      PyTuple_SET_ITEM(kwnames, k++, key);
      flat.push_back(val);
    }
  }
  PyObject* r = op_vectorcall(self, flat.data(), static_cast<size_t>(n), kwnames);
  Py_XDECREF(kwnames);
  return r;
}

static PyObject* op_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

// Handles answer __name__ / __qualname__ as functions do (help(), pydoc and functools.wraps read them); a type
// cannot hold properties of those names, so the instance lookup falls back to the op's name.
static PyObject* op_getattro(PyObject* self, PyObject* name) {
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError) || !PyUnicode_Check(name)) return r;
  const char* n = PyUnicode_AsUTF8(name);
  if (n && (std::strcmp(n, "__name__") == 0 || std::strcmp(n, "__qualname__") == 0)) {
    PyErr_Clear();
    return PyUnicode_FromString(nb::inst_ptr<OpHandle>(self)->op->name.c_str());
  }
  return nullptr;
}

static PyType_Slot op_slots[] = {{Py_tp_call, (void*)op_call},
                                 {Py_tp_descr_get, (void*)op_descr_get},
                                 {Py_tp_getattro, (void*)op_getattro},
                                 {0, nullptr}};

nb::object make_op_handle(const OpDef* op);
static nb::handle g_op_type;

nb::object make_op_handle(const OpDef* op) {
  nb::object o = nb::inst_alloc(g_op_type);
  new (nb::inst_ptr<OpHandle>(o)) OpHandle{op};
  nb::inst_mark_ready(o);
  return o;
}

// The handle registered as oneflow._C.ops.<name>.
nb::object op_by_name(const std::string& name) {
  return nb::module_::import_("oneflow._C").attr("ops").attr(name.c_str());
}

void init_ops(nb::module_& m) {
  auto cls = nb::class_<OpHandle>(m, "OpHandle", nb::type_slots(op_slots))
                 .def_prop_ro("name", [](const OpHandle& h) { return h.op->name; })

                 .def_prop_ro("schema",
                              [](const OpHandle& h) {
    return h.op->functional ? h.op->functional->schema.text : h.op->schema.text;
  })
                 .def_prop_ro("traits", [](const OpHandle& h) { return trait_names(h.op->traits); })
                 .def_prop_ro("differentiable", [](const OpHandle& h) { return h.op->differentiable(); })
                 .def_prop_ro("is_inplace", [](const OpHandle& h) { return h.op->functional != nullptr; })
                 .def_prop_ro("attr_names",
                              [](const OpHandle& h) {
    std::vector<std::string> n;
    const Schema& s = h.op->functional ? h.op->functional->schema : h.op->schema;
    for (auto& a : s.attr_args) n.push_back(a.name);
    return n;
  })
                 .def("redispatch",
                      [](const OpHandle& h, nb::handle inputs, nb::dict attrs) {
    // Run the op on `inputs` with attributes given by name (what dispatch handlers receive).
    auto [in, a] = checked_handler_args(*h.op, inputs, attrs);
    return results_to_py(*h.op, dispatch::call(*h.op, in, a));
  }, nb::arg("inputs"), nb::arg("attrs") = nb::dict())
                 .def("meta",
                      [](const OpHandle& h, nb::handle inputs, nb::dict attrs) {
    // Output metadata without running the op: a list of (shape, dtype, device), one per output.
    auto [in, a] = checked_handler_args(*h.op, inputs, attrs);
    const OpDef& op = own_def(h);
    nb::list out;
    for (const TensorMeta& m : dispatch::infer_meta(op, in, a)) {
      nb::list shape;
      for (int64_t s : m.sizes) shape.append(s);
      out.append(nb::make_tuple(nb::tuple(shape), dtype_object(m.dtype), device_object(m.device)));
    }
    return out;
  }, nb::arg("inputs"), nb::arg("attrs") = nb::dict())
                 .def_prop_ro("arguments",
                              [](const OpHandle& h) {
    // The schema as data, in PyTorch's FunctionSchema terms: one dict per parameter in order.
    const Schema& s = h.op->functional ? h.op->functional->schema : h.op->schema;
    nb::list out;
    for (auto [is_t, idx] : s.order) {
      const ArgDef& a = is_t ? s.tensor_args[idx] : s.attr_args[idx];
      nb::dict d;
      d["name"] = a.name;
      d["type"] = schema_type_name(a);
      d["is_tensor"] = is_t;
      d["optional"] = a.optional;
      d["kwarg_only"] = a.kwarg_only;
      d["has_default"] = a.has_default;
      if (a.has_default) d["default"] = is_t ? nb::none() : attr_to_py(dispatch::parse_default(a));
      out.append(d);
    }
    return out;
  })
                 // Trait data (ops/op_traits.h): what SBP inference and fusion read.
                 .def_prop_ro("combiner",
                              [](const OpHandle& h) -> nb::object {
    const OpDef& op = own_def(h);
    if (op.combiner == Combiner::None) return nb::none();
    return nb::str(combiner_name(op.combiner));
  })
                 .def_prop_ro("einsum",
                              [](const OpHandle& h) -> nb::object {
    const OpDef& op = own_def(h);
    return op.einsum.empty() ? nb::none() : nb::object(nb::str(op.einsum.c_str()));
  })
                 .def("dims",
                      [](const OpHandle& h, nb::handle inputs, nb::dict attrs) -> nb::object {
    const OpDef& op = own_def(h);
    if (!op.dims) return nb::none();
    auto [in, a] = checked_handler_args(*h.op, inputs, attrs);
    return nb::cast(op.dims(in, a));
  }, nb::arg("inputs"), nb::arg("attrs") = nb::dict())
                 .def("dim_map",
                      [](const OpHandle& h, nb::handle inputs, nb::dict attrs) -> nb::object {
    const OpDef& op = own_def(h);
    if (!op.dim_map) return nb::none();
    auto [in, a] = checked_handler_args(*h.op, inputs, attrs);
    nb::list out;
    for (auto [x, y] : op.dim_map(in, a)) out.append(nb::make_tuple(x, y));
    return out;
  }, nb::arg("inputs"), nb::arg("attrs") = nb::dict())
                 .def("sbp_signatures",
                      [](const OpHandle& h, nb::handle inputs, nb::dict attrs) {
    // Candidate 1-D SBP signatures as text ("S(0), B -> S(0)"), from the op's traits.
    auto [in, a] = checked_handler_args(*h.op, inputs, attrs);
    std::vector<std::string> out;
    for (const SbpSignature& sig : sbp_candidates(*h.op, in, a)) out.push_back(sig.str());
    return out;
  }, nb::arg("inputs"), nb::arg("attrs") = nb::dict())
                 .def_prop_ro("num_outputs",
                              [](const OpHandle& h) {
    const Schema& s = h.op->functional ? h.op->functional->schema : h.op->schema;
    return s.num_outputs;  // -1: a variable number (Tensor[])
  })
                 .def("__repr__", [](const OpHandle& h) { return "<oneflow op " + h.op->name + ">"; })
                 .def("__eq__", [](const OpHandle& a, const OpHandle& b) { return a.op == b.op; })
                 .def("__eq__", [](const OpHandle&, nb::handle) { return nb::borrow(Py_NotImplemented); })
                 .def("__hash__", [](const OpHandle& h) { return reinterpret_cast<intptr_t>(h.op); })
                 // An op is stateless and one per name, like a builtin function: copies are the op itself, and
                 // pickles (a module holding activation=oneflow.tanh) name it.
                 .def("__copy__", [](const OpHandle& h) { return op_by_name(h.op->name); })
                 .def("__deepcopy__", [](const OpHandle& h, nb::handle) {
    return op_by_name(h.op->name);
  }).def("__reduce__", [](const OpHandle& h) {
    return nb::make_tuple(nb::module_::import_("oneflow._registry_api").attr("op_by_name"), nb::make_tuple(h.op->name));
  });
  g_op_type = cls;
  nb::module_ ops = m.def_submodule("ops", "Every registered op, callable with its schema's arguments.");
  {
    std::vector<std::string> errors = take_registration_errors();  // the core's own: a bug, fail the import
    if (!errors.empty()) fail(ErrorKind::Runtime, "flow-core's ops failed to register: ", errors.front());
  }
  for (const OpDef* op : all_ops()) ops.attr(op->name.c_str()) = make_op_handle(op);
  // After a plugin library registered ops: handles for the new ones (their names are returned), or the
  // registration errors it caused as a RuntimeError.
  m.def("_refresh_ops", [ops]() {
    std::vector<std::string> errors = take_registration_errors();
    nb::list added;  // the ops that did register get their handles even when others failed
    for (const OpDef* op : all_ops())
      if (!nb::hasattr(ops, op->name.c_str())) {
        ops.attr(op->name.c_str()) = make_op_handle(op);
        added.append(op->name);
      }
    if (!errors.empty()) {
      std::string msg = "registering ops failed:";
      for (const std::string& e : errors) msg += "\n  " + e;
      fail(ErrorKind::Runtime, msg);
    }
    return added;
  });
  m.def("list_ops", []() {
    nb::list out;
    for (const OpDef* op : all_ops()) {
      nb::dict d;
      d["name"] = op->name;
      d["schema"] = op->functional ? op->functional->schema.text : op->schema.text;
      d["traits"] = trait_names(op->traits);
      d["differentiable"] = op->differentiable();
      d["has_meta"] = static_cast<bool>((op->functional ? op->functional : op)->meta);
      out.append(d);
    }
    return out;
  });
}

}  // namespace flow::py
