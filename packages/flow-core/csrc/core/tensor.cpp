#include "tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "../autograd/meta.h"
#include "allocator.h"

namespace flow {

void (*g_release_py_class)(void*) = nullptr;
void (*g_retain_py_object)(void*) = nullptr;

TensorImpl::TensorImpl() = default;
TensorImpl::~TensorImpl() {
  if (py_dict && g_release_py_class) g_release_py_class(py_dict);
  if (py_class && g_release_py_class) g_release_py_class(py_class);
}

void TensorImpl::refresh_geometry() {
  numel = shape_numel(sizes);
  bool c = true;
  int64_t expected = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) {
      c = false;
      break;
    }
    expected *= sizes[i];
  }
  contiguous = c || numel == 0;
}

int64_t Tensor::size(int64_t d) const { return impl_->sizes[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }

void* Tensor::raw_data() const {
  FLOW_RUNTIME_CHECK(impl_->storage != nullptr,
                     "Cannot access data of a tensor that has no storage (a wrapper subclass or meta tensor)");
  return static_cast<char*>(impl_->storage->data) + impl_->offset * flow::itemsize(impl_->dtype);
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  if (dim < lo || dim > hi)
    fail(ErrorKind::Index, op, ": Dimension out of range (expected to be in range of [", lo, ", ", hi, "], but got ",
         dim, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

static void free_cpu(void* data, void*, size_t nbytes) { cpu_free(data, nbytes); }

// The bytes a storage must hold for a tensor of these sizes and strides (checked for overflow and negatives).
static size_t storage_nbytes(const Shape& sizes, const Shape& strides, DType dtype) {
  for (int64_t s : sizes)
    FLOW_RUNTIME_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape_str(sizes));
  int64_t extent = 1;  // elements the storage must span
  bool overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      extent = 0;
      overflow = false;
      break;
    }
    int64_t span;
    overflow |= strides[i] < 0;  // as in PyTorch, which reports it the same way
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(extent, span, &extent);
  }
  int64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(extent, flow::itemsize(dtype), &nbytes);
  FLOW_RUNTIME_CHECK(!overflow, "Storage size calculation overflowed with sizes=", shape_str(sizes),
                     " and strides=", shape_str(strides));
  return static_cast<size_t>(nbytes);
}

static std::shared_ptr<TensorImpl> new_impl(const Shape& sizes, const Shape& strides, DType dtype, Device device) {
  FLOW_RUNTIME_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape: ", sizes.size(),
                     " sizes and ", strides.size(), " strides");
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = dtype;
  impl->device = device;
  impl->refresh_geometry();
  return impl;
}

Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype, Device device) {
  check_device_available(device);
  size_t nbytes = storage_nbytes(sizes, strides, dtype);
  auto impl = new_impl(sizes, strides, dtype, device);
  if (device.type == DeviceType::Meta) return Tensor(std::move(impl));  // metadata only: no memory behind it
  auto st = std::make_shared<Storage>();
  st->nbytes = nbytes;
  st->device = device;
  st->data = cpu_alloc(st->nbytes);
  st->free_fn = &free_cpu;
  impl->storage = std::move(st);
  return Tensor(std::move(impl));
}

static void free_reserved(void* data, void*, size_t nbytes) { munmap(data, nbytes == 0 ? 1 : nbytes); }

Tensor empty_reserved(const Shape& sizes, const Shape& strides, DType dtype) {
  size_t nbytes = storage_nbytes(sizes, strides, dtype);
  auto impl = new_impl(sizes, strides, dtype, Device{});
  // a private mapping that the kernel backs with pages only where it is written (reads see zeros): an
  // address of its own, no resident memory, no commit charge, outside the caching allocator and its counts
  size_t len = nbytes == 0 ? 1 : nbytes;  // mmap refuses empty mappings
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  FLOW_RUNTIME_CHECK(p != MAP_FAILED, "empty_reserved: could not reserve ", len, " bytes of address space");
  auto st = std::make_shared<Storage>();
  st->nbytes = nbytes;
  st->device = Device{};
  st->data = p;
  st->free_fn = &free_reserved;
  impl->storage = std::move(st);
  return Tensor(std::move(impl));
}

static void free_shared(void* data, void*, size_t nbytes) { munmap(data, nbytes == 0 ? 1 : nbytes); }

void share_memory_(const Tensor& t) {
  TensorImpl* d = t.impl();
  if (!d->storage || d->device.type != DeviceType::CPU || d->storage->free_fn == &free_shared) return;
  Storage& st = *d->storage;
  size_t len = st.nbytes == 0 ? 1 : st.nbytes;  // mmap refuses empty mappings
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  FLOW_RUNTIME_CHECK(p != MAP_FAILED, "share_memory_: could not map ", len, " bytes of shared memory");
  if (st.nbytes) std::memcpy(p, st.data, st.nbytes);
  if (st.free_fn) st.free_fn(st.data, st.ctx, st.nbytes);
  st.data = p;
  st.free_fn = &free_shared;
  st.ctx = nullptr;
}

