"""What Backlog's refusal of a call (401 / 403) means, and its fix: the text the connection page
and 要対応 show (backlog_bridge/client.py at run time, backlog_bridge/connection.py at a check)."""

from __future__ import annotations


def denied_fix(status: int, message: str) -> str:
    """What a refusal (401 / 403) means and its fix, for the connection page and 要対応."""
    if status == 401:
        return (
            "Backlog が API キーを受け付けません（HTTP 401）。Backlog の個人設定 → API で新しいキーを発行し、"
            "管理画面のテナント設定（Backlog APIキー）か manage.py add_tenant <スラッグ> --backlog-api-key で保存してください。"
        )
    return (
        f"Backlog が操作を拒否しました（HTTP 403: {message}）。API キーのユーザーをプロジェクトに"
        "参加させるか、権限のあるユーザーのキーに替えてください。"
    )
