"""What the LINE app tells the apps above it.

`line_user_erasing`: a LINE user's data is being erased (line/erasure.py). Each receiver
rewrites what its app stored of the user's id and returns how many of its delivery
attempts it rewrote; the erasure's record counts their sum. Arguments: `tenant_id`,
`user_id`.
"""

from django.dispatch import Signal

line_user_erasing = Signal()