bool is_shared(const Tensor& t) { return t.impl()->storage && t.impl()->storage->free_fn == &free_shared; }

void resize_(const Tensor& t, const Shape& sizes) {
  TensorImpl* d = t.impl();
  for (int64_t s : sizes)
    FLOW_RUNTIME_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape_str(sizes));
  FLOW_RUNTIME_CHECK(d->storage != nullptr, "resize_: the tensor has no storage");
  int64_t n = 1;
  for (int64_t s : sizes) {
    FLOW_RUNTIME_CHECK(s == 0 || n <= std::numeric_limits<int64_t>::max() / s, "resize_: size ", shape_str(sizes),
                       " overflows");
    n *= s;
  }
  size_t need = static_cast<size_t>(n == 0 ? 0 : d->offset + n) * flow::itemsize(d->dtype);
  Storage& st = *d->storage;
  if (need > st.nbytes) {
    FLOW_RUNTIME_CHECK(st.free_fn == &free_cpu && d->device.type == DeviceType::CPU,
                       "Trying to resize storage that is not resizable");
    void* grown = cpu_alloc(need);
    if (st.nbytes) std::memcpy(grown, st.data, st.nbytes);
    cpu_free(st.data, st.nbytes);
    st.data = grown;
    st.nbytes = need;
  }
  d->sizes = sizes;
  d->strides = contiguous_strides(sizes);
  d->refresh_geometry();
}

Tensor empty(const Shape& sizes, DType dtype, Device device) {
  return empty_strided(sizes, contiguous_strides(sizes), dtype, device);
}

Tensor empty_meta(const Shape& sizes, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  impl->refresh_geometry();
  return Tensor(std::move(impl));
}

Tensor shallow_copy(const Tensor& t, bool keep_base) {
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl* s = t.impl();
  impl->storage = s->storage;
  impl->sizes = s->sizes;
  impl->strides = s->strides;
  impl->offset = s->offset;
  impl->numel = s->numel;
  impl->dtype = s->dtype;
  impl->device = s->device;
  impl->contiguous = s->contiguous;
  impl->is_wrapped_number = s->is_wrapped_number;
  impl->is_inference = s->is_inference;
  impl->handler_key = s->handler_key;
  if (keep_base) impl->base = s->base;
  // A subclass with a dispatch handler (a storage-less wrapper) stays one: its detached copies, and the
  // outputs autograd saves, keep its class and attributes, which say where its values live.
  if (s->py_handler && s->py_class && g_retain_py_object) {
    g_retain_py_object(s->py_class);
    impl->py_class = s->py_class;
    impl->py_handler = true;
    if (s->py_dict) {
      g_retain_py_object(s->py_dict);
      impl->py_dict = s->py_dict;
    }
  }
  return Tensor(std::move(impl));
}

Tensor to_meta(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = t.sizes();
  impl->strides = t.strides();
  impl->offset = t.offset();
  impl->dtype = t.dtype();
  impl->device = Device{DeviceType::Meta, -1};
  impl->is_wrapped_number = t.impl()->is_wrapped_number;
  impl->refresh_geometry();
  return Tensor(std::move(impl));
}

bool geometry_within(const Shape& sizes, const Shape& strides, int64_t offset, int64_t limit) {
  if (sizes.size() != strides.size() || offset < 0) return false;
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t n) { return n < 0; })) return false;
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t n) { return n == 0; })) return true;
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t span;  // (size - 1) * stride, refused where it overflows
    if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span)) return false;
    int64_t& end = span < 0 ? lo : hi;
    if (__builtin_add_overflow(end, span, &end)) return false;
  }
  return lo >= 0 && hi < limit;
}

Tensor make_view(const Tensor& src, Shape sizes, Shape strides, int64_t offset) {
  return make_view(src, std::move(sizes), std::move(strides), offset, src.dtype());
}

Tensor make_view(const Tensor& src, Shape sizes, Shape strides, int64_t offset, DType dtype) {
  const auto& storage = src.impl()->storage;
  const int64_t limit = storage ? static_cast<int64_t>(storage->nbytes) / flow::itemsize(dtype) : 0;
  FLOW_RUNTIME_CHECK(!storage || geometry_within(sizes, strides, offset, limit), "view of size ", shape_str(sizes),
                     ", stride ", shape_str(strides), " and offset ", offset, " is out of bounds for a storage of ",
                     storage ? storage->nbytes : 0, " bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = src.impl()->storage;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->device = src.device();
  impl->is_inference = src.impl()->is_inference;
  impl->base = src.impl()->base ? src.impl()->base : src.impl_ptr();
  impl->refresh_geometry();
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, DType dtype, Device device,
                 Storage::FreeFn free_fn, void* ctx, size_t nbytes) {
  auto st = std::make_shared<Storage>();
  st->data = data;
  st->nbytes = nbytes;
  st->device = device;
  st->free_fn = free_fn;
  st->ctx = ctx;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(st);
  impl->sizes = sizes;
  impl->strides = strides;
  impl->dtype = dtype;
  impl->device = device;
  impl->refresh_geometry();
  return Tensor(std::move(impl));
}

}  // namespace flow
