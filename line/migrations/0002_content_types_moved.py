"""The content types of the models moved from linepush follow them (linepush.linecontact →
line.linecontact, …), so the admin's log entries (the audit trail shown on each object) and
the models' permissions keep pointing at them."""

from django.db import migrations

MODELS = (
    "lineanswer",
    "linecontact",
    "linecoupon",
    "lineerasure",
    "linemonthlyusage",
    "lineplan",
    "linepushsettings",
    "linesource",
    "linesurveyrule",
    "linewebhookevent",
)


def _relabel(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        # A new database has no rows yet (post_migrate creates them with the new label);
        # a row already under the new label (created before this ran) is left as it is.
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    _relabel(apps, "linepush", "line")


def backwards(apps, schema_editor):
    _relabel(apps, "line", "linepush")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("line", "0001_line_models"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
