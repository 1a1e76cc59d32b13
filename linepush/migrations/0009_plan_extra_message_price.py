"""The price of an extra message on the plans that allow them, for the approval-time quota
forecast; the three plans' figures are refreshed with it.

Today's LINE Official Account plans in Japan (unchanged since the 2023-06-01 revision):
コミュニケーションプラン 200 messages a month, no extra messages; ライトプラン 5,000, no extra
messages; スタンダードプラン 30,000, extra messages at up to ¥3 each (lower in volume tiers).
Sources: https://developers.line.biz/en/docs/messaging-api/pricing/ and
https://www.lycbiz.com/jp/service/line-official-account/plan/ (linked from it).
"""

from decimal import Decimal

from django.db import migrations, models

PLANS = [
    ("communication", "コミュニケーションプラン", 200, False, None),
    ("light", "ライトプラン", 5000, False, None),
    ("standard", "スタンダードプラン", 30000, True, Decimal("3")),
]


def set_prices(apps, schema_editor):
    LinePlan = apps.get_model("linepush", "LinePlan")
    for code, name, monthly, additional, price in PLANS:
        LinePlan.objects.update_or_create(
            code=code,
            defaults={
                "name": name,
                "monthly_messages": monthly,
                "additional_messages": additional,
                "extra_message_price_yen": price,
            },
        )


class Migration(migrations.Migration):
    dependencies = [("linepush", "0008_event_outcome_rejected")]

    operations = [
        migrations.AddField(
            model_name="lineplan",
            name="extra_message_price_yen",
            field=models.DecimalField(
                blank=True,
                decimal_places=2,
                max_digits=6,
                null=True,
                verbose_name="追加メッセージの単価（上限・円）",
            ),
        ),
        migrations.RunPython(set_prices, migrations.RunPython.noop),
    ]
