"""Loading C++ plugin libraries into the registry: build settings from oneflow.sysconfig, ops registered after
the core's, and registration problems raised as one Python error instead of ending the process."""
import os
import shutil
import subprocess

import pytest

import oneflow as flow
import oneflow.sysconfig as sysconfig

needs_compiler = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler on this machine")


def test_sysconfig_points_at_headers_and_the_core_library():
    inc = sysconfig.get_include()
    assert os.path.isfile(os.path.join(inc, "oneflow", "ops", "registry.h"))
    assert os.path.isfile(os.path.join(sysconfig.get_lib(), "libflow_core.so"))
    flags = sysconfig.get_compile_flags()
    assert f"-I{inc}" in flags and "-std=c++17" in flags
    assert any(f.startswith("-D_GLIBCXX_USE_CXX11_ABI=") for f in flags)
    assert "-lflow_core" in sysconfig.get_link_flags() and sysconfig.with_cuda() is False


def test_load_library_errors():
    with pytest.raises(OSError, match="no such file"):
        flow.ops.load_library("/nonexistent/libnothing.so")
    with pytest.raises(AttributeError, match="no op of that name is registered"):
        flow.ops.no_such_op_anywhere
    assert flow.ops.add is flow._C.ops.add


def build(tmp_path, name, source):
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    lib = tmp_path / f"lib{name}.so"
    cmd = ["c++", "-shared", "-O0", *sysconfig.get_compile_flags(), str(src), "-o", str(lib),
           *sysconfig.get_link_flags()]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return str(lib)


@needs_compiler
def test_a_plugin_op_registers_and_runs(tmp_path):
    lib = build(tmp_path, "plugin_twice", r'''
#include <oneflow/ops/functions.h>
#include <oneflow/ops/registry.h>
using namespace flow;
FLOW_OP(_test_plugin_twice)
    .schema("_test_plugin_twice(Tensor self) -> Tensor")
    .traits(kElementwise | kUnary)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      ops::copy_into(out[0], ops::add(in[0], in[0]));
    })
    .inplace_variant()
    .backward([](BackwardCtx&, const TensorList& g) -> TensorList { return {ops::mul(g[0], Scalar(2.0))}; });
''')
    assert sorted(flow.ops.load_library(lib)) == ["_test_plugin_twice", "_test_plugin_twice_"]
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    y = flow.ops._test_plugin_twice(x)
    y.sum().backward()
    assert y.tolist() == [2.0, 4.0] and x.grad.tolist() == [2.0, 2.0]
    z = flow.tensor([3.0])
    assert z._test_plugin_twice_() is z and z.tolist() == [6.0]  # the in-place variant, as a method
    assert flow.ops._test_plugin_twice(flow.zeros(3, device="meta")).device.type == "meta"


@needs_compiler
def test_registration_problems_raise_and_the_process_survives(tmp_path):
    lib = build(tmp_path, "plugin_bad", r'''
#include <oneflow/ops/registry.h>
using namespace flow;
FLOW_OP(add).schema("add(Tensor self) -> Tensor");                      // taken by the core
FLOW_OP(_test_plugin_bad_schema).schema("_test_plugin_bad_schema(Tensr x) -> Tensor");
FLOW_OP(_test_plugin_fine).schema("_test_plugin_fine(Tensor self) -> Tensor")
    .cpu([](const TensorList& in, const Attrs&) -> TensorList { return {in[0]}; })
    .meta_from_compute();
''')
    with pytest.raises(RuntimeError) as err:
        flow.ops.load_library(lib)
    assert "op 'add' registered twice" in str(err.value)
    assert "_test_plugin_bad_schema" in str(err.value) and "unknown type 'Tensr'" in str(err.value)
    assert (flow.ones(2) + 1).tolist() == [2.0, 2.0]  # the core's add is untouched
    assert flow.ops._test_plugin_fine(flow.ones(1)).tolist() == [1.0]  # the library's good op did register
    assert not hasattr(flow.ops, "_test_plugin_bad_schema")  # the broken one did not
