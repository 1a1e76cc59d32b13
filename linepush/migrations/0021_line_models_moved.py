"""LINE's models are line's now (line 0001_line_models): linepush forgets them, the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('line', '0001_line_models'),
        ('linepush', '0020_usage_month_help'),
    ]

    operations = [
        # State only: the tables keep their names (`db_table`); nothing changes in the database.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='linecontact',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linecoupon',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='lineerasure',
                    name='erased_by',
                ),
                migrations.RemoveField(
                    model_name='lineerasure',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linemonthlyusage',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linepushsettings',
                    name='plan',
                ),
                migrations.RemoveField(
                    model_name='linepushsettings',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linesource',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linesurveyrule',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='linewebhookevent',
                    name='tenant',
                ),
                migrations.DeleteModel(
                    name='LineAnswer',
                ),
                migrations.DeleteModel(
                    name='LineContact',
                ),
                migrations.DeleteModel(
                    name='LineCoupon',
                ),
                migrations.DeleteModel(
                    name='LineErasure',
                ),
                migrations.DeleteModel(
                    name='LineMonthlyUsage',
                ),
                migrations.DeleteModel(
                    name='LinePlan',
                ),
                migrations.DeleteModel(
                    name='LinePushSettings',
                ),
                migrations.DeleteModel(
                    name='LineSource',
                ),
                migrations.DeleteModel(
                    name='LineSurveyRule',
                ),
                migrations.DeleteModel(
                    name='LineWebhookEvent',
                ),
            ],
            database_operations=[],
        ),
    ]
