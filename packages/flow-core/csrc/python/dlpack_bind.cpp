// DLPack (https://dmlc.github.io/dlpack/latest/): zero-copy tensor exchange with NumPy, PyTorch, JAX, ...
// Both capsule kinds of the Python specification are produced and consumed: "dltensor_versioned"
// (DLManagedTensorVersioned, DLPack >= 1.0) and the legacy "dltensor" (DLManagedTensor). An exported capsule owns
// a reference to the tensor's storage until the consumer calls the deleter (or the unconsumed capsule dies); an
// imported tensor's storage calls the producer's deleter when its last view dies.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../ops/functions.h"
#include "bind.h"

namespace flow::py {

// ---- the ABI: our own definitions of the structs of dlpack.h (v1.1); layouts must not change ----------------------
namespace dl {
extern "C" {
struct PackVersion {
  uint32_t major;
  uint32_t minor;
};
struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};
struct ManagedTensorVersioned {
  PackVersion version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};
}

constexpr uint32_t kMajor = 1, kMinor = 1;
constexpr uint64_t kFlagReadOnly = 1ULL << 0, kFlagIsCopied = 1ULL << 1;
enum DeviceType : int32_t {
  kCPU = 1,
  kCUDA = 2,
  kCUDAHost = 3,
  kOpenCL = 4,
  kVulkan = 7,
  kMetal = 8,
  kROCM = 10,
  kCUDAManaged = 13,
  kOneAPI = 14
};
enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kOpaque = 3, kBfloat = 4, kComplex = 5, kBool = 6 };

constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kLegacyName = "dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
}  // namespace dl

static const char* device_type_name(int32_t t) {
  switch (t) {
    case dl::kCPU: return "cpu";
    case dl::kCUDA: return "cuda";
    case dl::kCUDAHost: return "cuda_host (pinned)";
    case dl::kOpenCL: return "opencl";
    case dl::kVulkan: return "vulkan";
    case dl::kMetal: return "metal";
    case dl::kROCM: return "rocm";
    case dl::kCUDAManaged: return "cuda_managed";
    case dl::kOneAPI: return "oneapi";
    default: return "unknown";
  }
}

static dl::DataType to_dl_dtype(DType d) {
  dl::DataType r{dl::kInt, static_cast<uint8_t>(itemsize(d) * 8), 1};
  switch (d) {
    case DType::Bool: r.code = dl::kBool; break;
    case DType::UInt8: r.code = dl::kUInt; break;
    case DType::Float16:
    case DType::Float32:
    case DType::Float64: r.code = dl::kFloat; break;
    case DType::BFloat16: r.code = dl::kBfloat; break;
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: r.code = dl::kInt; break;
  }
  return r;
}

static DType from_dl_dtype(dl::DataType t) {
  const char* kind = "unknown";
  switch (t.code) {
    case dl::kInt: kind = "int"; break;
    case dl::kUInt: kind = "uint"; break;
    case dl::kFloat: kind = "float"; break;
    case dl::kBfloat: kind = "bfloat"; break;
    case dl::kComplex: kind = "complex"; break;
    case dl::kBool: kind = "bool"; break;
    case dl::kOpaque: kind = "opaque_handle"; break;
    default: break;
  }
  if (t.lanes == 1) {
    if (t.code == dl::kBool && t.bits == 8) return DType::Bool;
    if (t.code == dl::kUInt && t.bits == 8) return DType::UInt8;
    if (t.code == dl::kInt) {
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 64) return DType::Int64;
    }
    if (t.code == dl::kFloat) {
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
    }
    if (t.code == dl::kBfloat && t.bits == 16) return DType::BFloat16;
  }
  fail(ErrorKind::Type, "from_dlpack: DLPack dtype ", kind, static_cast<int>(t.bits),
       t.lanes != 1 ? " with lanes=" + std::to_string(t.lanes) : std::string(),
       " is not supported by oneflow; the supported dtypes are bool, uint8, int8, int16, int32, int64, float16, "
       "bfloat16, float32 and float64");
}

// ---- export ---------------------------------------------------------------------------------------------------------
// What an exported capsule owns: the DLPack struct, the arrays it points to and a reference to the storage.
template <typename Managed>
struct Exported {
  Managed managed{};
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> shape, strides;

  static void deleter(Managed* m) noexcept { delete static_cast<Exported*>(m->manager_ctx); }
};

template <typename Managed>
static void capsule_destructor(PyObject* capsule, const char* name) noexcept {
  // A consumed capsule was renamed "used_..." and its tensor belongs to the consumer now.
  if (!PyCapsule_IsValid(capsule, name)) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);  // a destructor may run while an exception is set
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  PyErr_Restore(type, value, tb);
}

