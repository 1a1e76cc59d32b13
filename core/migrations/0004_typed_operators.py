"""Operator entries say which Backlog identifier they are: `id:1001` or `user:yamada`.

An untyped entry matched both a numeric user id and a userId. It is migrated as the
documented meaning had it: all digits = a numeric user id, anything else = a userId.
Backwards drops the types again.
"""

import re

from django.db import migrations, models

import core.models

TYPED = re.compile(r"(id|user):.+")


def _typed(entry: str) -> str:
    if TYPED.fullmatch(entry):
        return entry
    return f"id:{entry}" if entry.isdigit() else f"user:{entry}"


def _untyped(entry: str) -> str:
    return entry.split(":", 1)[1] if TYPED.fullmatch(entry) else entry


def _rewrite(apps, change) -> None:
    Tenant = apps.get_model("core", "Tenant")
    for tenant in Tenant.objects.exclude(operators=[]).only("pk", "operators"):
        entries = tenant.operators if isinstance(tenant.operators, list) else []
        new = list(dict.fromkeys(change(str(e).strip()) for e in entries if str(e).strip()))
        if new != tenant.operators:
            Tenant.objects.filter(pk=tenant.pk).update(operators=new)


def forwards(apps, schema_editor):
    _rewrite(apps, _typed)


def backwards(apps, schema_editor):
    _rewrite(apps, _untyped)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_max_concurrent_deliveries_default"),
    ]

    operations = [
        migrations.AlterField(
            model_name="tenant",
            name="operators",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="1 件ずつ id:1001（Backlog の数値のユーザーID）または user:yamada（userId = ログインID）と種類を付けて書きます。表示名は一意ではないため一致しません。",
                validators=[core.models.validate_operators],
                verbose_name="コメントコマンドを許可するユーザー",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
