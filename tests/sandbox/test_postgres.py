"""The e2e stacks' PostgreSQL databases: one per test run, dropped after a clean run."""

from __future__ import annotations

import subprocess
import sys

import psycopg

from sandbox.postgres import postgres_drop, postgres_recreate
from sandbox.stack import ROOT
from tests.helpers.stack import e2e_postgres_url

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def _exists(name: str) -> bool:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def test_a_suite_running_beside_this_one_gets_databases_of_its_own():
    code = "from tests.helpers.stack import e2e_postgres_url; print(e2e_postgres_url('many'))"
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)

    assert other.stdout.strip() != e2e_postgres_url("many")


def test_a_stacks_database_is_made_and_dropped():
    url = e2e_postgres_url("dropped")
    name = url.rsplit("/", 1)[1]

    postgres_recreate(url)
    made = _exists(name)
    postgres_drop(url)

    assert made and not _exists(name)
