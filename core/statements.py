"""INSERT and UPDATE statements written without the ORM's compiler, where building them
must cost little: a commit group's (core/group_commit.py) writes a burst's records while
SQLite's one write lock is held, and a webhook's event store (core/intake.py) is its
request's only write. Each statement is a string and its parameters, every value prepared
by its own field (`get_db_prep_save`), as the ORM would. Only plain columns: no
expressions as values, and a row's primary key is its model's `pk`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model


def rows_update(
    model: type[Model],
    pks: Sequence[Any],
    *,
    each: Mapping[str, Mapping[Any, Any]] | None = None,
    same: Mapping[str, Any] | None = None,
    where: Mapping[str, Any] | None = None,
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """One UPDATE of the rows of these primary keys: `each`, per field, each row's own value
    (primary key → value, for every row); `same`, the values common to them; `where`,
    columns the rows must also hold (None: IS NULL). Returns the number of rows changed."""
    if not pks:
        return 0
    connection = connections[using]
    meta, quote = model._meta, connection.ops.quote_name
    pk_prep = meta.pk.get_db_prep_value
    sets: list[str] = []
    params: list[Any] = []
    for name, values in (each or {}).items():
        field = meta.get_field(name)
        if len(values) == 1:
            sets.append(f"{quote(field.column)} = %s")
            params.append(field.get_db_prep_save(values[pks[0]], connection))
            continue
        case = f"CASE {quote(meta.pk.column)}{' WHEN %s THEN %s' * len(pks)} END"
        if connection.features.requires_casted_case_in_updates:
            case = f"CAST({case} AS {field.cast_db_type(connection)})"
        sets.append(f"{quote(field.column)} = {case}")
        for pk in pks:
            params += [pk_prep(pk, connection), field.get_db_prep_save(values[pk], connection)]
    for name, value in (same or {}).items():
        field = meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    conditions = [f"{quote(meta.pk.column)} IN ({', '.join(['%s'] * len(pks))})"]
    params += [pk_prep(pk, connection) for pk in pks]
    for name, value in (where or {}).items():
        field = meta.get_field(name)
        if value is None:
            conditions.append(f"{quote(field.column)} IS NULL")
        else:
            conditions.append(f"{quote(field.column)} = %s")
            params.append(field.get_db_prep_value(value, connection))
    sql = f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def rows_insert(
    objs: Sequence[Model], *, ignore_conflicts: bool = False, using: str = DEFAULT_DB_ALIAS
) -> None:
    """One INSERT of new rows of one model, each column's value as `save()` would write it
    (defaults, `auto_now_add`); their auto primary keys set on the objects from its RETURNING.
    `ignore_conflicts`: a row that breaks a unique constraint is left out (its object, as
    every object then, keeps no primary key, as with `bulk_create`)."""
    if not objs:
        return
    connection = connections[using]
    meta, quote = type(objs[0])._meta, connection.ops.quote_name
    fields = [field for field in meta.concrete_fields if field is not meta.auto_field]
    params: list[Any] = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="rows_insert")
        params += [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    row = f"({', '.join(['%s'] * len(fields))})"
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)})"
        f" VALUES {', '.join([row] * len(objs))}"
    )
    with connection.cursor() as cursor:
        if ignore_conflicts:
            cursor.execute(f"{sql} ON CONFLICT DO NOTHING", params)
            return
        cursor.execute(f"{sql} RETURNING {quote(meta.pk.column)}", params)
        returned = cursor.fetchall()
    for obj, (pk,) in zip(objs, returned, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = using


@dataclass(frozen=True)
class Held:
    """`row_insert_new`'s condition: a row of `model` holds these values (field name → the
    value as stored in its column, compared as it is: an encrypted field's ciphertext)."""

    model: type[Model]
    values: Mapping[str, Any]


def row_insert_new(obj: Model, *, held: Held | None = None, using: str = DEFAULT_DB_ALIAS) -> bool:
    """One INSERT of a new row, each column's value as `save()` would write it; True, with
    the object's primary key set, when it was stored. False when a stored row has the same
    values of one of the model's unique constraints (`ON CONFLICT DO NOTHING`) or, given
    `held`, when no row holds its values, checked in the same statement. Any other
    refusal (a CHECK, a value too long) is raised."""
    connection = connections[using]
    meta, quote = obj._meta, connection.ops.quote_name
    fields = [field for field in meta.concrete_fields if field is not meta.auto_field]
    obj._prepare_related_fields_for_save(operation_name="row_insert_new")
    params = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    marks = ", ".join(["%s"] * len(fields))
    rows = f"VALUES ({marks})"
    if held is not None:
        rows = f"SELECT {marks} WHERE EXISTS ({_held_sql(held, quote)})"
        params += list(held.values.values())
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)})"
        f" {rows} ON CONFLICT DO NOTHING RETURNING {quote(meta.pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    obj.pk = row[0]
    obj._state.adding = False
    obj._state.db = using
    return True


def _held_sql(held: Held, quote) -> str:
    meta = held.model._meta
    columns = [quote(meta.get_field(name).column) for name in held.values]
    where = " AND ".join(f"{column} = %s" for column in columns)
    return f"SELECT 1 FROM {quote(meta.db_table)} WHERE {where}"
