// oneflow._C: the extension module.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include "../autograd/grad_mode.h"
#include "../core/allocator.h"
#include "../core/cpu_isa.h"
#include "../core/scratch.h"
#include "../kernels/cpu/conv.h"
#include "../kernels/cpu/parallel.h"

#include "bind.h"
#include "errors.h"

namespace flow::py {

static void release_py_class(void* cls) {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(cls));
}

static void retain_py_object(void* obj) {
  nb::gil_scoped_acquire gil;
  Py_INCREF(static_cast<PyObject*>(obj));
}

}  // namespace flow::py

NB_MODULE(_C, m) {
  using namespace flow;
  using namespace flow::py;
  g_release_py_class = &release_py_class;
  g_retain_py_object = &retain_py_object;
  nb::set_leak_warnings(false);  // module-level caches (dtype objects, op handles) live until exit
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_python_error(e);
    }
  });
  init_types(m);
  init_tensor(m);
  init_ops(m);
  init_autograd(m);
  init_dispatch(m);
  init_interop(m);
  init_dlpack(m);
  init_random(m);
  init_autocast(m);
  init_plan(m);
  init_custom_ops(m);
  m.def("get_num_threads", &get_num_threads);
  m.def("set_num_threads", &set_num_threads);
  m.def("cuda_is_built", &cuda_is_built);
  // The libstdc++ ABI this build uses: plugins must compile with the same (oneflow.sysconfig).
  m.def("_cxx11_abi", []() { return static_cast<int>(_GLIBCXX_USE_CXX11_ABI); });
  // The SIMD level the CPU kernels run at (PyTorch's names) and how the library was compiled (cpu_isa.h).
  m.def("_cpu_capability", []() { return std::string(cpu_isa_name(cpu_isa())); });
  m.def("_build_isa", []() { return std::string(build_isa()); });
  m.def("_allocator_stats", []() {
    auto s = cpu_allocator_stats();
    nb::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["cached_bytes"] = s.cached_bytes;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    d["num_system_allocs"] = s.num_system_allocs;
    d["scratch_bytes"] = scratch_reserved_bytes();  // the calling thread's kernel scratch (core/scratch.h)
    return d;
  });
  // Whether a float32 convolution of these sizes and geometry gains from a prepacked weight
  // (convolution_pack_weight): nn.Graph's prepack_conv_weights pass asks before it packs.
  m.def("_conv_weight_packing_pays",
        [](const std::vector<int64_t>& x, const std::vector<int64_t>& w, const std::vector<int64_t>& y,
           const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
           const std::vector<int64_t>& dilation, int64_t groups, bool bias) {
    const size_t ns = w.size() >= 2 ? w.size() - 2 : 0;
    if (x.size() != w.size() || y.size() != w.size() || stride.size() != ns || padding.size() != ns ||
        dilation.size() != ns || groups < 1)
      return false;
    ConvGeom g{stride, padding, dilation, groups};
    return conv_weight_packing_pays(Shape(x.begin(), x.end()), Shape(w.begin(), w.end()), Shape(y.begin(), y.end()), g,
                                    DType::Float32, bias);
  });
  m.def("_empty_cache", &cpu_empty_cache);
  m.def("_reset_peak_stats", &cpu_reset_peak_stats);
}
