"""`manage.py import_templates DIR [--tenant SLUG]`: revisions, unchanged files, bad files, tenants."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from backlog_bridge.body.task import TemplateRef
from deliveries.channels.template_store import ImportResult, template_import, template_resolve, template_rev
from deliveries.models import MessageTemplate
from tests.helpers.factories import MessageTemplateFactory, TenantFactory

OPEN = [{"type": "text", "text": "{{ date }} より営業開始（{{ hours }}）"}]
REMIND = [{"type": "text", "text": "{{date}} はお休みです"}]


def write(directory: Path, name: str, content: object) -> Path:
    path = directory / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False), "utf-8")
    return path


def run(*args) -> str:
    out = StringIO()
    call_command("import_templates", *map(str, args), stdout=out)
    return out.getvalue()


def run_failing(*args) -> tuple[str, CommandError]:
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_templates", *map(str, args), stdout=out)
    return out.getvalue(), caught.value


@pytest.mark.django_db
def test_it_imports_every_file_and_prints_name_at_rev(tmp_path):
    write(tmp_path, "reminder", REMIND)
    write(tmp_path, "announce_open", OPEN)

    out = run(tmp_path)

    assert out.splitlines() == [
        f"announce_open@{template_rev(OPEN)} (new)",
        f"reminder@{template_rev(REMIND)} (new)",
    ]
    stored = MessageTemplate.objects.get(name="announce_open")
    assert (stored.tenant, stored.rev, stored.channel, stored.messages) == (
        None,
        template_rev(OPEN),
        "line",
        OPEN,
    )
    assert stored.source == str(tmp_path / "announce_open.json")


@pytest.mark.django_db
def test_it_prints_a_rev_that_resolves_the_imported_revision(tmp_path):
    write(tmp_path, "announce_open", OPEN)

    name_at_rev = run(tmp_path).split()[0]

    assert template_resolve(tenant=None, ref=TemplateRef.parse(name_at_rev)).messages == OPEN


@pytest.mark.django_db
def test_it_reports_an_unchanged_file_without_a_new_revision(tmp_path):
    write(tmp_path, "announce_open", OPEN)
    run(tmp_path)
    write(tmp_path, "announce_open", json.dumps(OPEN, indent=4, ensure_ascii=False))

    assert run(tmp_path) == f"announce_open@{template_rev(OPEN)} (unchanged)\n"
    assert MessageTemplate.objects.count() == 1


@pytest.mark.django_db
def test_it_makes_a_new_revision_when_a_file_changed_and_keeps_the_old_one(tmp_path):
    write(tmp_path, "announce_open", OPEN)
    run(tmp_path)
    changed = [{"type": "text", "text": "{{ date }} グランドオープン"}]
    write(tmp_path, "announce_open", changed)

    assert run(tmp_path) == f"announce_open@{template_rev(changed)} (new)\n"
    assert template_resolve(tenant=None, ref=TemplateRef("announce_open")).messages == changed
    old = TemplateRef("announce_open", template_rev(OPEN))
    assert template_resolve(tenant=None, ref=old).messages == OPEN


@pytest.mark.django_db
def test_it_says_which_revision_stays_latest_when_a_file_is_reverted(tmp_path):
    write(tmp_path, "announce_open", OPEN)
    run(tmp_path)
    changed = [{"type": "text", "text": "{{ date }} グランドオープン"}]
    write(tmp_path, "announce_open", changed)
    run(tmp_path)
    write(tmp_path, "announce_open", OPEN)

    results = template_import(directory=tmp_path)

    assert results == [
        ImportResult(
            name="announce_open", rev=template_rev(OPEN), created=False, latest_rev=template_rev(changed)
        )
    ]
    assert MessageTemplate.objects.count() == 2
    assert f"最新の announce_open@{template_rev(changed)} のまま" in run(tmp_path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content, error",
    [
        ("[{", "JSON として読めません（1 行 3 列"),
        ({"type": "text", "text": "x"}, "配列"),
        ([], "メッセージが 0 件あります"),
        ([{"type": "text", "text": "x"}] * 6, "メッセージが 6 件あります"),
        ([{"text": "x"}], "1 件目のメッセージ: type がありません"),
        (["x"], "1 件目のメッセージ: オブジェクト"),
        ([{"type": "text", "text": ""}], "text がないか空です"),
        ([{"type": "image", "originalContentUrl": "http://x.jp/{{ file }}"}], "https の URL"),
    ],
    ids=["json", "object", "empty", "six", "no-type", "not-object", "empty-text", "http-image"],
)
def test_it_reports_a_bad_file_with_exit_1_while_good_files_import(tmp_path, content, error):
    write(tmp_path, "announce_open", OPEN)
    write(tmp_path, "broken", content)
    write(tmp_path, "reminder", REMIND)

    out, failure = run_failing(tmp_path)

    lines = out.splitlines()
    assert lines[0] == f"announce_open@{template_rev(OPEN)} (new)"
    assert lines[1].startswith("broken: error ") and error in lines[1], lines[1]
    assert lines[2] == f"reminder@{template_rev(REMIND)} (new)"
    assert failure.returncode == 1 and "3 件中 1 件" in str(failure)
    assert sorted(MessageTemplate.objects.values_list("name", flat=True)) == ["announce_open", "reminder"]


@pytest.mark.django_db
def test_it_reports_a_file_that_is_not_utf8(tmp_path):
    (tmp_path / "latin.json").write_bytes('[{"type":"text","text":"caf\xe9"}]'.encode("latin-1"))

    out, _ = run_failing(tmp_path)

    assert out == "latin: error UTF-8 のテキストとして読めません。\n"


@pytest.mark.django_db
def test_it_rejects_a_file_name_that_cannot_be_referenced(tmp_path):
    write(tmp_path, "announce@open", OPEN)

    out, _ = run_failing(tmp_path)

    assert out.startswith("announce@open: error ")
    assert not MessageTemplate.objects.exists()


@pytest.mark.django_db
def test_it_accepts_placeholders_where_urls_and_texts_are_expected(tmp_path):
    template = [
        {"type": "text", "text": "{{ body }}"},
        {"type": "image", "originalContentUrl": "{{ image }}", "previewImageUrl": "{{ host }}/preview.png"},
        {"type": "flex", "altText": "{{ title }}", "contents": {"type": "bubble"}},
    ]
    write(tmp_path, "rich", template)

    assert run(tmp_path) == f"rich@{template_rev(template)} (new)\n"


@pytest.mark.django_db
def test_it_imports_templates_for_one_tenant(tmp_path):
    acme = TenantFactory(slug="acme")
    MessageTemplateFactory(name="announce_open", rev="aaaaaaaaaaaa")
    write(tmp_path, "announce_open", OPEN)

    run(tmp_path, "--tenant", "acme")

    own = MessageTemplate.objects.get(tenant=acme)
    assert own.rev == template_rev(OPEN)
    assert template_resolve(tenant=acme, ref=TemplateRef("announce_open")) == own
    assert template_resolve(tenant=None, ref=TemplateRef("announce_open")).rev == "aaaaaaaaaaaa"


@pytest.mark.django_db
def test_it_keeps_shared_and_tenant_revisions_of_the_same_content_apart(tmp_path):
    TenantFactory(slug="acme")
    write(tmp_path, "announce_open", OPEN)

    assert run(tmp_path).endswith("(new)\n")
    assert run(tmp_path, "--tenant", "acme").endswith("(new)\n")
    assert MessageTemplate.objects.count() == 2


@pytest.mark.django_db
def test_it_rejects_an_unknown_tenant(tmp_path):
    write(tmp_path, "announce_open", OPEN)

    _, failure = run_failing(tmp_path, "--tenant", "nobody")

    assert "テナント「nobody」がありません" in str(failure)
    assert not MessageTemplate.objects.exists()


@pytest.mark.django_db
def test_it_rejects_a_missing_directory(tmp_path):
    _, failure = run_failing(tmp_path / "missing")

    assert failure.returncode == 1 and "がありません" in str(failure)


@pytest.mark.django_db
def test_it_rejects_a_directory_without_templates(tmp_path):
    (tmp_path / "notes.txt").write_text("x")

    _, failure = run_failing(tmp_path)

    assert "NAME.json がありません" in str(failure)


@pytest.mark.django_db
def test_it_imports_the_demo_theme_folder():
    out = run(settings.BASE_DIR / "templates" / "line")

    assert [line.split("@")[0] for line in out.splitlines()] == [
        "announce_open",
        "reminder",
        "reminder_mention",
    ]
    assert all(line.endswith("(new)") for line in out.splitlines())


@pytest.mark.django_db
def test_it_never_changes_a_stored_revision():
    stored = MessageTemplateFactory()
    stored.messages = [{"type": "text", "text": "書き換え"}]

    with pytest.raises(ValueError, match="変更できません"):
        stored.save()

    stored.refresh_from_db()
    assert stored.messages != [{"type": "text", "text": "書き換え"}]
