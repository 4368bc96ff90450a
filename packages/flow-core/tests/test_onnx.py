"""oneflow.onnx: importable with torch.onnx's names; the functions that need an exporter say it is not supported."""
import pytest
import torch

import oneflow as flow


def test_importable_like_torch_onnx():
    import oneflow.onnx
    from oneflow.onnx import OperatorExportTypes, TrainingMode, export, is_in_onnx_export  # noqa: F401

    assert flow.onnx is oneflow.onnx
    for name in oneflow.onnx.__all__:
        if name != "ExportNotSupportedError":
            assert hasattr(torch.onnx, name), name
    for ours, theirs in ((TrainingMode, torch.onnx.TrainingMode),
                         (OperatorExportTypes, torch.onnx.OperatorExportTypes)):
        assert {m.name: int(m) for m in ours} == {k: int(v) for k, v in theirs.__members__.items()}


def test_is_in_onnx_export_is_false_like_torch_outside_an_export():
    assert flow.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False


@pytest.mark.parametrize("name,args", [
    ("export", (flow.nn.Linear(2, 2), (flow.ones(1, 2),), "model.onnx")),
    ("register_custom_op_symbolic", ("custom::op", lambda g, x: x, 17)),
    ("unregister_custom_op_symbolic", ("custom::op", 17)),
    ("select_model_mode_for_export", (flow.nn.Linear(2, 2), flow.onnx.TrainingMode.EVAL)),
])
def test_exporting_functions_say_not_supported(name, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotImplementedError, match=f"^oneflow.onnx.{name} is not supported: oneflow has no ONNX "
                                                  "exporter") as e:
        getattr(flow.onnx, name)(*args)
    assert isinstance(e.value, flow.onnx.OnnxExporterError) and isinstance(e.value, RuntimeError)
    assert list(tmp_path.iterdir()) == []


def test_export_keywords_of_torch_are_accepted_before_refusing():
    with pytest.raises(flow.onnx.ExportNotSupportedError, match="oneflow.onnx.export"):
        flow.onnx.export(flow.nn.Linear(2, 2), (flow.ones(1, 2),), "m.onnx", input_names=["x"], opset_version=17,
                         dynamic_axes={"x": {0: "batch"}}, training=flow.onnx.TrainingMode.EVAL, dynamo=False)
