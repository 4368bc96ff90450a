import os
import sys

import pytest

# Tests run against the installed package; in a developer checkout, fall back to the in-place build.
try:
    import oneflow  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _seed():
    import numpy as np

    np.random.seed(0)
    yield
