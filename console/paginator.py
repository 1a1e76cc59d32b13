"""The admin's paginator for record tables that grow by the million (events, attempts).

Django's changelist counts every row it could list. On PostgreSQL a count reads the whole
table, which grows with the stored events and attempts; an unfiltered list of a large
table takes the planner's estimate instead (`pg_class.reltuples`, kept by autovacuum).
A filtered list (a manager's tenant, an outcome) and SQLite count exactly.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

ESTIMATE_FROM = 100_000  # rows: below this an exact count is cheap


class LargeTablePaginator(Paginator):
    @cached_property
    def count(self) -> int:
        estimate = self._estimate()
        return estimate if estimate is not None else super().count

    def _estimate(self) -> int | None:
        queryset = self.object_list
        query = getattr(queryset, "query", None)
        if query is None or query.where or query.distinct or query.combinator:
            return None
        connection = connections[queryset.db]
        if connection.vendor != "postgresql":
            return None
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [queryset.model._meta.db_table]
            )
            row = cursor.fetchone()
        estimate = int(row[0]) if row else -1  # -1: never analysed
        return estimate if estimate >= ESTIMATE_FROM else None
