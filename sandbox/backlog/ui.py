"""The fake Backlog's HTML UI: a small Japanese page to click through the demo of `make run`."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta
from urllib.parse import quote

from sandbox.backlog.records import JST, ApiError, Json, Project, field_value, utc_now
from sandbox.backlog.routing import BacklogRequest, Params, html_answer, param, redirect, resolve
from sandbox.backlog.state import BacklogSpace
from sandbox.http import HttpResponse

_DESCRIPTION_TEMPLATE = """\
## 配信メタ
- チャネル: LINE
- 投稿日時: {when} (JST)
- 対象タグ: tag:active, !tag:opt_out
- テンプレ: announce_open

## 文面 / 変数
- date: {day}
- hours: 7:00-18:00

## 添付
- 画像: なし
"""

_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
form.inline { display: inline; }
textarea { font-family: monospace; }
label { display: block; margin: .4em 0; }
.muted { color: #777; }
pre { background: #f8f8f8; padding: .6em; }
"""

_UI_LIMIT = 50
_POSTING_TIME = "投稿日時"


def demo_description(publish_at: datetime) -> str:
    """The seed's issue body, publishing at ``publish_at`` (shown in JST)."""
    local = publish_at.astimezone(JST)
    return _DESCRIPTION_TEMPLATE.format(when=local.strftime("%Y-%m-%d %H:%M"), day=local.strftime("%Y-%m-%d"))


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="ja"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>"
    )


def _status_form(issue: Json, project: Project) -> str:
    options = "".join(
        f'<option value="{_esc(s["name"])}"'
        f"{' selected' if s['id'] == issue['status']['id'] else ''}>{_esc(s['name'])}</option>"
        for s in project.statuses
    )
    action = f"/ui/issues/{quote(issue['issueKey'])}/status"
    return (
        f'<form class="inline" method="post" action="{action}">'
        f'<select name="status">{options}</select> <button>変更</button></form>'
    )


def _change_text(entry: Json) -> str:
    return f"{_esc(entry['field'])}: {_esc(entry['originalValue'])} → {_esc(entry['newValue'])}"


