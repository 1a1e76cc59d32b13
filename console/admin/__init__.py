"""The managers' screens: every ModelAdmin, one module per app whose models it shows
(`console/admin/<app_label>.py`), with these apart: deliveries' channel accounts and posts
in channels.py; LINE groups, contacts, survey rules and events in line_account.py; LINE
coupons in line_coupons.py; linepush's API tokens in api_tokens.py; test recipients and
notice settings in notices.py; delivery schedules and message templates in
schedules.py; the base of both lists of stored webhook events in
stored_events.py. The admin URLs follow each model's app, not this package:
/admin/deliveries/contenttask/ is registered in console/admin/deliveries.py."""

from console.admin import (  # noqa: F401 - registers
    api_tokens,
    backlog_bridge,
    channels,
    console,
    core,
    deliveries,
    line,
    line_account,
    line_coupons,
    linepush,
    notices,
    schedules,
)
