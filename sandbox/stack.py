"""automedia's real processes on a throwaway database, wired to fakes in this process.

The end-to-end tests (and anyone who wants to poke at the whole system) use it:

    with Stack(tmp_dir=tmp_path) as stack:          # migrate, fakes, web, /healthz
        tenant = stack.add_tenant()                  # fake Backlog project + webhook wired
        stack.spawn("worker-1", "qcluster")
        stack.spawn("sched-1", "run_scheduler")
        stack.backlog.create_issue(...)              # a person in Backlog; webhooks are POSTed
        stack.wait_for(lambda: stack.line.sent(), timeout=15)
        stack.add_channel_accounts()                 # Instagram / TikTok / HubSpot accounts

The web server, the qcluster workers and the schedulers are separate processes (each in
its own session, so a qcluster can be killed with all its children). FakeBacklog (in
``webhook_mode="post"``), FakeLine, FakeInstagram, FakeTikTok and FakeHubSpot run on
loopback in the calling process, so tests inspect and steer them directly. Every process
writes to ``tmp_dir/<name>.log``; when a ``with`` block fails, or a process dies
unexpectedly, the tail of each log is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

import httpx
from cryptography.fernet import Fernet

from sandbox.backlog import REAL_LATENCY, FakeBacklog
from sandbox.backlog.server import Latency
from sandbox.cpu import group_cpu_seconds
from sandbox.hubspot import FakeHubSpot
from sandbox.instagram import FakeInstagram
from sandbox.line import FakeLine
from sandbox.postgres import is_postgres, postgres_drop, postgres_recreate
from sandbox.tiktok import FakeTikTok
from sandbox.waiting import StallError, Waiter

__all__ = ["ROOT", "Stack", "StackError"]

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TEMPLATES_DIR = ROOT / "templates" / "line"
PLATFORM_CHANNELS = ("instagram", "tiktok", "hubspot")  # their templates: ROOT/templates/<channel>/
TIKTOK_OPEN_ID = "e2e-open-id"
MANAGE_TIMEOUT = 180.0
START_TIMEOUT = 30.0
STOP_GRACE = 5.0
LOG_TAIL_LINES = 40
# Kept from the caller's environment; everything else the processes see is set here.
PASSED_THROUGH = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
_TEMPLATE_LINE = re.compile(r"^(?P<name>\S+)@(?P<rev>\S+) \((?:new|unchanged)\)")


class StackError(AssertionError):
    """The stack could not do what was asked (a command failed, a process died, a wait ran out)."""


class Stack:
    """automedia's real processes (gunicorn or runserver web, qcluster worker(s),
    run_scheduler(s)) on a throwaway database, wired to a FakeBacklog (webhook_mode="post"),
    a FakeLine, and a FakeInstagram, FakeTikTok and FakeHubSpot running in THIS process on
    loopback."""

    backlog: FakeBacklog
    line: FakeLine
    instagram: FakeInstagram
    tiktok: FakeTikTok
    hubspot: FakeHubSpot
    web_url: str

    def __init__(
        self,
        *,
        tmp_dir: Path,
        database_url: str | None = None,
        env: dict[str, str] | None = None,
        web: Literal["gunicorn", "runserver"] = "gunicorn",
        backlog_latency: Latency = REAL_LATENCY,
    ) -> None:
        self.tmp_dir = Path(tmp_dir)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self.database_url = database_url or f"sqlite:///{self.tmp_dir / 'db.sqlite3'}"
        self.web = web
        self.line_token = secrets.token_urlsafe(24)
        self.backlog = FakeBacklog(
            api_key=secrets.token_urlsafe(24), webhook_mode="post", latency=backlog_latency
        )
        self.line = FakeLine(channel_tokens={self.line_token})
        # One account per platform (add_channel_accounts); the fakes accept only these tokens.
        self.channel_tokens = {channel: secrets.token_urlsafe(24) for channel in PLATFORM_CHANNELS}
        self.instagram = FakeInstagram(tokens={self.channel_tokens["instagram"]})
        self.tiktok = FakeTikTok(client_key=secrets.token_hex(8), client_secret=secrets.token_urlsafe(24))
        self.hubspot = FakeHubSpot(tokens={self.channel_tokens["hubspot"]})
        # Bound and listening from here on, handed to gunicorn as `fd://N`: a port only
        # looked up here could be taken meanwhile by any outbound connection's local port.
        self._web_socket: socket.socket | None = socket.create_server((HOST, 0))
        self.web_port = self._web_socket.getsockname()[1]
        self.web_url = f"http://{HOST}:{self.web_port}"
        self.templates: dict[str, str] = {}
        """Imported template name → revision (``announce_open@<rev>`` in issue bodies)."""
        self.channel_templates: dict[str, dict[str, str]] = {}
        """Channel → template name → revision, once add_channel_accounts imported them."""
        self.tenants: dict[str, dict] = {}
        """What add_tenant printed, by slug (backlog_webhook_url, …)."""
        self._overrides = dict(env or {})
        self._env: dict[str, str] = {}
        self._processes: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, IO[bytes]] = {}
        self._killed: set[str] = set()
        self._started = False
        self._stopped = False
        self.waiter = Waiter(check=self._check_alive)

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Stack:
        """Fresh database, migrate, templates, fakes, web server; returns when /healthz answers."""
        if self._started:
            return self
        self._started = True
        try:
            if is_postgres(self.database_url):
                postgres_recreate(self.database_url)
            for fake in self._fakes():
                fake.start()
            self._env = self._process_env()
            self.manage("migrate", "--noinput")
            self._import_templates()
            self._start_web()
        except BaseException:
            self.print_logs()
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM every process, wait a little, SIGKILL stragglers (whole groups), stop the fakes.

        A PostgreSQL database is left in place for a post-mortem (the next start drops it)."""
        if self._stopped:
            return
        self._stopped = True
        names = list(self._processes)
        for name in names:
            self._signal(name, signal.SIGTERM, group=False)
        deadline = time.monotonic() + STOP_GRACE
        for name in names:
            proc = self._processes[name]
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            self._signal(name, signal.SIGKILL, group=True)  # children left behind, or a straggler
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self._web_socket_close()
        for fake in self._fakes():
            fake.stop()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.print_logs()
        self.stop()
        if exc_type is None and is_postgres(self.database_url):
            postgres_drop(self.database_url)  # kept only for a failure's post-mortem

    # -- commands and processes ----------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """The environment every process of the stack gets (a copy)."""
        if not self._env:
            raise StackError("start() the stack first")
        return dict(self._env)

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """`manage.py ARGS` to completion; with check, a non-zero exit raises StackError."""
        cmd = [sys.executable, "manage.py", *args]
        done = subprocess.run(
            cmd, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=MANAGE_TIMEOUT
        )
        if check and done.returncode != 0:
            raise StackError(
                f"`manage.py {' '.join(args)}` exited with {done.returncode}\n"
                f"--- stdout ---\n{_tail(done.stdout)}\n--- stderr ---\n{_tail(done.stderr)}"
            )
        return done

    def shell(self, code: str) -> str:
        """Run Python in `manage.py shell -c` and return what it printed (stripped)."""
        return self.manage("shell", "--no-imports", "-v", "0", "-c", code).stdout.strip()

    def call_commands(self, calls: list[list[str]]) -> list[str]:
        """Run management commands (each a list of arguments) in one `manage.py shell`, which is
        much cheaper than one `manage` each; returns what each printed."""
        code = (
            "import io, json\n"
            "from django.core.management import call_command\n"
            "out = []\n"
            f"for args in json.loads({json.dumps(json.dumps(calls))}):\n"
            "    buffer = io.StringIO()\n"
            "    call_command(*args, stdout=buffer)\n"
            "    out.append(buffer.getvalue())\n"
            "print(json.dumps(out))"
        )
        return json.loads(self.shell(code).splitlines()[-1])

    def spawn(self, name: str, *manage_args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start `manage.py MANAGE_ARGS` in its own session; output goes to tmp_dir/<name>.log."""
        return self._launch(name, [sys.executable, "manage.py", *manage_args], env=env)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to a process; SIGKILL goes to its whole process group (a qcluster and
        its workers die together). Returns once the process has exited (for SIGKILL)."""
        self._killed.add(name)
        self._signal(name, sig, group=sig == signal.SIGKILL)
        if sig == signal.SIGKILL:
            self._processes[name].wait(timeout=10)

    def running(self, name: str) -> bool:
        """Whether the process `name` was spawned and has not exited (a supervisor's check)."""
        proc = self._processes.get(name)
        return proc is not None and proc.poll() is None

    def pid(self, name: str) -> int:
        return self._processes[name].pid

    def cpu_seconds(self, name: str) -> float:
        """CPU time (user + system, with reaped children) used so far by the live processes of
        `name`'s process group (Linux /proc)."""
        return group_cpu_seconds(self._processes[name].pid)

    def log(self, name: str) -> str:
        path = self.log_path(name)
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def log_path(self, name: str) -> Path:
        return self.tmp_dir / f"{name}.log"

    def print_logs(self, lines: int = LOG_TAIL_LINES) -> None:
        """Print the tail of every process log (pytest shows it for a failed test)."""
        for name in self._processes:
            print(f"\n===== {name}.log (last {lines} lines) =====")
            print(_tail(self.log(name), lines))

    # -- tenants -------------------------------------------------------------------------

    def add_tenant(self, slug: str = "e2e", project: str = "E2E") -> dict:
        """A tenant on the fake Backlog project `project` (created here) and the fake LINE;
        the project's webhook points at the printed backlog_webhook_url."""
        self.backlog.add_project(project, name=f"{project} 配信")
        done = self.manage(
            "add_tenant",
            slug,
            "--name",
            f"{slug} 事務所",
            "--backlog-url",
            self.backlog.base_url,
            # `--opt=value`: a random token may start with "-", which argparse would take
            # for an option.
            f"--backlog-api-key={self.backlog.api_key}",
            "--backlog-project",
            project,
            f"--line-channel-token={self.line_token}",
            "--base-url",
            self.web_url,
            "--json",
        )
        tenant = json.loads(done.stdout.strip().splitlines()[-1]) | {"project": project}
        self.backlog.set_webhook(project, tenant["backlog_webhook_url"])
        self.tenants[slug] = tenant
        return tenant

    def add_channel_accounts(
        self,
        slug: str = "e2e",
        *,
        hubspot_mode: str = "note",
        tiktok_privacy: tuple[str, ...] = ("SELF_ONLY",),
    ) -> dict[str, dict[str, str]]:
        """Instagram, TikTok and HubSpot accounts for tenant `slug` (`manage.py add_channel`, with
        the tokens the fakes accept), and the templates of templates/<channel>/ imported; returns
        `channel_templates`. TikTok's creator allows `tiktok_privacy` (unaudited: SELF_ONLY)."""
        tokens, refresh = self.channel_tokens, secrets.token_urlsafe(24)
        self.tiktok.add_account(
            TIKTOK_OPEN_ID,
            access_token=tokens["tiktok"],
            refresh_token=refresh,
            privacy_level_options=list(tiktok_privacy),
        )
        options = {
            "instagram": ["--ig-user-id", self.instagram.ig_user_id, "--expires-in", "5184000"],
            "tiktok": ["--open-id", TIKTOK_OPEN_ID, f"--refresh-token={refresh}", "--expires-in", "86400"]
            + ["--refresh-expires-in", "15552000"],
            "hubspot": ["--mode", hubspot_mode],
        }
        calls = [
            ["add_channel", slug, channel, f"--access-token={tokens[channel]}", *options[channel]]
            for channel in PLATFORM_CHANNELS
        ]
        todo = [c for c in PLATFORM_CHANNELS if c not in self.channel_templates]
        calls += [["import_templates", str(ROOT / "templates" / channel)] for channel in todo]
        outputs = self.call_commands(calls)  # one process: each manage.py start costs seconds of CPU
        for channel, output in zip(todo, outputs[len(PLATFORM_CHANNELS) :], strict=True):
            self.channel_templates[channel] = _templates_of(output)
        return self.channel_templates

    # -- waiting -------------------------------------------------------------------------

    def wait_for(
        self,
        predicate: Callable[[], object],
        timeout: float,
        interval: float = 0.05,
        message: str = "",
        progress: Callable[[], object] | None = None,
    ) -> None:
        """Poll `predicate` until it is truthy. StackError once `timeout` seconds pass with no
        progress (what `progress()` returns changing; by default the stack's `activity()`),
        or STALL_CEILING × `timeout` in all, or as soon as a process dies unkilled."""
        what = message or getattr(predicate, "__name__", repr(predicate))
        try:
            self.waiter.wait(predicate, timeout, interval, what, progress or self.activity)
        except StallError as stalled:
            raise StackError(str(stalled)) from None

    def activity(self) -> int:
        """How much the stack has done so far: bytes its processes logged and requests the
        fakes answered. Any change is progress for `wait_for`."""
        logged = sum(path.stat().st_size for path in map(self.log_path, self._processes) if path.exists())
        return logged + sum(len(fake.requests) for fake in self._fakes())

    def wait_for_log(self, name: str, text: str, timeout: float = START_TIMEOUT) -> None:
        """Wait until `text` appears in tmp_dir/<name>.log (e.g. a process saying it is ready)."""
        self.wait_for(lambda: text in self.log(name), timeout, 0.1, f"{text!r} in {name}.log")

    # -- internals -----------------------------------------------------------------------

    def _process_env(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in PASSED_THROUGH if key in os.environ}
        env.update(
            DJANGO_SETTINGS_MODULE="automedia_site.settings",
            PYTHONUNBUFFERED="1",
            DEBUG="0",
            DJANGO_SECRET_KEY=secrets.token_urlsafe(48),
            FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
            DATABASE_URL=self.database_url,
            LINE_API_BASE_URL=self.line.base_url,
            INSTAGRAM_GRAPH_BASE_URL=self.instagram.base_url,
            INSTAGRAM_GRAPH_API_VERSION=self.instagram.version,
            TIKTOK_API_BASE_URL=self.tiktok.base_url,
            TIKTOK_CLIENT_KEY=self.tiktok.client_key,
            TIKTOK_CLIENT_SECRET=self.tiktok.client_secret,
            HUBSPOT_API_BASE_URL=self.hubspot.base_url,
            PUBLIC_BASE_URL=self.web_url,
            DELIVERY_LEASE_SECONDS="5",
            SCHEDULER_POLL_SECONDS="0.2",
            Q_WORKERS="2",
            LOG_LEVEL="INFO",
            DJANGO_Q_LOG_LEVEL="INFO",  # each task in the logs: what a failed test's log tail needs
            ALLOWED_HOSTS=f"{HOST},localhost",
            BACKLOG_ALLOWED_HOSTS=f"{HOST},localhost",  # the fake Backlog
            # Plain HTTP on loopback: no redirect to HTTPS, cookies usable over HTTP.
            SECURE_SSL_REDIRECT="0",
            SESSION_COOKIE_SECURE="0",
            CSRF_COOKIE_SECURE="0",
            # Empty = the ORM broker; set explicitly so that a developer's .env cannot add Redis.
            REDIS_URL="",
        )
        env.update(self._overrides)
        return env

    def _import_templates(self) -> None:
        self.templates.update(_templates_of(self.manage("import_templates", str(TEMPLATES_DIR)).stdout))

    def _fakes(self) -> tuple[FakeBacklog, FakeLine, FakeInstagram, FakeTikTok, FakeHubSpot]:
        return (self.backlog, self.line, self.instagram, self.tiktok, self.hubspot)

    def _start_web(self) -> None:
        fds: tuple[int, ...] = ()
        if self.web == "gunicorn":
            # The production config (gunicorn.conf.py: threads by database), on the socket
            # this stack has held since it was made.
            if self._web_socket is None:
                raise StackError("the web server's socket was closed: a stopped stack does not start again")
            fds = (self._web_socket.fileno(),)
            argv = [sys.executable, "-m", "gunicorn", "automedia_site.wsgi", "-c", "gunicorn.conf.py"]
            argv += ["-w", "2", "-b", f"fd://{fds[0]}"]
            argv += ["--graceful-timeout", "3", "--no-control-socket"]
        else:  # runserver binds the port itself: freed just before it starts
            self._web_socket_close()
            argv = [sys.executable, "manage.py", "runserver", f"{HOST}:{self.web_port}", "--noreload"]
        self._launch("web", argv, pass_fds=fds)
        self.wait_for(self._web_answers, START_TIMEOUT, 0.1, f"{self.web_url}/healthz to answer")

    def _web_answers(self) -> bool:
        try:
            httpx.get(f"{self.web_url}/healthz", timeout=2.0)
        except httpx.HTTPError:
            return False
        return True

    def _web_socket_close(self) -> None:
        if self._web_socket is not None:
            self._web_socket.close()
            self._web_socket = None

    def _launch(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()
    ) -> subprocess.Popen:
        running = self._processes.get(name)
        if running is not None and running.poll() is None:
            raise StackError(f"a process named {name!r} is already running")
        log = self._logs.get(name) or open(self.log_path(name), "ab")  # noqa: SIM115 - closed in stop()
        self._logs[name] = log
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )
        self._processes[name] = proc
        self._killed.discard(name)
        return proc

    def _signal(self, name: str, sig: int, *, group: bool) -> None:
        proc = self._processes[name]
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)  # start_new_session: the group id is the pid
            elif proc.poll() is None:
                proc.send_signal(sig)

    def _check_alive(self) -> None:
        for name, proc in self._processes.items():
            if name not in self._killed and proc.poll() is not None:
                raise StackError(
                    f"process {name!r} exited with {proc.returncode}\n"
                    f"--- {name}.log ---\n{_tail(self.log(name))}"
                )


# -- helpers ----------------------------------------------------------------------------


def _templates_of(output: str) -> dict[str, str]:
    """name → rev from import_templates' `NAME@REV (new|unchanged)` lines."""
    found = (_TEMPLATE_LINE.match(line.strip()) for line in output.splitlines())
    return {match["name"]: match["rev"] for match in found if match}


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])
