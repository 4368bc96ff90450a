"""``oneflow.onnx``: ``torch.onnx``'s names, so that programs which import it (or call
:func:`is_in_onnx_export` in a model's forward) run. oneflow has no ONNX exporter: :func:`export` and the other
functions that need one raise :class:`ExportNotSupportedError` (a ``NotImplementedError``) naming the function.
"""
import enum

__all__ = ["export", "is_in_onnx_export", "register_custom_op_symbolic", "unregister_custom_op_symbolic",
           "select_model_mode_for_export", "OnnxExporterError", "ExportNotSupportedError", "TrainingMode",
           "OperatorExportTypes"]


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter (``torch.onnx.OnnxExporterError``)."""


class ExportNotSupportedError(OnnxExporterError, NotImplementedError):
    """Raised by the ``oneflow.onnx`` functions that need an ONNX exporter, which oneflow does not have."""


class TrainingMode(enum.IntEnum):
    """The mode to export a model in (``torch.onnx.TrainingMode``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How operators are exported (``torch.onnx.OperatorExportTypes``)."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _not_supported(name):
    return ExportNotSupportedError(
        f"oneflow.onnx.{name} is not supported: oneflow has no ONNX exporter (export the model from PyTorch with "
        "torch.onnx.export)")


def export(model, args=(), f=None, **kwargs):
    """Exports a model to ONNX, as ``torch.onnx.export``: not supported.

    Raises:
        ExportNotSupportedError: always; oneflow has no ONNX exporter.
    """
    raise _not_supported("export")


def is_in_onnx_export():
    """Whether an ONNX export is in progress: never, there is no exporter."""
    return False


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Registers an ONNX symbolic function for a custom op: not supported (there is no exporter).

    Raises:
        ExportNotSupportedError: always.
    """
    raise _not_supported("register_custom_op_symbolic")


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Unregisters an ONNX symbolic function: not supported (there is no exporter).

    Raises:
        ExportNotSupportedError: always.
    """
    raise _not_supported("unregister_custom_op_symbolic")


def select_model_mode_for_export(model, mode):
    """A context manager that sets the training mode of a model for export: not supported (there is no
    exporter).

    Raises:
        ExportNotSupportedError: always.
    """
    raise _not_supported("select_model_mode_for_export")
