"""The managers' screens: every ModelAdmin, one module per app whose models it shows
(`console/admin/<app_label>.py`; deliveries' channel accounts and posts in channels.py).
The admin URLs follow each model's app, not this package: /admin/deliveries/contenttask/
is registered in console/admin/deliveries.py."""

from console.admin import backlog_bridge, channels, console, core, deliveries, linepush  # noqa: F401 - registers
