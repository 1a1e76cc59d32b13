"""Fake servers of outside services, for the tests, the benchmarks and the ``make run`` sandbox.

Beside the product, never inside it: the sandbox may import automedia (demo.py and
platforms.py read its settings and tenants), no product package imports the sandbox
(tests/sandbox/test_layout.py). Every fake is served by the one HTTP base of http.py:

- backlog/ (records, state, webhooks, routing, api, ui, server, cli) and line/ (records,
  validation, state, api, server, cli): ``python -m sandbox.backlog`` / ``sandbox.line``;
- instagram.py, tiktok.py, hubspot.py on the platform base of fakeserver.py; anthropic.py;
- stack.py: automedia's real processes wired to the fakes (e2e tests, benchmarks);
- demo.py and platforms.py: ``python -m sandbox``, the `sandbox` process of `make run`.
"""
