"""The named cast: a tenant, its content tasks and LINE contacts."""

from __future__ import annotations

import factory

from deliveries.models import ContentTask, MessageTemplate, Tenant
from linepush.models import LineContact


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant{n}")
    name = factory.LazyAttribute(lambda t: f"{t.slug} 事務所")
    backlog_base_url = "https://acme.backlog.jp"
    backlog_api_key = "test-api-key"
    backlog_project_key = "ACME"
    line_channel_token = "line-channel-token"
    line_channel_secret = "line-channel-secret"


class ContentTaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ContentTask

    tenant = factory.SubFactory(TenantFactory)
    issue_key = factory.Sequence(lambda n: f"ACME-{n + 1}")


class LineContactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LineContact

    tenant = factory.SubFactory(TenantFactory)
    user_id = factory.Sequence(lambda n: f"U{n:032x}")
    tags = factory.LazyFunction(lambda: ["active"])


class MessageTemplateFactory(factory.django.DjangoModelFactory):
    """A shared template revision (tenant=None); pass tenant= for a tenant's own."""

    class Meta:
        model = MessageTemplate

    tenant = None
    name = "announce_open"
    rev = factory.Sequence(lambda n: f"{n:012x}")
    channel = "line"
    messages = factory.LazyFunction(lambda: [{"type": "text", "text": "{{ date }} より営業開始"}])
