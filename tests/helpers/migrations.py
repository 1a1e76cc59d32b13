"""Migrating a test database to older heads and back, and rows for any historical model:
the tests of models that moved between apps (tests/core, tests/line)."""

from __future__ import annotations

import uuid
from datetime import date

from django.contrib.contenttypes.models import ContentType
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    ContentType.objects.clear_cache()
    # Django's own apps at their latest state (the old heads do not depend on all of it).
    django_apps = [node for node in leaf_nodes() if node[0] in ("admin", "auth", "contenttypes")]
    return MigrationExecutor(connection).loader.project_state([t for t in targets if t[1]] + django_apps).apps


def leaf_nodes():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def value_for(field: models.Field, make):
    """A value for a required field of a historical model (one row per model: no clashes)."""
    if field.is_relation:
        return make(field.related_model)
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.DateTimeField):
        return timezone.now()
    if isinstance(field, models.DateField):
        return date(2026, 12, 1)
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.JSONField):
        return {"kept": "値"}
    if isinstance(field, models.BooleanField):
        return True
    if isinstance(field, models.IntegerField | models.FloatField | models.DecimalField):
        return 7
    if isinstance(field, models.CharField | models.TextField):
        return "v"[: field.max_length or 1]
    raise AssertionError(f"no test value for {field.model.__name__}.{field.name} ({type(field).__name__})")


def required(field: models.Field) -> bool:
    auto_time = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
    return field.concrete and not (field.primary_key or field.null or field.has_default() or auto_time)


def row_maker(apps):
    made: dict[type, models.Model] = {}

    def make(model):
        if model not in made:
            made[model] = model.objects.create(
                **{f.name: value_for(f, make) for f in model._meta.fields if required(f)}
            )
        return made[model]

    return make, made


def as_stored(model) -> list[dict]:
    names = [f.attname for f in model._meta.concrete_fields]
    return list(model.objects.order_by("pk").values(*names))