static void versioned_capsule_destructor(PyObject* c) noexcept {
  capsule_destructor<dl::ManagedTensorVersioned>(c, dl::kVersionedName);
}
static void legacy_capsule_destructor(PyObject* c) noexcept {
  capsule_destructor<dl::ManagedTensor>(c, dl::kLegacyName);
}

template <typename Managed>
static std::unique_ptr<Exported<Managed>> describe(const Tensor& t) {
  auto e = std::make_unique<Exported<Managed>>();
  e->storage = t.impl()->storage;
  e->shape.assign(t.sizes().begin(), t.sizes().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  dl::Tensor& d = e->managed.dl_tensor;
  // An empty tensor may sit past its storage's end: hand out the storage's base, which no one reads through.
  d.data = t.numel() == 0 ? t.impl()->storage->data : t.raw_data();
  d.device = {dl::kCPU, 0};
  d.ndim = static_cast<int32_t>(t.dim());
  d.dtype = to_dl_dtype(t.dtype());
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &Exported<Managed>::deleter;
  return e;
}

// A capsule sharing t's memory: DLPack 1.x when `versioned`, the legacy kind otherwise. `copied` marks a tensor
// __dlpack__(copy=True) made for the consumer (the IS_COPIED flag).
static nb::object to_dlpack(const Tensor& t0, bool versioned, bool copied) {
  FLOW_TYPE_CHECK(t0.defined(), "__dlpack__: expected a tensor");
  if (!t0.device().is_cpu())
    throw nb::buffer_error(("__dlpack__: can't export a tensor on device '" + t0.device().str() +
                            "'; this build of oneflow exchanges CPU memory only")
                               .c_str());
  Tensor t = readable(t0);  // a handler's tensor (a global one gathered), or t0 itself
  FLOW_RUNTIME_CHECK(t.has_storage(), "__dlpack__: can't export a tensor without storage");
  PyObject* cap = nullptr;
  if (versioned) {
    auto e = describe<dl::ManagedTensorVersioned>(t);
    e->managed.version = {dl::kMajor, dl::kMinor};
    e->managed.flags = copied ? dl::kFlagIsCopied : 0;
    cap = PyCapsule_New(&e->managed, dl::kVersionedName, versioned_capsule_destructor);
    if (cap != nullptr) e.release();  // the capsule owns it now
  } else {
    auto e = describe<dl::ManagedTensor>(t);
    cap = PyCapsule_New(&e->managed, dl::kLegacyName, legacy_capsule_destructor);
    if (cap != nullptr) e.release();
  }
  if (cap == nullptr) throw nb::python_error();
  return nb::steal(cap);
}

// ---- import ---------------------------------------------------------------------------------------------------------
// What an imported tensor's storage owns: the producer's DLManagedTensor(Versioned), released through its deleter.
struct Imported {
  void* managed;
  bool versioned;
};

static void release_imported(void*, void* ctx, size_t) {
  std::unique_ptr<Imported> owner(static_cast<Imported*>(ctx));
  // Producers such as NumPy drop Python references in their deleter: it needs a live interpreter and the GIL.
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (owner->versioned) {
    auto* m = static_cast<dl::ManagedTensorVersioned*>(owner->managed);
    if (m->deleter) m->deleter(m);
  } else {
    auto* m = static_cast<dl::ManagedTensor*>(owner->managed);
    if (m->deleter) m->deleter(m);
  }
  PyGILState_Release(gil);
}

// Checks a DLTensor and wraps its memory; on failure nothing is taken (the capsule keeps ownership).
static Tensor wrap_dl_tensor(const dl::Tensor& d, std::unique_ptr<Imported>& owner) {
  if (d.device.device_type != dl::kCPU && d.device.device_type != dl::kCUDAHost)
    throw nb::buffer_error(("from_dlpack: can't import a tensor on DLPack device " +
                            std::string(device_type_name(d.device.device_type)) + ":" +
                            std::to_string(d.device.device_id) + " (device type " +
                            std::to_string(d.device.device_type) + "); this build of oneflow imports CPU memory only")
                               .c_str());
  DType dt = from_dl_dtype(d.dtype);
  FLOW_VALUE_CHECK(d.ndim >= 0, "from_dlpack: invalid DLTensor with ndim=", d.ndim);
  FLOW_VALUE_CHECK(d.ndim == 0 || d.shape != nullptr, "from_dlpack: invalid DLTensor without a shape");
  Shape sizes(d.shape, d.shape + d.ndim);
  Shape strides = d.strides != nullptr ? Shape(d.strides, d.strides + d.ndim) : contiguous_strides(sizes);
  int64_t max_off = 0;
  bool empty_arr = false;
  for (int32_t i = 0; i < d.ndim; ++i) {
    FLOW_VALUE_CHECK(sizes[i] >= 0, "from_dlpack: invalid DLTensor with a negative size ", sizes[i]);
    if (sizes[i] <= 1) strides[i] = std::max<int64_t>(strides[i], 0);  // any stride of a length-1 dim is unread
    FLOW_VALUE_CHECK(strides[i] >= 0, "from_dlpack: the DLPack tensor has a negative stride (", strides[i], " in dim ",
                     i, "), which oneflow tensors do not support; pass a copy instead");
    if (sizes[i] == 0) empty_arr = true;
    else max_off += (sizes[i] - 1) * strides[i];
  }
  char* data = static_cast<char*>(d.data) + d.byte_offset;
  FLOW_VALUE_CHECK(empty_arr || data != nullptr, "from_dlpack: invalid DLTensor with a null data pointer");
  FLOW_VALUE_CHECK(reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(itemsize(dt)) == 0,
                   "from_dlpack: the DLPack tensor's data is not aligned to its ", itemsize(dt),
                   "-byte elements; pass a copy instead");
  size_t nbytes = empty_arr ? 0 : static_cast<size_t>((max_off + 1) * itemsize(dt));
  Tensor t = from_blob(data, sizes, strides, dt, Device{}, &release_imported, owner.get(), nbytes);
  owner.release();  // the storage owns it now
  return t;
}

static void warn_read_only() {
  if (PyErr_WarnEx(PyExc_UserWarning,
                   "from_dlpack: the DLPack tensor is marked read-only; oneflow tensors are always writable, so "
                   "writing to this tensor is undefined behaviour",
                   1) < 0)
    throw nb::python_error();
}

// A tensor sharing the memory of a DLPack capsule, which is renamed "used_..." (consumed).
static nb::object from_capsule(nb::handle cap) {
  PyObject* c = cap.ptr();
  if (PyCapsule_IsValid(c, dl::kVersionedName)) {
    auto* m = static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(c, dl::kVersionedName));
    // A newer major version may have changed the layout below `version`: refuse without touching it.
    if (m->version.major > dl::kMajor)
      throw nb::buffer_error(("from_dlpack: the capsule uses DLPack " + std::to_string(m->version.major) + "." +
                              std::to_string(m->version.minor) + ", but oneflow supports DLPack up to " +
                              std::to_string(dl::kMajor) + "." + std::to_string(dl::kMinor))
                                 .c_str());
    auto owner = std::make_unique<Imported>(Imported{m, true});
    Tensor t = wrap_dl_tensor(m->dl_tensor, owner);
    if (PyCapsule_SetName(c, dl::kUsedVersionedName) != 0) throw nb::python_error();
    if (m->flags & dl::kFlagReadOnly) warn_read_only();
    return wrap(std::move(t));
  }
  if (PyCapsule_IsValid(c, dl::kLegacyName)) {
    auto* m = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(c, dl::kLegacyName));
    auto owner = std::make_unique<Imported>(Imported{m, false});
    Tensor t = wrap_dl_tensor(m->dl_tensor, owner);
    if (PyCapsule_SetName(c, dl::kUsedLegacyName) != 0) throw nb::python_error();
    return wrap(std::move(t));
  }
  if (PyCapsule_CheckExact(c)) {
    const char* name = PyCapsule_GetName(c);
    PyErr_Clear();
    bool used = name != nullptr && std::strncmp(name, "used_", 5) == 0;
    fail(ErrorKind::Value, "from_dlpack: ",
         used ? "the DLPack capsule was already consumed (a capsule can be imported only once)"
              : "expected a DLPack capsule named 'dltensor' or 'dltensor_versioned', got one named '" +
                    std::string(name ? name : "") + "'");
  }
  fail(ErrorKind::Type, "from_dlpack: expected a DLPack capsule or an object with __dlpack__, got ",
       nb::str(nb::handle(cap.type()).attr("__name__")).c_str());
}

void init_dlpack(nb::module_& m) {
  m.def("_to_dlpack", &to_dlpack, nb::arg("tensor"), nb::arg("versioned"), nb::arg("copied") = false,
        "A DLPack capsule sharing the tensor's memory (see Tensor.__dlpack__).");
  m.def("_from_dlpack_capsule", &from_capsule, nb::arg("capsule"),
        "A tensor sharing a DLPack capsule's memory; the capsule is consumed (see oneflow.from_dlpack).");
  m.attr("_dlpack_version") = nb::make_tuple(dl::kMajor, dl::kMinor);
}

}  // namespace flow::py
