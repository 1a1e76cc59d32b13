from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0002_content_types_moved")]

    operations = [
        migrations.AlterField(
            model_name="tenant",
            name="max_concurrent_deliveries",
            field=models.PositiveSmallIntegerField(default=200, verbose_name="同時配信数の上限"),
        ),
    ]
