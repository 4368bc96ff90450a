import pytest


@pytest.fixture(autouse=True)
def _mock_off():
    """Every test starts and ends with the mock off (a failing test must not leave `torch` mocked)."""
    import oneflow.mock_torch as mock

    mock.disable()
    yield
    mock.disable()
