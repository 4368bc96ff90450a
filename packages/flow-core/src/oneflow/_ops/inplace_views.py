"""The in-place view ops (``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``,
``as_strided_``): the view is made out of place (so its checks, errors and autograd history are the ordinary
view op's), then the tensor itself takes the view's geometry and history."""
from .. import _C

ops = _C.ops


def _adopt(self, view):
    return _C._adopt_view_(self, view)


def squeeze_(self, dim=None):
    """In-place :meth:`squeeze`."""
    return _adopt(self, self.squeeze() if dim is None else self.squeeze(dim))


def unsqueeze_(self, dim):
    """In-place :meth:`unsqueeze`."""
    return _adopt(self, self.unsqueeze(dim))


def t_(self):
    """In-place :meth:`t`."""
    return _adopt(self, self.t())


def transpose_(self, dim0, dim1):
    """In-place :meth:`transpose`."""
    return _adopt(self, self.transpose(dim0, dim1))


def as_strided_(self, size, stride, storage_offset=None):
    """In-place :meth:`as_strided`."""
    return _adopt(self, self.as_strided(size, stride, storage_offset))


TENSOR_METHODS = {"squeeze_": squeeze_, "unsqueeze_": unsqueeze_, "t_": t_, "transpose_": transpose_,
                  "swapdims_": transpose_, "swapaxes_": transpose_, "as_strided_": as_strided_}
