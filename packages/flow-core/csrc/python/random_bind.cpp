// oneflow._C.Generator and the default CPU generator. Random ops receive a generator as its integer handle
// (see ops/random.cpp); the Python wrappers pass `Generator._handle`.
#include <cstring>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../core/generator.h"
#include "bind.h"

namespace flow::py {

namespace {
struct PyGenerator {
  std::shared_ptr<Generator> g;
};

uint64_t seed_arg(nb::handle seed) {
  // PyTorch accepts [-2^63, 2^64): negative seeds wrap around to uint64
  nb::object v = nb::steal(PyNumber_Index(seed.ptr()));
  if (!v) {
    PyErr_Clear();
    fail(ErrorKind::Type, "manual_seed expected an int, got ",
         nb::str(nb::handle(seed.type()).attr("__name__")).c_str());
  }
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow == 0) return static_cast<uint64_t>(s);
  unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    fail(ErrorKind::Runtime,
         "Overflow when unpacking long: manual_seed expected a long in range "
         "[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]");
  }
  return static_cast<uint64_t>(u);
}
}  // namespace

void init_random(nb::module_& m) {
  nb::class_<PyGenerator>(m, "Generator", "A source of random numbers (Philox4x32-10, counter-based).")
      .def("__init__",
           [](PyGenerator* self, nb::handle device) {
    Device d = device_arg(device);
    FLOW_RUNTIME_CHECK(d.is_cpu(), "Generator: only CPU generators are supported in this build, got ", d.str());
    new (self) PyGenerator{make_generator()};
  }, nb::arg("device") = nb::none())
      .def("manual_seed",
           [](nb::handle self, nb::handle seed) {
    nb::inst_ptr<PyGenerator>(self)->g->manual_seed(seed_arg(seed));
    return nb::borrow(self);
  }, nb::arg("seed"), "Sets the seed (and rewinds the stream); returns the generator.")
      .def("seed", [](PyGenerator& s) { return s.g->seed(); },
           "Reseeds from a non-deterministic source and returns the seed.")
      .def("initial_seed", [](PyGenerator& s) { return s.g->initial_seed(); })
      .def("get_state",
           [](PyGenerator& s) {
    std::vector<uint8_t> st = s.g->get_state();
    Tensor t = empty({static_cast<int64_t>(st.size())}, DType::UInt8);
    std::memcpy(t.raw_data(), st.data(), st.size());
    return wrap(t);
  }, "The state as a uint8 tensor (seed and offset).")
      .def("set_state",
           [](nb::handle self, nb::handle state) {
    FLOW_TYPE_CHECK(is_tensor(state.ptr()), "set_state: expected a oneflow.Tensor (ByteTensor), got ",
                    nb::str(nb::handle(state.type()).attr("__name__")).c_str());
    const Tensor& t = unwrap(state.ptr());
    FLOW_TYPE_CHECK(t.dtype() == DType::UInt8, "set_state: RNG state must be a torch.ByteTensor (uint8), got ",
                    dtype_name(t.dtype()));
    FLOW_RUNTIME_CHECK(t.dim() == 1 && t.is_contiguous() && t.has_storage(),
                       "set_state: RNG state must be a contiguous 1-D uint8 tensor");
    nb::inst_ptr<PyGenerator>(self)->g->set_state(t.data<uint8_t>(), static_cast<size_t>(t.numel()));
    return nb::borrow(self);
  }, nb::arg("new_state"))
      .def_prop_ro("device", [](PyGenerator&) { return device_object(Device{}); })
      .def_prop_ro("_handle", [](PyGenerator& s) {
    return s.g->handle();
  }).def("__repr__", [](PyGenerator&) { return std::string("<oneflow._C.Generator object>"); });
  m.attr("default_generator") = nb::cast(PyGenerator{default_generator()});
  m.def("_philox4x32_10", [](std::vector<uint32_t> ctr, std::vector<uint32_t> key) {
    FLOW_VALUE_CHECK(ctr.size() == 4 && key.size() == 2, "_philox4x32_10: expected 4 counter and 2 key words");
    PhiloxBlock r = philox4x32_10({ctr[0], ctr[1], ctr[2], ctr[3]}, key[0], key[1]);
    return std::vector<uint32_t>(r.begin(), r.end());
  });
}

}  // namespace flow::py
