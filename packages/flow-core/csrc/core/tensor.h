// The tensor: a view (sizes, strides, offset, dtype) of a Storage, plus autograd metadata.
// `Tensor` is a nullable handle (a shared_ptr); an undefined Tensor stands for "None" in op inputs.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "dtype.h"
#include "storage.h"

namespace flow {

using Shape = std::vector<int64_t>;

namespace autograd {
struct Node;
struct AutogradMeta;
}  // namespace autograd

class Tensor;

struct TensorImpl {
  std::shared_ptr<Storage> storage;  // null for storage-less tensors (wrapper subclasses, meta)
  Shape sizes;
  Shape strides;
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  DType dtype = DType::Float32;
  Device device;
  bool contiguous = true;
  bool is_wrapped_number = false;  // a Python scalar turned into a 0-dim tensor: weakest in promotion
  bool is_inference = false;
  std::unique_ptr<autograd::AutogradMeta> autograd;  // allocated on first need
  std::shared_ptr<TensorImpl> base;                   // set for views: the tensor whose storage they view

  // Python side: borrowed pointer to the live Python object, and an owned reference to a subclass type
  // (kept so that a recreated Python object has the right class, and for dispatch handlers).
  void* pyobj = nullptr;
  void* py_class = nullptr;
  void* py_dict = nullptr;  // owned: the __dict__ of subclass instances, so attributes survive re-wrapping
  bool py_handler = false;  // py_class defines __flow_dispatch__
  uint8_t handler_key = 0;  // a C++ tensor handler's key (dispatch::register_tensor_handler), 0: none

  TensorImpl();
  ~TensorImpl();
  void refresh_geometry();  // recompute numel and contiguous from sizes/strides
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& sizes() const { return impl_->sizes; }
  const Shape& strides() const { return impl_->strides; }
  int64_t size(int64_t d) const;    // negative d wraps
  int64_t stride(int64_t d) const;  // negative d wraps
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t numel() const { return impl_->numel; }
  int64_t offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->device; }
  bool is_contiguous() const { return impl_->contiguous; }
  bool has_storage() const { return impl_->storage != nullptr; }
  int64_t itemsize() const { return flow::itemsize(impl_->dtype); }

  // Raw pointer to element [0,...,0]; raises for storage-less tensors.
  void* raw_data() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

  // Version counter (shared by all views of a storage).
  int64_t version() const { return impl_->storage ? impl_->storage->version.load() : 0; }
  void bump_version() const {
    if (impl_->storage) impl_->storage->version.fetch_add(1);
  }

  // Autograd accessors (defined in autograd/meta.cpp).
  bool requires_grad() const;
  void set_requires_grad(bool r) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  bool is_leaf() const;
  autograd::AutogradMeta& autograd_meta() const;  // creates on first use

  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

// Contiguous strides for `sizes`.
Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& sizes);
// Wrap a possibly negative dim; raises IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op = "dim");
std::string shape_str(const Shape& s);

// Factories (no autograd). On the meta device they allocate nothing: the tensor has metadata only.
Tensor empty(const Shape& sizes, DType dtype, Device device = {});
Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype, Device device = {});
// A storage-less tensor carrying only metadata (for wrapper subclasses and meta inference).
Tensor empty_meta(const Shape& sizes, DType dtype, Device device);
// A CPU tensor whose memory is reserved address space that takes no resident memory until written (reads see
// zeros) and stays outside the caching allocator and its statistics: for placeholders that need an address of
// their own but are never computed into (graph tracing's proxies).
Tensor empty_reserved(const Shape& sizes, const Shape& strides, DType dtype);
// A new tensor object over t's memory and metadata, without autograd history (detach, saved tensors, a
// handler's untagged alias). keep_base keeps t's view base (the autograd engine's saved views need it).
Tensor shallow_copy(const Tensor& t, bool keep_base = false);
// t's geometry (sizes, strides, offset, dtype) on the meta device, without storage or autograd history.
Tensor to_meta(const Tensor& t);
// Whether every element offset + sum_i k_i * strides[i] (0 <= k_i < sizes[i]) lies in [0, limit): false for
// negative sizes, mismatched ranks or overflowing arithmetic; an empty geometry needs only offset >= 0.
bool geometry_within(const Shape& sizes, const Shape& strides, int64_t offset, int64_t limit);
// A view of src's storage with new geometry (records src as base). Raises RuntimeError if an element of the
// geometry (or a negative size) falls outside that storage: every view is checked once here, so no kernel can
// be handed one that reads out of bounds.
Tensor make_view(const Tensor& src, Shape sizes, Shape strides, int64_t offset);
// The same storage read as `dtype` (Tensor.view(dtype)): sizes, strides and offset count `dtype` elements.
Tensor make_view(const Tensor& src, Shape sizes, Shape strides, int64_t offset, DType dtype);

// PyTorch's Tensor.resize_: t becomes contiguous with `sizes` at its offset; its storage grows (in place, so
// every view of it sees the new memory) when too small, keeping the old bytes. Memory the tensor does not own
// (numpy's, DLPack's) cannot grow: RuntimeError, as for PyTorch's non-resizable storages.
void resize_(const Tensor& t, const Shape& sizes);

// PyTorch's Tensor.share_memory_ for CPU tensors: the storage's bytes move (in place, for every view of it)
// into a shared anonymous mapping, which processes forked afterwards share instead of copying on write.
// No-op for storages already there and for other devices.
void share_memory_(const Tensor& t);
bool is_shared(const Tensor& t);
// Wrap external memory; `free_fn(data, ctx, nbytes)` runs when the last view dies.
Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, DType dtype, Device device,
                 Storage::FreeFn free_fn, void* ctx, size_t nbytes);

// Hooks set by the Python module so the core never includes Python headers.
extern void (*g_release_py_class)(void* py_class);
extern void (*g_retain_py_object)(void* obj);

}  // namespace flow
