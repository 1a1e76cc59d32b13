"""The grammar of a Backlog issue description (the issue body of docs/USAGE.md).

`issue.parse_issue` reads a description, and the issue's custom fields, into a
`task.ParsedTask`; each other module holds one part (sections, 配信メタ, 投稿日時, 文面 / 変数
and 添付, TikTok's choices, the fingerprint): import from where it lives. The channels it
accepts are core/channels.py's.
Every problem goes into `ParsedTask.errors`, in Japanese, to be posted to the issue; no input
makes the grammar raise, except the ValueError of `parse_publish_at` and `TemplateRef.parse`.
"""
