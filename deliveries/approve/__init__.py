"""Approve: the decision on each Backlog event (`lifecycle`), what it does once decided
(`actions`), the approval-time checks (`checks`) and the preview of what an approval will
send (`preview`, with its advisory `review`)."""
