"""Where the fence tests find their servers (a helper module, not tests):
an environment variable that ``.ci/run`` exports. Unset, a CI run
(``CI=true``) fails, since a CI run that quietly skipped would be a test
that can't fail; elsewhere the tests skip, loudly."""

from __future__ import annotations

import os
import warnings

import pytest


def required_env(variable: str, what: str) -> str:
    """``$variable``, or fail (under ``CI=true``) / skip loudly, naming
    ``what`` the variable should hold."""
    value = os.environ.get(variable)
    if value:
        return value
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {variable} ({what}) is not set: .ci/run must start the server and export it")
    reason = f"!!!!!!!! SKIPPING: {variable} ({what}) is not set; set it to run these tests !!!!!!!!"
    warnings.warn(reason)
    pytest.skip(reason)
