"""The daily scan's task moved from backlog_bridge.tasks to deliveries.tasks: rewrite the
django-q2 Schedule rows that name the old path (post_migrate's ensure_recurring_jobs
writes the new one too, but only for the row it owns by name)."""

from django.db import migrations

OLD, NEW = "backlog_bridge.tasks.scan_daily", "deliveries.tasks.scan_daily"


def forward(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=OLD).update(func=NEW)


def backward(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=NEW).update(func=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("deliveries", "0010_tenant_state_deleted"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forward, backward)]
