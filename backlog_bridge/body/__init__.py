"""The grammar of a Backlog issue description written in the seed-001 template.

One concern per module, imported from where it lives:

- ``issue``: ``parse_issue``, the entry point, reading a description (and the issue's
  custom fields) into a ``ParsedTask``;
- ``task``: what a parsed issue is (``ParsedTask``, ``TemplateRef``, ``Attachment``);
- ``channels``: the one list of channels;
- ``sections``: headings, ``- key: value`` lines and the names of the sections and items;
- ``meta``: the items of ``## 配信メタ`` other than the publish time;
- ``publish_at``: 投稿日時, from the body or a custom field (``parse_publish_at``);
- ``content``: ``## 文面 / 変数`` and ``## 添付``;
- ``tiktok``: TikTok's posting choices in ``## 配信メタ`` (公開範囲, コメント, デュエット,
  スティッチ, 商用コンテンツ, 音楽利用確認);
- ``fingerprint``: ``content_fingerprint``, telling a content change from a time change.

Every problem found is collected into ``ParsedTask.errors`` in Japanese, because the
list is posted back to the issue as a comment for the manager to fix. No input string
makes the grammar raise, except the two documented ``ValueError`` parsers
(``parse_publish_at`` and ``TemplateRef.parse``).
"""
