"""LINE Official Account plans in Japan (since 2023-06).

Source: https://developers.line.biz/en/docs/messaging-api/pricing/
"""

from django.db import migrations

PLANS = [
    ("communication", "コミュニケーションプラン", 200, False),
    ("light", "ライトプラン", 5000, False),
    ("standard", "スタンダードプラン", 30000, True),
]


def add_plans(apps, schema_editor):
    LinePlan = apps.get_model("linepush", "LinePlan")
    for code, name, monthly, additional in PLANS:
        LinePlan.objects.update_or_create(
            code=code, defaults={"name": name, "monthly_messages": monthly, "additional_messages": additional}
        )


class Migration(migrations.Migration):
    dependencies = [("linepush", "0002_group_push")]

    operations = [migrations.RunPython(add_plans, migrations.RunPython.noop)]
