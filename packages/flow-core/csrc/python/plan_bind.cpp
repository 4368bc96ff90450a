// oneflow._C.Plan: the core's plan executor (plan/plan.h) for Python builders (flow-graph's lowering).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../plan/plan.h"
#include "bind.h"

namespace flow::py {

static nb::object meta_to_py(const TensorMeta& m) {
  nb::list shape;
  for (int64_t s : m.sizes) shape.append(s);
  return nb::make_tuple(nb::tuple(shape), dtype_object(m.dtype), device_object(m.device));
}

static std::vector<int> slots_arg(nb::handle seq, const char* what) {
  FLOW_TYPE_CHECK(PySequence_Check(seq.ptr()) && !PyUnicode_Check(seq.ptr()), "Plan: ", what,
                  " must be a sequence of slots");
  std::vector<int> out;
  for (nb::handle e : nb::borrow<nb::sequence>(seq)) {
    if (e.is_none()) {
      out.push_back(-1);
      continue;
    }
    FLOW_TYPE_CHECK(PyLong_Check(e.ptr()) && !PyBool_Check(e.ptr()), "Plan: ", what,
                    " must hold slot numbers (int) or None, not ", Py_TYPE(e.ptr())->tp_name);
    out.push_back(nb::cast<int>(e));
  }
  return out;
}

// A run's inputs: tensors, or None for an absent optional value.
static TensorList run_inputs(nb::handle seq, const char* who) {
  TensorList in;
  for (nb::handle e : nb::borrow<nb::sequence>(seq))
    in.push_back(e.is_none() ? Tensor() : to_tensor_arg(e, who, "inputs"));
  return in;
}

void init_plan(nb::module_& m) {
  using plan::Plan;
  nb::class_<Plan>(m, "Plan",
                   "A precompiled list of registry kernel calls over numbered value slots, run in one call with no "
                   "Python, dispatcher or autograd per op (flow-graph lowers its IR to this).")
      .def(nb::init<>())
      .def("add_input",
           [](Plan& p, nb::handle shape, nb::handle dtype, nb::handle device) {
    Shape sizes;
    for (nb::handle e : nb::borrow<nb::sequence>(shape)) sizes.push_back(nb::cast<int64_t>(e));
    Device d = device.is_none() ? Device{} : device_arg(device);
    return p.add_input(sizes, dtype_arg(dtype), d);
  }, nb::arg("shape"), nb::arg("dtype"), nb::arg("device") = nb::none(),
           "A run() argument of this shape, dtype and device; returns its slot.")
      .def("add_constant", [](Plan& p, nb::handle t) { return p.add_constant(to_tensor_arg(t, "Plan", "constant")); },
           nb::arg("tensor"), "A tensor bound into the plan, shared (parameters, buffers); returns its slot.")
      .def("add_step",
           [](Plan& p, nb::handle op, nb::handle inputs, nb::dict attrs, nb::handle num_outputs) {
    const OpDef& def = op_of(op);
    int n = num_outputs.is_none() ? -1 : nb::cast<int>(num_outputs);
    return p.add_step(def, slots_arg(inputs, "inputs"), attrs_by_name(def, attrs), n);
  }, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs") = nb::dict(), nb::arg("num_outputs") = nb::none(),
           "A call of registry op `op` on the values in slots `inputs` (None: an absent optional input) with "
           "attributes by name; returns the slots of its outputs.")
      .def("set_outputs", [](Plan& p, nb::handle slots) { p.set_outputs(slots_arg(slots, "outputs")); },
           nb::arg("slots"))
      .def("set_offsets",
           [](Plan& p, size_t step, const std::vector<int64_t>& offsets) { p.set_offsets(step, offsets); },
           nb::arg("step"), nb::arg("offsets"),
           "Arena byte offsets for a step's outputs (-1: none), chosen by a memory-planning pass; checked by "
           "finalize() instead of planning its own.")
      .def("finalize", &Plan::finalize, nb::arg("compress_memory") = false,
           "Checks the plan on meta tensors, computes where each value dies and plans the arena (with "
           "compress_memory, searching several placements for the smallest arena).")
      .def("run",
           [](const Plan& p, nb::handle inputs) { return wrap_list(p.run(run_inputs(inputs, "Plan.run")), false); },
           nb::arg("inputs"), "Runs every step on `inputs` and returns the output values as a list.")
      .def("run_profiled",
           [](const Plan& p, nb::handle inputs) {
    std::vector<int64_t> ns;
    nb::object out = wrap_list(p.run(run_inputs(inputs, "Plan.run_profiled"), &ns), false);
    return nb::make_tuple(out, nb::cast(ns));
  }, nb::arg("inputs"), "As run(), and also returns each step's wall time in nanoseconds: (outputs, [ns per step]).")
      .def_prop_ro("finalized", &Plan::finalized)
      .def_prop_ro("num_steps", [](const Plan& p) { return p.steps().size(); })
      .def_prop_ro("num_slots", &Plan::num_slots)
      .def_prop_ro("num_inputs", &Plan::num_inputs)
      .def_prop_ro("outputs", [](const Plan& p) { return p.outputs(); })
      .def_prop_ro("memory",
                   [](const Plan& p) {
    const plan::MemoryStats& s = p.memory();
    nb::dict d;
    d["arena_bytes"] = s.arena_bytes;
    d["arena_values"] = s.arena_values;
    d["unplanned_values"] = s.unplanned_values;
    d["naive_bytes"] = s.naive_bytes;
    d["live_bytes"] = s.live_bytes;
    return d;
  })
      .def_prop_ro("steps",
                   [](const Plan& p) {
    nb::list out;
    for (const plan::Step& st : p.steps()) {
      nb::dict d;
      d["op"] = st.op->name;
      d["inputs"] = nb::cast(st.inputs);
      d["outputs"] = nb::cast(st.outputs);
      d["offsets"] = nb::cast(st.offsets);
      d["release"] = nb::cast(st.release);
      nb::list metas;
      for (const TensorMeta& m : st.metas) metas.append(meta_to_py(m));
      d["metas"] = metas;
      out.append(d);
    }
    return out;
  })
      .def("slot_meta",
           [](const Plan& p, int slot) -> nb::object {
    auto m = p.slot_meta(slot);
    return m ? meta_to_py(*m) : nb::none();
  }, nb::arg("slot"), "(shape, dtype, device) of a slot after finalize(); None when unknown.")
      .def("__repr__", [](const Plan& p) {
    return "<oneflow._C.Plan: " + std::to_string(p.num_inputs()) + " inputs, " + std::to_string(p.steps().size()) +
           " steps, " + std::to_string(p.outputs().size()) + " outputs" +
           (p.finalized() ? ", arena " + std::to_string(p.memory().arena_bytes) + " bytes>" : ", not finalized>");
  });
  m.def("_plan_assign_offsets",
        [](const std::vector<std::pair<int, int>>& intervals, const std::vector<int64_t>& bytes, int64_t align,
           bool search) {
    FLOW_VALUE_CHECK(intervals.size() == bytes.size(), "assign_offsets: ", intervals.size(), " intervals but ",
                     bytes.size(), " sizes");
    FLOW_VALUE_CHECK(align > 0, "assign_offsets: align must be positive");
    std::vector<int64_t> offsets;
    int64_t total = plan::assign_offsets(intervals, bytes, offsets, align, search);
    return std::make_pair(total, offsets);
  },
        nb::arg("intervals"), nb::arg("bytes"), nb::arg("align") = 64, nb::arg("search") = false);
}

}  // namespace flow::py
