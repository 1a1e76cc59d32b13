"""How the receivers' property tests run: a fixed, bounded set of generated bodies, so
`make test` stays fast and a failure shows again on the next run."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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


def json_leaves(odd_text: list[str], *more: st.SearchStrategy) -> st.SearchStrategy:
    """Scalars a JSON body may hold, with the receiver's own odd strings (and more kinds)."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        *more,
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(odd_text),
    )


def json_values(leaves: st.SearchStrategy) -> st.SearchStrategy:
    """Any small JSON value built of `leaves`."""
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=6,
    )