class BacklogUi:
    """A small Japanese page to click through the demo; acts as HUMAN and fires webhooks."""

    def __init__(self, fake: BacklogSpace) -> None:
        self._fake = fake
        issue = r"/ui/issues/(?P<key>[^/]+)"
        table = [
            ("GET", r"/", self.index),
            ("GET", issue, self.issue_page),
            # Real Backlog's issue page is https://<space>/view/<key>: automedia's links to an
            # issue (ContentTask.backlog_url) take that shape, so the fake answers it too.
            ("GET", r"/view/(?P<key>[^/]+)", self.issue_page),
            ("POST", issue + "/status", self.change_status),
            ("POST", issue + "/comments", self.add_comment),
            ("POST", issue + "/description", self.edit_description),
            ("POST", r"/ui/projects/(?P<key>[^/]+)/issues", self.create_issue),
        ]
        self._routes = [(method, re.compile(path), handler) for method, path, handler in table]

    def handle(self, request: BacklogRequest) -> HttpResponse:
        try:
            handler, groups = resolve(self._routes, request.method, request.path)
            return handler(request.form, **groups)
        except ApiError as error:
            return html_answer(_page("エラー", f"<p>{_esc(error.message)}</p>"), error.status)
        except (KeyError, ValueError) as error:
            body = f'<p>{_esc(error)}</p><p><a href="/">戻る</a></p>'
            return html_answer(_page("エラー", body), 400)

    # pages

    def index(self, form: Params) -> HttpResponse:
        publish_at = utc_now() + timedelta(minutes=2)
        with self._fake._lock:
            sections = [self._section(p, publish_at) for p in self._fake._projects.values()]
        body = (
            "<h1>Backlog サンドボックス</h1>"
            '<p class="muted">automedia の動作確認用の偽 Backlog です。'
            "ここでの操作は「山田 マネージャー」として記録され、Webhook が送られます。</p>"
            + ("".join(sections) or "<p>プロジェクトがありません。</p>")
        )
        return html_answer(_page("Backlog サンドボックス", body))

    def issue_page(self, form: Params, key: str) -> HttpResponse:
        with self._fake._lock:
            issue = self._fake._issues.get(key)
            if issue is None:
                raise ApiError(404, f"課題 {key} はありません。", code=6)
            project = self._fake._project_of(issue)
            body = self._issue_body(issue, project, self._fake._comments[issue["id"]])
        return html_answer(_page(f"{key} {issue['summary']}", body))

    # form posts

    def change_status(self, form: Params, key: str) -> HttpResponse:
        self._fake.update_issue(key, status=param(form, "status") or "")
        return redirect("/")

    def edit_description(self, form: Params, key: str) -> HttpResponse:
        """Edit the body, as a person would in Backlog (one type-2 activity and its webhook)."""
        self._fake.update_issue(key, description=(param(form, "description") or "").replace("\r\n", "\n"))
        return redirect(f"/ui/issues/{quote(key)}")

    def add_comment(self, form: Params, key: str) -> HttpResponse:
        self._fake.add_comment(key, param(form, "content") or "")
        return redirect(f"/ui/issues/{quote(key)}")

    def create_issue(self, form: Params, key: str) -> HttpResponse:
        posting_time = (param(form, "posting_time") or "").strip()
        self._fake.create_issue(
            key,
            summary=(param(form, "summary") or "").strip() or "(件名なし)",
            description=(param(form, "description") or "").replace("\r\n", "\n"),
            custom_fields={_POSTING_TIME: posting_time} if posting_time else None,
        )
        return redirect("/")

    # fragments; the caller holds the lock

    def _section(self, project: Project, publish_at: datetime) -> str:
        issues = list(project.issues.values())[-_UI_LIMIT:][::-1]
        has_posting_time = any(d["name"] == _POSTING_TIME for d in project.custom_fields)
        rows = "".join(self._row(issue, project, has_posting_time) for issue in issues)
        more = len(project.issues) - len(issues)
        note = f'<p class="muted">ほか {more} 件は省略しています。</p>' if more > 0 else ""
        webhook = _esc(project.webhook_url or "未設定")
        return (
            f"<section><h2>{_esc(project.data['name'])} ({_esc(project.key)})</h2>"
            f'<p class="muted">Webhook: {webhook}</p>'
            "<table><thead><tr><th>キー</th><th>件名</th><th>状態</th><th>投稿日時</th>"
            f"<th>状態の変更</th></tr></thead><tbody>{rows}</tbody></table>{note}"
            f"{self._create_form(project, publish_at, has_posting_time)}</section>"
        )

    @staticmethod
    def _row(issue: Json, project: Project, has_posting_time: bool) -> str:
        posting_time = ""
        if has_posting_time:
            posting_time = field_value(issue, project.field_named(_POSTING_TIME)["id"])
        key = issue["issueKey"]
        return (
            f'<tr><td><a href="/ui/issues/{quote(key)}">{_esc(key)}</a></td>'
            f"<td>{_esc(issue['summary'])}</td><td>{_esc(issue['status']['name'])}</td>"
            f"<td>{_esc(posting_time)}</td><td>{_status_form(issue, project)}</td></tr>"
        )

    @staticmethod
    def _create_form(project: Project, publish_at: datetime, has_posting_time: bool) -> str:
        field_input = ""
        if has_posting_time:
            field_input = (
                "<label>投稿日時（カスタム属性・任意。入力すると本文より優先）"
                ' <input name="posting_time" placeholder="YYYY-MM-DD HH:MM"></label>'
            )
        return (
            f'<details><summary>課題を追加</summary><form method="post" '
            f'action="/ui/projects/{quote(project.key)}/issues">'
            '<label>件名 <input name="summary" size="40" value="お知らせ配信" required></label>'
            f"{field_input}<label>詳細<br>"
            f'<textarea name="description" rows="14" cols="70">'
            f"{_esc(demo_description(publish_at))}</textarea></label>"
            "<button>追加</button></form></details>"
        )

    @staticmethod
    def _issue_body(issue: Json, project: Project, comments: list[Json]) -> str:
        fields = "".join(
            f"<tr><th>{_esc(f['name'])}</th><td>{_esc(f['value'])}</td></tr>" for f in issue["customFields"]
        )
        items = "".join(BacklogUi._comment_item(comment) for comment in comments)
        action = f"/ui/issues/{quote(issue['issueKey'])}/comments"
        edit = f"/ui/issues/{quote(issue['issueKey'])}/description"
        return (
            f'<p><a href="/">← 一覧へ</a></p><h1>{_esc(issue["issueKey"])} '
            f"{_esc(issue['summary'])}</h1><p>状態: {_esc(issue['status']['name'])} "
            f"{_status_form(issue, project)}</p><table>{fields}</table>"
            f'<h2>詳細</h2><form method="post" action="{edit}" id="description-form">'
            f'<textarea name="description" rows="16" cols="80">{_esc(issue["description"])}</textarea>'
            "<br><button>本文を保存</button></form>"
            f"<h2>コメント</h2><ul>{items or '<li>まだありません。</li>'}</ul>"
            f'<form method="post" action="{action}"><label>コメントを追加<br>'
            '<textarea name="content" rows="3" cols="70" required></textarea></label>'
            "<button>送信</button></form>"
        )

    @staticmethod
    def _comment_item(comment: Json) -> str:
        changes = "".join(f"<li>{_change_text(entry)}</li>" for entry in comment["changeLog"])
        text = f"<pre>{_esc(comment['content'])}</pre>" if comment["content"] else ""
        return (
            f"<li><strong>{_esc(comment['createdUser']['name'])}</strong> "
            f'<span class="muted">{_esc(comment["created"])}</span>'
            f"{text}<ul>{changes}</ul></li>"
        )
