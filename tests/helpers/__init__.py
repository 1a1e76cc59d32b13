"""Plain helpers the test modules share: factories, payload builders, readers of the fakes.

No tests and no fixtures here (fixtures live in the conftest.py files); a test module never
imports another test module or a conftest, only these.
"""
