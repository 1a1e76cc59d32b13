"""The content types of the moved models follow them (deliveries.tenant → core.tenant,
console.tenantmembership → core.tenantmembership), so the admin's log entries (the audit
trail shown on each object) and the models' permissions keep pointing at them."""

from django.db import migrations

MOVED = [("deliveries", "core", "tenant"), ("console", "core", "tenantmembership")]


def _relabel(apps, pairs):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for old, new, model in pairs:
        # A new database has no rows yet (post_migrate creates them with the new label);
        # a row already under the new label (created before this ran) is left as it is.
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    _relabel(apps, MOVED)


def backwards(apps, schema_editor):
    _relabel(apps, [(new, old, model) for old, new, model in MOVED])


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("core", "0001_tenancy"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
