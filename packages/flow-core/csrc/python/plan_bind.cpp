// _C._Plan: a precompiled list of op calls over numbered tensor slots, run in one Python -> C++ call.
//
// Graph compilers (flow-graph) lower a traced program to it. Each step names a registry op, the slots of its
// tensor inputs, its attributes (parsed once, here, against the op's schema) and the slots its outputs go to;
// run() enters the dispatcher for each step with grad mode off (no autograd recording), so a step costs the
// dispatcher, meta inference, allocation and the kernel, and no Python.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "../autograd/grad_mode.h"
#include "../dispatch/dispatch.h"
#include "bind.h"
#include "errors.h"

namespace flow::py {

namespace {

struct PlanStep {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<int64_t> inputs;   // slot per tensor input, -1: an absent optional input
  std::vector<int64_t> outputs;  // slot per output, -1: not kept
  std::vector<int64_t> frees;    // slots released after this step (their last use)
};

class Plan {
 public:
  Plan(nb::list steps, int64_t num_slots) : num_slots_(num_slots) {
    FLOW_VALUE_CHECK(num_slots >= 0, "_Plan: num_slots must be >= 0, got ", num_slots);
    for (nb::handle h : steps) {
      nb::tuple t = nb::borrow<nb::tuple>(h);
      FLOW_VALUE_CHECK(t.size() == 5, "_Plan: a step is (op_name, input_slots, attrs, output_slots, frees)");
      PlanStep s;
      std::string name = nb::cast<std::string>(t[0]);
      s.op = find_op(name);
      FLOW_VALUE_CHECK(s.op != nullptr, "_Plan: no registry op named '", name, "'");
      s.inputs = nb::cast<std::vector<int64_t>>(t[1]);
      s.outputs = nb::cast<std::vector<int64_t>>(t[3]);
      s.frees = nb::cast<std::vector<int64_t>>(t[4]);
      for (const auto* list : {&s.inputs, &s.outputs, &s.frees})
        for (int64_t i : *list)
          FLOW_VALUE_CHECK(i >= -1 && i < num_slots, "_Plan: step '", name, "' names slot ", i, " of ", num_slots);
      const Schema& schema = s.op->functional ? s.op->functional->schema : s.op->schema;
      nb::dict attrs = nb::borrow<nb::dict>(t[2]);
      s.attrs.schema = &schema;
      s.attrs.values.resize(schema.attr_args.size());
      for (size_t k = 0; k < schema.attr_args.size(); ++k) {
        const ArgDef& d = schema.attr_args[k];
        s.attrs.values[k] = attrs.contains(d.name.c_str()) ? parse_attr(*s.op, d, -1, attrs[d.name.c_str()])
                                                           : dispatch::parse_default(d);
      }
      steps_.push_back(std::move(s));
    }
  }

  // Runs the steps over `slots` (num_slots tensors or None: the inputs, variables and constants filled in) and
  // returns the tensors in `results` (slot numbers) afterwards.
  nb::list run(nb::list slots, const std::vector<int64_t>& results) const {
    FLOW_VALUE_CHECK(static_cast<int64_t>(slots.size()) == num_slots_, "_Plan.run: expected ", num_slots_,
                     " slots, got ", slots.size());
    std::vector<Tensor> env(num_slots_);
    for (int64_t i = 0; i < num_slots_; ++i) {
      nb::handle o = slots[i];
      if (!o.is_none()) env[i] = to_tensor_arg(o, "_Plan.run", "slots");
    }
    {
      autograd::AutoGradMode no_grad(false);
      TensorList in;
      for (const PlanStep& s : steps_) {
        in.clear();
        for (int64_t i : s.inputs) in.push_back(i < 0 ? Tensor() : env[i]);
        TensorList out = dispatch::call(*s.op, in, s.attrs);
        for (size_t k = 0; k < s.outputs.size() && k < out.size(); ++k)
          if (s.outputs[k] >= 0) env[s.outputs[k]] = std::move(out[k]);
        for (int64_t i : s.frees)
          if (i >= 0) env[i] = Tensor();
      }
    }
    nb::list r;
    for (int64_t i : results) {
      FLOW_VALUE_CHECK(i >= 0 && i < num_slots_, "_Plan.run: no slot ", i);
      r.append(wrap(env[i]));
    }
    return r;
  }

  size_t size() const { return steps_.size(); }

 private:
  int64_t num_slots_;
  std::vector<PlanStep> steps_;
};

}  // namespace

void init_plan(nb::module_& m) {
  nb::class_<Plan>(m, "_Plan")
      .def(nb::init<nb::list, int64_t>(), nb::arg("steps"), nb::arg("num_slots"))
      .def("run", &Plan::run, nb::arg("slots"), nb::arg("results"))
      .def("__len__", &Plan::size);
}

}  // namespace flow::py
