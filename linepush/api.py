"""`POST /api/linepush/items/`: other systems (e.g. a talent-management app) queue group posts.

A per-tenant Bearer token (`manage.py linepush_token SLUG`, only its SHA-256 stored) may
post the trigger types it lists, throttled by `LINEPUSH_API_THROTTLE_RATE`; its posts wait
for a manager unless it skips approval. Each token's dedupe keys are its own: a key of
automedia's producers or another token of the tenant is a 409 without that post, and
another tenant's keys are never seen. The answers: docs/USAGE.md, "LINE group posts".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, ParseError, Throttled
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from core.addresses import client_address
from core.models import Tenant
from core.webhooks import text_problem
from line.message_schema import MESSAGE_SCHEMA
from line.messages import MAX_MESSAGES, validate_line_messages
from line.models import Trigger
from linepush.inbound_models import api_token_hash
from linepush.models import LineApiToken, LinePushItem
from linepush.services import PushInvalid, PushKeyTaken, push_enqueue

GROUP_ID = re.compile(r"[CR][0-9A-Za-z_\-]{1,63}")
# A post "now" from a caller whose clock runs a little behind is fine; one dated further
# back (or a year ahead) is a mistake, and a date in the past would be sent at once.
SCHEDULED_AT_PAST = timedelta(minutes=5)
SCHEDULED_AT_AHEAD = timedelta(days=365)


@dataclass(frozen=True)
class ApiClient:
    """`request.user` of an API call: the token and its tenant."""

    token: LineApiToken
    is_authenticated: bool = True

    @property
    def tenant(self) -> Tenant:
        return self.token.tenant


class FailedAuthenticationThrottle(SimpleRateThrottle):
    """Wrong tokens per client address, at `LINEPUSH_API_AUTH_FAILURE_RATE` (e.g. `10/min`):
    over it every request of that address is a 429 with `Retry-After` before any token is
    looked at, so nobody tries tokens at the web processes' speed. Only failures count."""

    scope = "linepush_auth_failure"

    def get_rate(self) -> str:
        return settings.LINEPUSH_API_AUTH_FAILURE_RATE

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}

    def refuses(self, request) -> bool:
        self.key = self.get_cache_key(request, None)
        self.history, self.now = self.cache.get(self.key, []), self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def failed(self) -> None:
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


class LineApiTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        scheme, _, value = get_authorization_header(request).decode("latin-1").partition(" ")
        if scheme.lower() != "bearer":
            return None
        failures = FailedAuthenticationThrottle()
        if failures.refuses(request):
            raise Throttled(failures.wait())
        token = (
            LineApiToken.objects.select_related("tenant")
            .filter(token_hash=api_token_hash(value.strip()), revoked_at__isnull=True, tenant__is_active=True)
            .first()
        )
        if token is None:
            failures.failed()
            raise AuthenticationFailed("API トークンが無効です。")
        LineApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return ApiClient(token), token

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="linepush"'


class LineApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "linepush.api.LineApiTokenAuthentication"
    name = "linepushToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "テナントごとの API トークン"}


THROTTLE_RATE = re.compile(r"[1-9][0-9]*/(s|sec|m|min|h|hour|d|day)")


def throttle_rate_require() -> None:
    """Checked at start-up (LinepushConfig.ready): a rate DRF cannot read would make every
    API call a 500."""
    for name in ("LINEPUSH_API_THROTTLE_RATE", "LINEPUSH_API_AUTH_FAILURE_RATE"):
        rate = getattr(settings, name)
        if not THROTTLE_RATE.fullmatch(rate):
            raise ImproperlyConfigured(
                f"{name} must be like 60/min (N/s, N/min, N/hour, N/day), not {rate!r}"
            )


class LineApiTokenThrottle(SimpleRateThrottle):
    """Requests per token, at `LINEPUSH_API_THROTTLE_RATE` (e.g. `60/min`); DRF answers 429
    with `Retry-After`. Counted in Django's default cache (`CACHE_URL`): shared by every
    process only when that cache is (Redis, the database)."""

    scope = "linepush_token"

    def get_rate(self) -> str:
        return settings.LINEPUSH_API_THROTTLE_RATE

    def get_cache_key(self, request, view) -> str | None:
        client = request.user
        if not isinstance(client, ApiClient):
            return None
        # The hash, not the row id: ids come back after a delete, a token's hash never does.
        return self.cache_format % {"scope": self.scope, "ident": client.token.token_hash[:32]}


class BoundedJSONParser(JSONParser):
    """JSON nested deeper than Python's json can follow (`[[[[…`), or holding text no
    database column can store (NUL, a lone surrogate: PostgreSQL's jsonb refuses them), is
    a 400, not a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON の入れ子が深すぎます。") from None
        if problem := _text_problem_in(data):
            raise ParseError(f"保存できない文字を含んでいます（{problem}）。")
        return data


def _text_problem_in(value: object) -> str:
    """The first string (key or value) `text_problem` refuses, at any depth, or ""."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if problem := text_problem(item):
                return problem
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return ""


# The published schema states the rules the view applies, so a client generated from it
# sends requests the view accepts: the group id's pattern, 1–5 messages, each of LINE's
# types with the fields the view checks (line/message_schema.py).
GROUP_ID_SCHEMA = {"type": "string", "pattern": f"^{GROUP_ID.pattern}$", "minLength": 2, "maxLength": 64}
MESSAGES_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_MESSAGES,
    "items": MESSAGE_SCHEMA,
}


