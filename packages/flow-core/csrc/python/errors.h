// The one mapping from flow::ErrorKind to Python exception types, for every place a C++ error reaches Python
// (op calls' fast path and nanobind's translator), so that a FLOW_*_CHECK raises the same type however it is reached.
#pragma once
#include <Python.h>

#include "../core/error.h"

namespace flow::py {

inline PyObject* python_error_type(ErrorKind kind) {
  switch (kind) {  // no default: a new ErrorKind must be given its Python type here (-Wswitch)
    case ErrorKind::Type: return PyExc_TypeError;
    case ErrorKind::Value: return PyExc_ValueError;
    case ErrorKind::Index: return PyExc_IndexError;
    case ErrorKind::NotImplemented: return PyExc_NotImplementedError;
    case ErrorKind::Runtime: return PyExc_RuntimeError;
  }
  return PyExc_RuntimeError;
}

inline void set_python_error(const Error& e) { PyErr_SetString(python_error_type(e.kind()), e.what()); }

}  // namespace flow::py
