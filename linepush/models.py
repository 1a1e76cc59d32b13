"""LINE contacts and groups. Minimal for now; the LINE webhook (seed 003) fills them in."""

from __future__ import annotations

from django.db import models

from deliveries.models import Tenant


class LineContact(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="line_contacts")
    user_id = models.CharField("LINE ユーザーID", max_length=64)
    display_name = models.CharField("表示名", max_length=200, blank=True)
    tags = models.JSONField("タグ", default=list, blank=True)
    blocked = models.BooleanField("ブロック中", default=False)
    created_at = models.DateTimeField("作成日時", auto_now_add=True)
    updated_at = models.DateTimeField("更新日時", auto_now=True)

    class Meta:
        verbose_name = "LINE 連絡先"
        verbose_name_plural = "LINE 連絡先"
        constraints = [models.UniqueConstraint(fields=["tenant", "user_id"], name="uniq_line_contact")]

    def __str__(self) -> str:
        return self.display_name or self.user_id
