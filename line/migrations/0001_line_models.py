"""LINE's models, moved from linepush: the same tables (linepush_<model>), now line's."""

import django.core.validators
import django.db.models.deletion
import line.settings_models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    # The tables are created by linepush's migrations: on a new database they run first, on
    # an existing one they ran long ago.
    dependencies = [
        ('core', '0006_tenant_preview_image_hosts'),
        ('linepush', '0020_usage_month_help'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # State only: the tables keep their names (`db_table`); nothing changes in the database.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='LinePlan',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('code', models.SlugField(unique=True, verbose_name='コード')),
                        ('name', models.CharField(max_length=100, verbose_name='プラン名')),
                        ('monthly_messages', models.PositiveIntegerField(verbose_name='月間メッセージ数')),
                        ('additional_messages', models.BooleanField(default=False, verbose_name='追加メッセージ可')),
                        ('extra_message_price_yen', models.DecimalField(blank=True, decimal_places=2, max_digits=6, null=True, verbose_name='追加メッセージの単価（上限・円）')),
                    ],
                    options={
                        'verbose_name': 'LINE プラン',
                        'verbose_name_plural': 'LINE プラン',
                        'db_table': 'linepush_lineplan',
                        'ordering': ['monthly_messages'],
                    },
                ),
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
                        'db_table': 'linepush_lineerasure',
                        'ordering': ['-erased_at'],
                    },
                ),
                migrations.CreateModel(
                    name='LinePushSettings',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('tenant_rate_limit', models.PositiveIntegerField(blank=True, help_text='空欄 = 制限なし', null=True, validators=[django.core.validators.MaxValueValidator(10000)], verbose_name='テナント全体の上限（件）')),
                        ('tenant_rate_window_seconds', models.PositiveIntegerField(default=300, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(86400)], verbose_name='テナント全体の上限の期間（秒）')),
                        ('timezone', models.CharField(default='Asia/Tokyo', max_length=64, validators=[line.settings_models.validate_timezone], verbose_name='タイムゾーン')),
                        ('digest_hour', models.PositiveSmallIntegerField(default=8, validators=[django.core.validators.MaxValueValidator(23)], verbose_name='朝のダイジェストの時刻（時）')),
                        ('registration_messages', models.JSONField(blank=True, default=list, help_text='LINE メッセージオブジェクトの配列（1〜5 件）。空 = 返信しない', validators=[line.settings_models.validate_messages], verbose_name='友だち追加時の返信（登録クーポン）')),
                        ('plan', models.ForeignKey(blank=True, help_text='空欄 = LINE 自身の上限（LINE に確認した今月の上限）だけで判定。LINE が上限なしと答えれば通数では止めません', null=True, on_delete=django.db.models.deletion.PROTECT, to='line.lineplan', verbose_name='プラン')),
                        ('tenant', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='line_push_settings', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE 投稿設定',
                        'verbose_name_plural': 'LINE 投稿設定',
                        'db_table': 'linepush_linepushsettings',
                    },
                ),
                migrations.CreateModel(
                    name='LineSurveyRule',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100, verbose_name='名前')),
                        ('match', models.CharField(choices=[('keyword', 'キーワード（含む）'), ('exact', '完全一致'), ('regex', '正規表現')], default='keyword', max_length=8, verbose_name='一致方法')),
                        ('pattern', models.CharField(max_length=500, verbose_name='パターン')),
                        ('add_tags', models.JSONField(blank=True, default=list, verbose_name='追加するタグ')),
                        ('remove_tags', models.JSONField(blank=True, default=list, verbose_name='外すタグ')),
                        ('next_delivery', models.BooleanField(default=False, verbose_name='次回配信の対象にする')),
                        ('priority', models.PositiveSmallIntegerField(default=100, verbose_name='優先順')),
                        ('is_active', models.BooleanField(default=True, verbose_name='有効')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_survey_rules', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE アンケート回答ルール',
                        'verbose_name_plural': 'LINE アンケート回答ルール',
                        'db_table': 'linepush_linesurveyrule',
                        'ordering': ['priority', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='LineAnswer',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('message_id', models.CharField(max_length=64, verbose_name='LINE メッセージID')),
                        ('user_id', models.CharField(max_length=64, verbose_name='LINE ユーザーID')),
                        ('timestamp', models.BigIntegerField(verbose_name='版の時刻 (ms)')),
                        ('text', models.TextField(blank=True, verbose_name='本文')),
                        ('added_tags', models.JSONField(blank=True, default=list, verbose_name='この版が追加したタグ')),
                        ('set_next_delivery', models.BooleanField(default=False, verbose_name='この版が次回配信希望にした')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='更新日時')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_answers', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE アンケート回答',
                        'verbose_name_plural': 'LINE アンケート回答',
                        'db_table': 'linepush_lineanswer',
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'message_id'), name='uniq_line_answer')],
                    },
                ),
                migrations.CreateModel(
                    name='LineContact',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('user_id', models.CharField(max_length=64, verbose_name='LINE ユーザーID')),
                        ('display_name', models.CharField(blank=True, max_length=200, verbose_name='表示名')),
                        ('tags', models.JSONField(blank=True, default=list, verbose_name='タグ')),
                        ('blocked', models.BooleanField(default=False, verbose_name='ブロック中')),
                        ('blocked_at', models.DateTimeField(blank=True, null=True, verbose_name='ブロック日時')),
                        ('wants_next_delivery', models.BooleanField(default=False, verbose_name='次回配信を希望')),
                        ('followed_at', models.DateTimeField(blank=True, null=True, verbose_name='友だち追加日時')),
                        ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='作成日時')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='更新日時')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_contacts', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE 連絡先',
                        'verbose_name_plural': 'LINE 連絡先',
                        'db_table': 'linepush_linecontact',
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'user_id'), name='uniq_line_contact')],
                    },
                ),
                migrations.CreateModel(
                    name='LineCoupon',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('coupon_id', models.CharField(editable=False, max_length=100, verbose_name='クーポンID')),
                        ('title', models.CharField(max_length=60, verbose_name='タイトル')),
                        ('description', models.TextField(blank=True, max_length=1000, verbose_name='説明')),
                        ('reward', models.CharField(choices=[('discount', '割引'), ('cashBack', 'キャッシュバック'), ('free', '無料'), ('gift', 'プレゼント'), ('others', 'その他')], default='discount', max_length=16, verbose_name='特典')),
                        ('price', models.CharField(blank=True, choices=[('', '指定なし'), ('fixed', '金額（円）'), ('percentage', '割合（%）')], max_length=16, verbose_name='特典の内容')),
                        ('amount', models.PositiveIntegerField(blank=True, null=True, verbose_name='金額（円）または割合（%）')),
                        ('starts_at', models.DateTimeField(verbose_name='利用開始')),
                        ('ends_at', models.DateTimeField(verbose_name='有効期限')),
                        ('max_use_per_ticket', models.SmallIntegerField(choices=[(1, '1 回限り'), (-1, '何度でも')], default=1, verbose_name='利用回数')),
                        ('visibility', models.CharField(choices=[('UNLISTED', '限定公開（メッセージで配布）'), ('PUBLIC', '公開')], default='UNLISTED', max_length=16, verbose_name='公開範囲')),
                        ('status', models.CharField(choices=[('RUNNING', '配布中'), ('CLOSED', '終了')], default='RUNNING', editable=False, max_length=16, verbose_name='状態')),
                        ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='作成日時')),
                        ('closed_at', models.DateTimeField(blank=True, editable=False, null=True, verbose_name='終了日時')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_coupons', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE クーポン',
                        'verbose_name_plural': 'LINE クーポン',
                        'db_table': 'linepush_linecoupon',
                        'ordering': ['-created_at'],
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'coupon_id'), name='uniq_line_coupon')],
                    },
                ),
                migrations.CreateModel(
                    name='LineMonthlyUsage',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('month', models.CharField(help_text='年-月（テナントのタイムゾーンで数えます）', max_length=7, verbose_name='月')),
                        ('messages', models.PositiveIntegerField(default=0, verbose_name='使用数')),
                        ('line_limit', models.PositiveIntegerField(blank=True, null=True, verbose_name='LINE の上限')),
                        ('line_total_usage', models.PositiveIntegerField(blank=True, null=True, verbose_name='LINE の使用数')),
                        ('checked_at', models.DateTimeField(blank=True, null=True, verbose_name='LINE で確認した日時')),
                        ('warned_at', models.DateTimeField(blank=True, null=True, verbose_name='80% 警告日時')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_usage', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE 月間使用数',
                        'verbose_name_plural': 'LINE 月間使用数',
                        'db_table': 'linepush_linemonthlyusage',
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'month'), name='uniq_line_usage_month')],
                    },
                ),
                migrations.CreateModel(
                    name='LineSource',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('group_id', models.CharField(max_length=64, verbose_name='グループID')),
                        ('kind', models.CharField(choices=[('group', 'グループ'), ('room', '複数人トーク')], default='group', max_length=8, verbose_name='種類')),
                        ('name', models.CharField(blank=True, max_length=200, verbose_name='名前')),
                        ('allow_outbound_push', models.BooleanField(default=False, verbose_name='自動投稿を許可')),
                        ('push_opt_in_triggers', models.JSONField(blank=True, default=list, validators=[line.settings_models.validate_triggers], verbose_name='許可するトリガー')),
                        ('member_count', models.PositiveIntegerField(blank=True, null=True, verbose_name='メンバー数')),
                        ('rate_limit_count', models.PositiveIntegerField(default=3, validators=[django.core.validators.MaxValueValidator(10000)], verbose_name='グループの上限（件）')),
                        ('rate_limit_window_seconds', models.PositiveIntegerField(default=300, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(86400)], verbose_name='グループの上限の期間（秒）')),
                        ('joined_at', models.DateTimeField(blank=True, null=True, verbose_name='参加日時')),
                        ('left_at', models.DateTimeField(blank=True, null=True, verbose_name='退出日時')),
                        ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='作成日時')),
                        ('updated_at', models.DateTimeField(auto_now=True, verbose_name='更新日時')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_sources', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE グループ',
                        'verbose_name_plural': 'LINE グループ',
                        'db_table': 'linepush_linesource',
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'group_id'), name='uniq_line_source')],
                    },
                ),
                migrations.CreateModel(
                    name='LineWebhookEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('payload', models.JSONField(verbose_name='受信内容')),
                        ('outcome', models.CharField(choices=[('pending', '処理待ち'), ('done', '処理済み'), ('ignored', '対象外'), ('failed', '失敗'), ('rejected', '受付不可')], default='pending', max_length=16, verbose_name='結果')),
                        ('detail', models.TextField(blank=True, verbose_name='詳細')),
                        ('attempts', models.PositiveSmallIntegerField(default=0, verbose_name='処理回数')),
                        ('received_at', models.DateTimeField(auto_now_add=True, verbose_name='受信日時')),
                        ('processed_at', models.DateTimeField(blank=True, null=True, verbose_name='処理日時')),
                        ('claimed_until', models.DateTimeField(blank=True, null=True, verbose_name='処理中の期限')),
                        ('webhook_event_id', models.CharField(max_length=64, verbose_name='webhookEventId')),
                        ('type', models.CharField(max_length=32, verbose_name='種別')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='line_webhook_events', to='core.tenant')),
                    ],
                    options={
                        'verbose_name': 'LINE Webhook イベント',
                        'verbose_name_plural': 'LINE Webhook イベント',
                        'db_table': 'linepush_linewebhookevent',
                        'abstract': False,
                        'indexes': [models.Index(fields=['outcome', 'received_at'], name='line_event_outcome_idx')],
                        'constraints': [models.UniqueConstraint(fields=('tenant', 'webhook_event_id'), name='uniq_line_webhook_event')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
