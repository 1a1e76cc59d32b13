"""The named cast: a tenant, its content tasks and LINE contacts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import factory

from core.models import Tenant
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.models import ContentTask, EffectReport, MessageTemplate
from line.models import LineContact


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


class ChannelAccountFactory(factory.django.DjangoModelFactory):
    """An Instagram account by default; pass channel= and its own fields for the others."""

    class Meta:
        model = ChannelAccount

    tenant = factory.SubFactory(TenantFactory)
    channel = "instagram"
    access_token = factory.LazyAttribute(lambda a: f"{a.channel}-token")
    ig_user_id = factory.LazyAttribute(lambda a: "17841400000000001" if a.channel == "instagram" else "")
    open_id = factory.LazyAttribute(lambda a: "open-id-1" if a.channel == "tiktok" else "")


class ChannelPostFactory(factory.django.DjangoModelFactory):
    """A finished Instagram image post; pass channel=, post_id= and details= for others."""

    class Meta:
        model = ChannelPost

    task = factory.SubFactory(ContentTaskFactory)
    tenant = factory.SelfAttribute("task.tenant")
    approval_seq = factory.SelfAttribute("task.approval_seq")
    channel = "instagram"
    phase = ChannelPost.Phase.DONE
    post_id = factory.Sequence(lambda n: f"{17_900_000_000_000_000 + n}")
    permalink = factory.LazyAttribute(lambda p: f"https://www.instagram.com/p/demo{p.post_id[-4:]}/")
    details = factory.LazyFunction(lambda: {"content": {"type": "image"}})


class EffectReportFactory(factory.django.DjangoModelFactory):
    """The 24 h report of a ChannelPost, due 24 h after its delivery."""

    class Meta:
        model = EffectReport

    post = factory.SubFactory(ChannelPostFactory)
    task = factory.SelfAttribute("post.task")
    tenant = factory.SelfAttribute("post.tenant")
    channel = factory.SelfAttribute("post.channel")
    label = EffectReport.Label.H24
    delivered_at = datetime(2026, 12, 10, 1, 0, tzinfo=UTC)  # 10:00 JST
    due_at = factory.LazyAttribute(lambda r: r.delivered_at + timedelta(hours=24))
