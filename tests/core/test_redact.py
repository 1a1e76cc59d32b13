"""Backlog's API key out of printed text (core/redact.py): URLs, header dumps and log records."""

from __future__ import annotations

import logging
import sys

import pytest

from core.redact import REDACT_FILTER, secrets_redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'HTTP Request: GET https://acme.backlog.jp/api/v2/issues?apiKey=s3cr3t&count=1 "HTTP/1.1 401"',
            'HTTP Request: GET https://acme.backlog.jp/api/v2/issues?apiKey=****&count=1 "HTTP/1.1 401"',
        ),
        (
            "<Request('GET', 'https://a.backlog.jp/x?apikey=s3cr3t')>",
            "<Request('GET', 'https://a.backlog.jp/x?apikey=****')>",
        ),
        ("next=%2Fx%3FapiKey%3Ds3cr3t", "next=%2Fx%3FapiKey%3D****"),
        ("{'Backlog-API-Key': 's3cr3t', 'Accept': '*/*'}", "{'Backlog-API-Key': '****', 'Accept': '*/*'}"),
        ("backlog-api-key: s3cr3t\r\nhost: x", "backlog-api-key: ****\r\nhost: x"),
        ("[(b'Backlog-API-Key', b's3cr3t')]", "[(b'Backlog-API-Key', b'****')]"),
        ("[('apiKey', 's3cr3t'), ('count', '1')]", "[('apiKey', '****'), ('count', '1')]"),
        ("nothing to hide here", "nothing to hide here"),
    ],
)
def test_it_redacts_the_key_wherever_a_url_or_header_prints_it(text, expected):
    assert secrets_redact(text) == expected
    assert "s3cr3t" not in secrets_redact(text)


def test_it_rewrites_a_record_and_its_traceback():
    try:
        raise RuntimeError("GET https://acme.backlog.jp/api/v2/users/myself?apiKey=s3cr3t failed")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "calling %s", ("?apiKey=s3cr3t",), None)
        record.exc_info = sys.exc_info()

    assert REDACT_FILTER.filter(record) is True
    assert record.getMessage() == "calling ?apiKey=****"
    assert "s3cr3t" not in record.exc_text and "apiKey=****" in record.exc_text
