"""The browser tests' helpers: Debian's Chromium, logging in, screenshots.

The screenshots in docs/screenshots/ (shown in docs/USAGE.md) are taken by the browser tests:
into that folder with `UPDATE_SCREENSHOTS=1 make test`, otherwise into a temporary one (a
test run leaves the tracked images as they are). The `browser` and `page` fixtures are in
tests/conftest.py.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect

from core.models import TenantMembership
from tests.helpers.console import member

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "automedia-screenshots"
)
PASSWORD = "pw"
LAPTOP = {"width": 1366, "height": 900}  # the smallest screen the managers' pages are made for
BANNER_URL = "https://example.jp/winter-banner.png"
# Served by the page's route instead of the network (the machine is offline).
BANNER_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="460" height="240">'
    '<rect width="460" height="240" fill="#2b5f9e"/><circle cx="380" cy="60" r="34" fill="#fff" opacity=".8"/>'
    '<text x="30" y="130" font-size="38" fill="#fff" font-family="sans-serif">冬季営業時間</text>'
    '<text x="30" y="180" font-size="22" fill="#dfe9f7" font-family="sans-serif">12月 7:00–18:00</text></svg>'
)


def log_in(page: Page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_contain_text("automedia 管理")


def manager_logged_in(page: Page, live_server, tenant, username: str = "yamada"):
    """A manager of `tenant` with the browser's password, logged in."""
    user = member(username, tenant, TenantMembership.Role.MANAGER)
    user.set_password(PASSWORD)
    user.save()
    log_in(page, live_server, username)
    return user


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


# Cells reaching past their box, and short cells broken over lines.
CLIPPED = """(selector) => {
  const right = document.documentElement.clientWidth;
  const found = [];
  for (const cell of document.querySelectorAll(selector)) {
    const box = cell.getBoundingClientRect();
    const frame = cell.closest('.results, .am-section');
    const limit = Math.min(right, frame ? frame.getBoundingClientRect().right : right);
    const text = cell.innerText.trim();
    if (box.right > limit + 0.5) found.push(`${cell.className}: "${text.slice(0, 20)}" ends at ${box.right} > ${limit}`);
    const bottoms = new Set();
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) if (r.width > 0) bottoms.add(Math.round(r.bottom));
    }
    const lines = bottoms.size;
    const short = text.length > 0 && text.length <= 12 && !text.includes('\\n');
    if (short && lines > 1) found.push(`${cell.className}: "${text}" wraps over ${lines} lines`);
  }
  return found;
}"""


def clipped_cells(page: Page, selector: str) -> list[str]:
    """The cells under `selector` that reach past their box or break a short text over lines.

    A cell is clipped when it reaches past the box that shows it (a list's scrolling
    `.results`, a dashboard section, the window); a short cell (a date, a kind, a name) that
    wraps is as bad, since Japanese wraps anywhere and turns into text one character a line."""
    return page.evaluate(CLIPPED, selector)
