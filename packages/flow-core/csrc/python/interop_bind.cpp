// NumPy: zero-copy in both directions on CPU (DLPack itself is in dlpack_bind.cpp).
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include "../ops/functions.h"
#include "bind.h"

namespace flow::py {

static bool dl_to_dtype(nb::dlpack::dtype t, DType& out) {
  using C = nb::dlpack::dtype_code;
  auto code = static_cast<C>(t.code);
  if (t.lanes != 1) return false;
  if (code == C::Bool && t.bits == 8) {
    out = DType::Bool;
    return true;
  }
  if (code == C::Float) {
    if (t.bits == 16) {
      out = DType::Float16;
      return true;
    }
    if (t.bits == 32) {
      out = DType::Float32;
      return true;
    }
    if (t.bits == 64) {
      out = DType::Float64;
      return true;
    }
  }
  if (code == C::Bfloat && t.bits == 16) {
    out = DType::BFloat16;
    return true;
  }
  if (code == C::Int) {
    if (t.bits == 8) {
      out = DType::Int8;
      return true;
    }
    if (t.bits == 16) {
      out = DType::Int16;
      return true;
    }
    if (t.bits == 32) {
      out = DType::Int32;
      return true;
    }
    if (t.bits == 64) {
      out = DType::Int64;
      return true;
    }
  }
  if (code == C::UInt && t.bits == 8) {
    out = DType::UInt8;
    return true;
  }
  return false;
}

static nb::dlpack::dtype dtype_to_dl(DType d) {
  using C = nb::dlpack::dtype_code;
  nb::dlpack::dtype r{};
  r.lanes = 1;
  r.bits = static_cast<uint8_t>(itemsize(d) * 8);
  switch (d) {
    case DType::Bool: r.code = static_cast<uint8_t>(C::Bool); break;
    case DType::UInt8: r.code = static_cast<uint8_t>(C::UInt); break;
    case DType::Float16:
    case DType::Float32:
    case DType::Float64: r.code = static_cast<uint8_t>(C::Float); break;
    case DType::BFloat16: r.code = static_cast<uint8_t>(C::Bfloat); break;
    default: r.code = static_cast<uint8_t>(C::Int); break;
  }
  return r;
}

struct ExternalOwner {
  nb::ndarray<> arr;
};

static void free_external(void*, void* ctx, size_t) {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // the interpreter frees the memory itself
  nb::gil_scoped_acquire gil;
  delete static_cast<ExternalOwner*>(ctx);
}

// Wrap an imported ndarray's memory as a tensor without copying.
static Tensor tensor_from_ndarray(nb::ndarray<> arr, const char* op) {
  FLOW_TYPE_CHECK(arr.device_type() == nb::device::cpu::value, op, ": only CPU memory can be imported in this build");
  DType dt;
  FLOW_TYPE_CHECK(dl_to_dtype(arr.dtype(), dt), op,
                  ": can't convert an array of this dtype; the only supported types are: "
                  "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.");
  Shape sizes(arr.ndim()), strides(arr.ndim());
  int64_t max_off = 0;
  bool empty_arr = false;
  for (size_t i = 0; i < arr.ndim(); ++i) {
    sizes[i] = static_cast<int64_t>(arr.shape(i));
    strides[i] = arr.stride(i);
    FLOW_VALUE_CHECK(strides[i] >= 0 || sizes[i] <= 1, op,
                     ": At least one stride in the given numpy array is negative, and tensors with negative strides "
                     "are not currently supported. (You can probably work around this by making a copy of your "
                     "array with array.copy().) ");
    if (strides[i] < 0) strides[i] = 0;
    if (sizes[i] == 0) empty_arr = true;
    else max_off += (sizes[i] - 1) * strides[i];
  }
  size_t nbytes = empty_arr ? 0 : static_cast<size_t>((max_off + 1) * itemsize(dt));
  void* data = static_cast<char*>(arr.data_handle()) + arr.byte_offset();
  auto* owner = new ExternalOwner{arr};
  return from_blob(data, sizes, strides, dt, Device{}, &free_external, owner, nbytes);
}

static void capsule_release(void* p) noexcept { delete static_cast<std::shared_ptr<Storage>*>(p); }

// An ndarray viewing the tensor's memory; it keeps the storage alive.
static nb::ndarray<> to_ndarray(const Tensor& t) {
  FLOW_RUNTIME_CHECK(t.has_storage(), "can't export a tensor without storage");
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  nb::capsule owner(new std::shared_ptr<Storage>(t.impl()->storage), capsule_release);
  return nb::ndarray<>(t.numel() == 0 ? t.impl()->storage->data : t.raw_data(), shape.size(), shape.data(), owner,
                       strides.data(), dtype_to_dl(t.dtype()), nb::device::cpu::value, 0);
}

void init_interop(nb::module_& m) {
  m.def("_to_numpy", [](const Tensor& t0) {
    FLOW_TYPE_CHECK(t0.dtype() != DType::BFloat16, "Got unsupported ScalarType BFloat16");
    FLOW_TYPE_CHECK(t0.device().is_cpu(), "can't convert ", t0.device().str(),
                    " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
    Tensor t = readable(t0);
    nb::ndarray<nb::numpy> a(to_ndarray(t));
    return a.cast();
  });
  m.def("_from_numpy", [](nb::handle obj) {
    nb::ndarray<> arr;
    FLOW_TYPE_CHECK(nb::try_cast<nb::ndarray<>>(obj, arr), "expected np.ndarray (got ",
                    nb::str(nb::handle(obj.type()).attr("__name__")).c_str(), ")");
    return wrap(tensor_from_ndarray(arr, "from_numpy"));
  });
}

}  // namespace flow::py
