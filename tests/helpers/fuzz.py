"""How the receivers' property tests run: a fixed, bounded set of generated bodies, so
`make test` stays fast and a failure shows again on the next run."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

webhook_fuzz = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
