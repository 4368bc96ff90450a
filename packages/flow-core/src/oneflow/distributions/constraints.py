"""Constraints on distribution parameters and supports (PyTorch's ``torch.distributions.constraints``):
each ``check(value)`` returns a bool tensor, one entry per event."""
import oneflow as flow

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean", "simplex", "interval",
           "half_open_interval", "integer_interval", "greater_than", "greater_than_eq", "less_than",
           "nonnegative_integer", "dependent", "dependent_property", "is_dependent", "real_vector",
           "positive_definite", "lower_cholesky", "independent"]


class Constraint:
    """A region of values: ``check(value)`` is True where ``value`` lies in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (checked by the distribution itself)."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=None, event_dim=None):
        return _Dependent(is_discrete=self.is_discrete if is_discrete is None else is_discrete,
                          event_dim=self.event_dim if event_dim is None else event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class dependent_property(property):
    """A property whose constraint depends on the instance (``Uniform.support``)."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        super().__init__(fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn):
        """Used as ``@dependent_property(is_discrete=..., event_dim=...)``."""
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Real(Constraint):
    def check(self, value):
        return value == value  # False for NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(_GreaterThanEq):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return flow.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _RealVector(Constraint):
    event_dim = 1

    def check(self, value):
        return flow.all(value == value, dim=-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        sym = flow.all(flow.all((value - value.transpose(-1, -2)).abs() < 1e-6, dim=-1), dim=-1)
        try:
            flow.linalg.cholesky(value)
            pd = flow.ones(value.shape[:-2], dtype=flow.bool)
        except RuntimeError:  # LinAlgError: check each matrix
            flat = value.reshape(-1, *value.shape[-2:])
            ok = []
            for m in flat:
                try:
                    flow.linalg.cholesky(m)
                    ok.append(True)
                except RuntimeError:
                    ok.append(False)
            pd = flow.tensor(ok, dtype=flow.bool).reshape(value.shape[:-2])
        return sym & pd


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = flow.all(flow.all(value.tril() == value, dim=-1), dim=-1)
        positive_diag = flow.all(value.diagonal(dim1=-2, dim2=-1) > 0, dim=-1)
        return lower & positive_diag


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
nonnegative_integer = _IntegerGreaterThan(0)
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
real_vector = _RealVector()
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its rightmost ``reinterpreted_batch_ndims`` batch dims made event dims: an event
    is valid where all its entries are."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a nonnegative int")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim() - self.reinterpreted_batch_ndims]) + (-1,))
        return result.all(-1)

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


independent = _IndependentConstraint


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return flow.all(is_boolean, dim=-1) & (value.sum(-1) == 1)


class _Multinomial(Constraint):
    """Nonnegative counts along the last dim summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return flow.all(value >= 0, dim=-1) & (value.sum(-1) <= self.upper_bound)

    def __repr__(self):
        return f"Multinomial(upper_bound={self.upper_bound})"


one_hot = _OneHot()
multinomial = _Multinomial
__all__ += ["one_hot", "multinomial"]
