"""LineContact.blocked_at (a contact blocked before it has its last change as the block's
time) and LineErasure, the record of an erasure on request."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def blocked_since_last_change(apps, schema_editor):
    LineContact = apps.get_model("linepush", "LineContact")
    LineContact.objects.filter(blocked=True, blocked_at__isnull=True).update(blocked_at=models.F("updated_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0002_content_types_moved'),
        ('linepush', '0012_line_answer'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='linecontact',
            name='blocked_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='ブロック日時'),
        ),
        migrations.RunPython(blocked_since_last_change, migrations.RunPython.noop),
        migrations.CreateModel(
            name='LineErasure',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('erased_by_name', models.CharField(max_length=150, verbose_name='実行者名')),
                ('erased_at', models.DateTimeField(auto_now_add=True, verbose_name='消去日時')),
                ('events', models.PositiveIntegerField(default=0, verbose_name='ID を消した受信イベント')),
                ('attempts', models.PositiveIntegerField(default=0, verbose_name='ID を消した配信試行')),
                ('erased_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='実行者')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_erasures', to='core.tenant')),
            ],
            options={
                'verbose_name': 'LINE ユーザーデータの消去',
                'verbose_name_plural': 'LINE ユーザーデータの消去',
                'ordering': ['-erased_at'],
            },
        ),
    ]