@extend_schema_field(GROUP_ID_SCHEMA)
class GroupIdField(serializers.CharField):
    pass


@extend_schema_field(MESSAGES_SCHEMA)
class LineMessagesField(serializers.JSONField):
    pass


@extend_schema_field(
    {
        "type": "string",
        "format": "date-time",
        # JSON Schema has no bound relative to now: stated for people and as an extension.
        "x-window": {"notBefore": "PT5M ago", "notAfter": "P365D ahead"},
    }
)
class ScheduledAtField(serializers.DateTimeField):
    pass


class PushItemIn(serializers.Serializer):
    ext_group_id = GroupIdField(max_length=64, help_text="投稿先の LINE グループID（C…）またはルームID（R…）")
    trigger_type = serializers.ChoiceField(choices=Trigger.choices, default=Trigger.SIGNAL_APPROVED)
    payload = LineMessagesField(help_text=f"LINE メッセージオブジェクトの配列（1〜{MAX_MESSAGES} 件）")
    source_table = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    source_id = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    dedupe_key = serializers.CharField(
        max_length=255, help_text="同じキーの投稿は 1 回だけ（例: signal:abc-123:approved）"
    )
    scheduled_at = ScheduledAtField(
        required=False,
        help_text=(
            f"省略時は今すぐ。{int(SCHEDULED_AT_PAST.total_seconds() // 60)} 分前から"
            f" {SCHEDULED_AT_AHEAD.days} 日後まで（それ以外は 400）"
        ),
    )

    def validate_ext_group_id(self, value: str) -> str:
        if not GROUP_ID.fullmatch(value):
            raise serializers.ValidationError(
                "LINE のグループID（C…）またはルームID（R…）を指定してください。"
            )
        return value

    def validate_payload(self, value: object) -> object:
        problems = validate_line_messages(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value

    def validate_scheduled_at(self, value: datetime) -> datetime:
        now = timezone.now()
        if value < now - SCHEDULED_AT_PAST:
            raise serializers.ValidationError(
                f"過去の日時です（{int(SCHEDULED_AT_PAST.total_seconds() // 60)} 分より前は指定できません）。"
            )
        if value > now + SCHEDULED_AT_AHEAD:
            raise serializers.ValidationError(
                f"先すぎる日時です（{SCHEDULED_AT_AHEAD.days} 日より先は指定できません）。"
            )
        return value


class PushItemOut(serializers.ModelSerializer):
    class Meta:
        model = LinePushItem
        fields = [
            "id",
            "ext_group_id",
            "trigger_type",
            "payload",
            "source_table",
            "source_id",
            "dedupe_key",
            "scheduled_at",
            "status",
            "attempt_count",
            "last_error",
            "sent_at",
            "created_at",
        ]
        read_only_fields = fields


class PushItemCreateView(APIView):
    authentication_classes = [LineApiTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [LineApiTokenThrottle]
    parser_classes = [BoundedJSONParser]

    def handle_exception(self, exc):
        # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE; left alone that is
        # an HTML 400 page and a logged traceback, not an answer the caller can act on.
        if isinstance(exc, RequestDataTooBig):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            return Response(
                {"detail": f"リクエストの本文が大きすぎます（上限 {limit:,} バイト）。"},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="linepush_items_create",
        summary="LINE グループ投稿をキューに入れる",
        request=PushItemIn,
        responses={
            201: PushItemOut,
            200: OpenApiResponse(
                PushItemOut, description="このトークンが同じ dedupe_key で投稿済み（何もしない）"
            ),
            409: OpenApiResponse(
                description="この dedupe_key は automedia 自身の投稿か別のトークンが使用中（何もしない）"
            ),
            400: OpenApiResponse(
                description="入力の問題（項目ごとの理由）。文字列に NUL（\\u0000）や対になっていないサロゲートは使えません"
            ),
            401: OpenApiResponse(description="API トークンがない、または無効"),
            403: OpenApiResponse(description="このトークンでは使えない trigger_type"),
            413: OpenApiResponse(description="リクエストの本文が大きすぎる"),
            429: OpenApiResponse(
                description="トークンごとの上限、または接続元ごとの認証失敗の上限を超えた（Retry-After の秒数後に再試行）"
            ),
        },
    )
    def post(self, request) -> Response:
        data = PushItemIn(data=request.data)
        data.is_valid(raise_exception=True)
        token = request.user.token
        if refusal := token.refusal(data.validated_data["trigger_type"]):
            return Response({"trigger_type": [refusal]}, status=status.HTTP_403_FORBIDDEN)
        try:
            item, created = push_enqueue(
                tenant=request.user.tenant,
                approval_required=not token.skip_approval,
                api_token=token,
                **data.validated_data,
            )
        except PushInvalid as exc:
            return Response({"non_field_errors": exc.problems}, status=status.HTTP_400_BAD_REQUEST)
        except PushKeyTaken as exc:
            # Nothing of the other post (payload, group, error) goes to the caller.
            return Response({"dedupe_key": [str(exc)]}, status=status.HTTP_409_CONFLICT)
        return Response(
            PushItemOut(item).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )
