"""Which triggers of a tenant's group posts wait for a manager. Django loads this model
through linepush/models.py."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from core.models import Tenant

# validate_triggers is named here too: migration 0017 refers to it as linepush.settings_models.*.
from line.settings_models import Trigger, validate_triggers  # noqa: F401

# Seed 003 §5: triggers that post without a person reading them first are the routine
# ones; an escalation or an outside system's signal waits for a manager by default.
APPROVAL_REQUIRED_BY_DEFAULT = frozenset({Trigger.ESCALATION, Trigger.SIGNAL_APPROVED})


class LineTriggerPolicy(models.Model):
    """Per tenant and trigger: must a manager approve before a post goes out?"""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_trigger_policies")
    trigger_type = models.CharField(_("トリガー"), max_length=32, choices=Trigger.choices)
    requires_approval = models.BooleanField(_("承認が必要"), default=True)

    class Meta:
        verbose_name = pgettext_lazy("model", "LINE トリガー承認設定")
        verbose_name_plural = pgettext_lazy("models", "LINE トリガー承認設定")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "trigger_type"], name="uniq_line_trigger_policy")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.get_trigger_type_display()}"

    @staticmethod
    def approval_required(tenant: Tenant, trigger_type: str) -> bool:
        row = LineTriggerPolicy.objects.filter(tenant=tenant, trigger_type=trigger_type).first()
        if row is not None:
            return row.requires_approval
        return trigger_type in APPROVAL_REQUIRED_BY_DEFAULT
