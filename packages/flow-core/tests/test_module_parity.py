"""nn.Module and container behaviour compared with PyTorch: registration rules and their errors, attribute
assignment, dotted look-ups, state_dict/load_state_dict details, conversions and container operations."""
import collections
import copy
import collections.abc
import warnings

import pytest

import oneflow as flow
from helpers import torch


def _outcome(fn, lib):
    """What ``fn(lib)`` gives: ``("ok", value)`` or ``("err", exception type name, message)``, with the library
    name normalised so that oneflow and torch texts compare equal."""
    try:
        r = fn(lib)
        return ("ok", str(r).replace("oneflow", "torch"))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("err", type(e).__name__, str(e).replace("oneflow", "torch"))


def _same(fn):
    got, ref = _outcome(fn, flow), _outcome(fn, torch)
    assert got == ref
    return got


def _net(L):
    class Net(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = L.nn.Linear(2, 3)
            self.register_buffer("b", L.zeros(2))
            self.bn = L.nn.BatchNorm1d(3)
            self.p = L.nn.Parameter(L.ones(1))

    return Net()


# ---- registration ---------------------------------------------------------------------------------------
REGISTRATION = {
    "param dotted name": lambda L: L.nn.Module().register_parameter("a.b", None),
    "param empty name": lambda L: L.nn.Module().register_parameter("", None),
    "param int name": lambda L: L.nn.Module().register_parameter(1, None),
    "param plain tensor": lambda L: L.nn.Module().register_parameter("a", L.ones(1)),
    "buffer dotted name": lambda L: L.nn.Module().register_buffer("a.b", None),
    "buffer empty name": lambda L: L.nn.Module().register_buffer("", None),
    "buffer not a tensor": lambda L: L.nn.Module().register_buffer("a", 3),
    "module dotted name": lambda L: L.nn.Module().add_module("a.b", None),
    "module empty name": lambda L: L.nn.Module().add_module("", None),
    "module not a module": lambda L: L.nn.Module().add_module("a", 3),
    "module is a dict": lambda L: L.nn.Module().add_module("a", collections.OrderedDict()),
    "module dict key with dot": lambda L: L.nn.ModuleDict().__setitem__("a.b", L.nn.ReLU()),
    "init keyword": lambda L: L.nn.Module(foo=1),
    "init positional": lambda L: L.nn.Module(1),
}


@pytest.mark.parametrize("name", list(REGISTRATION))
def test_registration_errors_like_torch(name):
    assert _same(REGISTRATION[name])[0] == "err"


def _assign(L, first, second, name="x"):
    m = L.nn.Module()
    setattr(m, name, first(L))
    setattr(m, name, second(L))
    return m


ASSIGNMENT = {
    "tensor to parameter": lambda L: _assign(L, lambda L: L.nn.Parameter(L.ones(1)), lambda L: L.ones(1)),
    "module to parameter": lambda L: _assign(L, lambda L: L.nn.Parameter(L.ones(1)), lambda L: L.nn.ReLU()),
    "buffer object to parameter": lambda L: _assign(L, lambda L: L.nn.Parameter(L.ones(1)),
                                                    lambda L: L.nn.Buffer(L.ones(1))),
    "buffer object to module": lambda L: _assign(L, lambda L: L.nn.ReLU(), lambda L: L.nn.Buffer(L.ones(1))),
    "int to module": lambda L: _assign(L, lambda L: L.nn.ReLU(), lambda L: 3),
    "get_parameter missing": lambda L: L.nn.Sequential(L.nn.Linear(1, 1)).get_parameter("0.foo"),
    "get_parameter of a buffer": lambda L: L.nn.Sequential(L.nn.BatchNorm1d(1)).get_parameter("0.running_mean"),
    "get_buffer missing": lambda L: L.nn.Sequential(L.nn.Linear(1, 1)).get_buffer("0.foo"),
    "get_buffer of a parameter": lambda L: L.nn.Sequential(L.nn.Linear(1, 1)).get_buffer("0.weight"),
}


@pytest.mark.parametrize("name", list(ASSIGNMENT))
def test_assignment_and_lookup_errors_like_torch(name):
    assert _same(ASSIGNMENT[name])[0] == "err"


def test_int_to_buffer_error_names_buffer_and_tensor():
    m = flow.nn.Module()
    m.register_buffer("x", flow.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'x' \(oneflow.nn.Buffer, oneflow.Tensor or"):
        m.x = 3


def test_registration_hooks_skip_none_parameters_like_torch():
    def run(L):
        log = []
        h = L.nn.modules.module.register_module_parameter_registration_hook(lambda m, n, p: log.append(n))
        try:
            m = L.nn.Module()
            m.register_parameter("none", None)
            m.register_parameter("real", L.nn.Parameter(L.ones(1)))
        finally:
            h.remove()
        return log

    assert run(flow) == run(torch) == ["real"]


def test_buffer_objects_are_stored_as_plain_tensors():
    for L in (flow, torch):
        m = L.nn.Module()
        m.a = L.nn.Buffer(L.ones(2), persistent=False)
        m.register_buffer("b", L.nn.Buffer(L.ones(1)))
        assert type(m.a) is L.Tensor and type(m.b) is L.Tensor
        assert list(m.state_dict()) == ["b"]
        m.a = L.zeros(3)  # a plain tensor keeps the persistence the name was registered with
        assert list(m.state_dict()) == ["b"] and tuple(m.a.shape) == (3,)


# ---- state_dict / load_state_dict -----------------------------------------------------------------------
def test_state_dict_positional_arguments_warn():
    for L in (flow, torch):
        dest = collections.OrderedDict()
        with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
            r = _net(L).state_dict(dest, "pre.")
        assert r is dest and list(dest)[0] == "pre.p"


def test_load_state_dict_result_type_and_repr():
    for L in (flow, torch):
        n = _net(L)
        sd = n.state_dict()
        sd["zz"] = L.ones(1)
        del sd["lin.bias"]
        r = n.load_state_dict(sd, strict=False)
        assert type(r).__name__ == "_IncompatibleKeys" and r._fields == ("missing_keys", "unexpected_keys")
        assert repr(r) == "_IncompatibleKeys(missing_keys=['lin.bias'], unexpected_keys=['zz'])"
        assert repr(n.load_state_dict(n.state_dict())) == "<All keys matched successfully>"


def test_load_state_dict_accepts_any_mapping():
    class Frozen(collections.abc.Mapping):
        def __init__(self, d):
            self.d = d

        def __getitem__(self, k):
            return self.d[k]

        def __iter__(self):
            return iter(self.d)

        def __len__(self):
            return len(self.d)

    for L in (flow, torch):
        m = L.nn.Linear(2, 2)
        m.load_state_dict(Frozen({"weight": L.ones(2, 2), "bias": L.zeros(2)}))
        assert m.weight.detach().sum().item() == 4
        with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
            m.load_state_dict([1, 2])


def test_assign_takes_the_checkpoint_tensors_themselves():
    for L in (flow, torch):
        n = _net(L)
        n.lin.bias.requires_grad_(False)
        sd = {k: v.clone() for k, v in n.state_dict().items()}
        sd["lin.weight"] = L.zeros(3, 2, dtype=L.float64)
        n.load_state_dict(sd, assign=True)
        assert n.b is sd["b"]  # buffers: the very tensor
        assert isinstance(n.lin.weight, L.nn.Parameter) and n.lin.weight.dtype == L.float64
        assert n.lin.weight.requires_grad and not n.lin.bias.requires_grad
        assert "assign_to_params_buffers" not in str(getattr(sd, "_metadata", ""))


def test_load_post_hooks_run_children_first_and_must_return_none():
    def run(L):
        log = []
        m = L.nn.Sequential(L.nn.Linear(1, 1), L.nn.Sequential(L.nn.Linear(1, 1)))
        m.register_load_state_dict_post_hook(lambda mod, k: log.append("root"))
        m[0].register_load_state_dict_post_hook(lambda mod, k: log.append("0"))
        m[1].register_load_state_dict_post_hook(lambda mod, k: log.append("1"))
        m[1][0].register_load_state_dict_post_hook(lambda mod, k: log.append("1.0"))
        m.load_state_dict(m.state_dict())
        return log

    assert run(flow) == run(torch) == ["0", "1.0", "1", "root"]
    for L in (flow, torch):
        m = L.nn.Linear(1, 1)
        m.register_load_state_dict_post_hook(lambda mod, k: 1)
        with pytest.raises(AssertionError, match="not expected to return new values"):
            m.load_state_dict(m.state_dict())


def test_child_pre_hooks_see_only_their_entries():
    def run(L):
        seen = []
        m = L.nn.Sequential(L.nn.Linear(1, 1), L.nn.Linear(1, 1))
        m[1].register_load_state_dict_pre_hook(lambda mod, sd, prefix, *a: seen.append(sorted(sd)))
        m.load_state_dict(m.state_dict())
        return seen

    assert run(flow) == run(torch) == [["1.bias", "1.weight"]]


def test_unexpected_key_equal_to_a_module_prefix():
    def run(L):
        m = L.nn.Sequential(L.nn.Linear(1, 1))
        sd = m.state_dict()
        sd["0."] = L.ones(1)
        sd["0.weight.x"] = L.ones(1)
        return sorted(m.load_state_dict(sd, strict=False).unexpected_keys)

    assert run(flow) == run(torch) == ["0.", "0.weight.x"]


def test_override_with_torch_signature_still_gets_assign():
    for L in (flow, torch):
        class Legacy(L.nn.Linear):
            def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs):
                self.seen = local_metadata.get("assign_to_params_buffers", False)
                super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                              unexpected_keys, error_msgs)

        m = Legacy(1, 1)
        w = L.full((1, 1), 2.0)
        m.load_state_dict({"weight": w, "bias": L.zeros(1)}, assign=True)
        assert m.seen is True and m.weight.detach().item() == 2.0


def test_extra_state_is_loaded_through_set_extra_state_only():
    for L in (flow, torch):
        class SaveOnly(L.nn.Module):
            def get_extra_state(self):
                return 1

        m = L.nn.Sequential(SaveOnly())
        sd = m.state_dict()
        assert list(sd) == ["0._extra_state"]
        with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "0._extra_state"'):
            m.load_state_dict(sd)


# ---- conversions ----------------------------------------------------------------------------------------
CONVERSION = {
    "to int dtype": lambda L: _net(L).to(L.int32),
    "to unknown keyword": lambda L: _net(L).to(foo=3),
    "to trailing junk": lambda L: _net(L).to(L.float64, "x"),
    "to dtype and keyword": lambda L: _net(L).to(L.float64, foo=1),
    "to tensor and junk": lambda L: _net(L).to(L.ones(1), "x"),
    "to(tensor)": lambda L: sorted({str(t.dtype) for t in _net(L).to(L.ones(1, dtype=L.float64)).parameters()}),
    "to(device, dtype)": lambda L: sorted({str(t.dtype) for t in _net(L).to("cpu", L.float16).state_dict().values()}),
    "type(name)": lambda L: sorted({str(t.dtype) for t in _net(L).type(f"{L.__name__}.DoubleTensor").state_dict()
                                    .values()}),
    "cpu returns self": lambda L: (lambda m: m.cpu() is m)(_net(L)),
}


@pytest.mark.parametrize("name", list(CONVERSION))
def test_conversions_like_torch(name):
    _same(CONVERSION[name])


# ---- containers -----------------------------------------------------------------------------------------
def _seq(L):
    return L.nn.Sequential(L.nn.ReLU(), L.nn.Tanh())


def _iadd(L, other):
    s = _seq(L)
    before = s
    s += other(L)
    return s is before, list(s._modules)


CONTAINERS = {
    "sequential + list": lambda L: _seq(L) + [L.nn.ReLU()],
    "sequential += sequential": lambda L: _iadd(L, _seq),
    "sequential += list": lambda L: _iadd(L, lambda L: [L.nn.ReLU()]),
    "modulelist extend non-iterable": lambda L: L.nn.ModuleList().extend(L.nn.ReLU()),
    "modulelist from int": lambda L: L.nn.ModuleList(3),
    "moduledict update int": lambda L: L.nn.ModuleDict().update(3),
    "moduledict update triple": lambda L: L.nn.ModuleDict().update([("a", L.nn.ReLU(), 3)]),
    "moduledict update non-iterable item": lambda L: L.nn.ModuleDict().update([3]),
    "moduledict update keeps dict order": lambda L: list(L.nn.ModuleDict({"b": L.nn.ReLU(), "a": L.nn.Tanh()})),
    "parameterlist setitem out of range": lambda L: L.nn.ParameterList([L.ones(1)]).__setitem__(3, L.ones(1)),
    "parameterlist extend int": lambda L: L.nn.ParameterList().extend(3),
    "parameterlist extend tensor": lambda L: L.nn.ParameterList().extend(L.ones(2, 3)),
    "parameterlist slice": lambda L: [tuple(p.shape) for p in L.nn.ParameterList([L.ones(1), L.ones(2)])[1:]],
    "parameterlist call": lambda L: L.nn.ParameterList()(1),
    "parameterdict call": lambda L: L.nn.ParameterDict()(1),
    "parameterdict update int": lambda L: L.nn.ParameterDict().update(3),
    "parameterdict update triple": lambda L: L.nn.ParameterDict().update([("a", L.ones(1), 3)]),
    "parameterdict update non-iterable item": lambda L: L.nn.ParameterDict().update([3]),
    "parameterdict | int": lambda L: L.nn.ParameterDict() | 3,
    "parameterdict plain dict is sorted": lambda L: list(L.nn.ParameterDict({"b": L.ones(1), "a": L.ones(1)})),
    "parameterdict ordered dict keeps order": lambda L: list(L.nn.ParameterDict(
        collections.OrderedDict([("b", L.ones(1)), ("a", L.ones(1))]))),
    "parameterdict popitem empty": lambda L: L.nn.ParameterDict().popitem(),
}


@pytest.mark.parametrize("name", list(CONTAINERS))
def test_containers_like_torch(name):
    _same(CONTAINERS[name])


def test_sequential_iadd_registers_modules_in_place():
    s = flow.nn.Sequential(flow.nn.Linear(2, 2))
    s += flow.nn.Sequential(flow.nn.ReLU(), flow.nn.Linear(2, 1))
    assert [n for n, _ in s.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert tuple(s(flow.ones(3, 2)).shape) == (3, 1)


def test_no_warnings_from_plain_module_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = _net(flow)
        m.load_state_dict(m.state_dict(prefix=""))
        m.to(flow.float64).float()


def test_deepcopy_keeps_storage_sharing_like_torch():
    # buffers that view one storage (a tensor, a row of it, its transpose) stay views of one copied storage
    def build(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                base = L.arange(12.0).reshape(3, 4)
                self.register_buffer("a", base)
                self.register_buffer("b", base[1])
                self.register_buffer("c", base.t())
        return M()

    for L in (flow, torch):
        m = copy.deepcopy(build(L))
        m.a[1, 0] = 100.0
        assert m.b[0].item() == 100.0 and m.c[0, 1].item() == 100.0
        assert build(L).a[1, 0].item() == 4.0
    fx, tx = flow.randn(5), torch.randn(5)
    fy, ty = copy.deepcopy([fx[1:], fx]), copy.deepcopy([tx[1:], tx])
    fy[1][1] = 7.0
    ty[1][1] = 7.0
    assert fy[0][0].item() == ty[0][0].item() == 7.0
    assert fx[1].item() != 7.0
    # a view of a larger storage keeps its offset and strides
    fz = copy.deepcopy(flow.arange(10.0)[2:8:2])
    assert fz.tolist() == [2.0, 4.0, 6.0] and fz.stride() == (2,)
