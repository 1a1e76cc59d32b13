"""Fake servers of outside services, for the tests and the ``make run`` sandbox."""
