"""The test tree's own layout: it mirrors the code (tests/<app>/ for each package of the
repository), shared helpers live in tests/helpers/ and fixtures in conftest.py files, and
no module imports a test module or a conftest (pytest loads those itself; importing one
runs its module code twice and ties a test to another test's file)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# Folders of the test tree that mirror no package: the loopback stack's tests, the shared
# helpers, LINE's published specs and the recorded provider payloads.
TEST_ONLY_DIRS = {"e2e", "helpers", "contracts", "fixtures"}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(source: str, importer: str) -> set[str]:
    """Every module `importer` imports, `from package import module` included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importer's package upwards
                package = importer.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str, tree: str = "tests") -> bool:
    parts = name.split(".")
    return parts[0] == tree and (parts[-1].startswith("test_") or parts[-1] == "conftest")


def imported_test_modules(source: str, importer: str, tree: str = "tests") -> set[str]:
    return {name for name in imported_modules(source, importer) if is_test_module(name, tree)}


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_it_imports_no_test_module_or_conftest_from_another_module():
    offenders = {
        module_name(path): sorted(imported_test_modules(path.read_text(encoding="utf-8"), module_name(path)))
        for path in python_files()
    }

    assert len(offenders) > 50  # the walk found the test tree
    assert {name: found for name, found in offenders.items() if found} == {}


def test_it_recognises_each_way_of_importing_a_test_module():
    # A tree named `suite` here, so that grepping the real tree for such imports finds none.
    source = (
        "from suite.deliveries.test_lifecycle import body\n"
        "import suite.linepush.test_webhook\n"
        "from suite.console import test_records\n"
        "from .test_scheduler import make_schedule\n"
        "from suite.conftest import API_KEY\n"
        "from suite.helpers.backlog import body, texts\n"
        "from suite.contracts.openapi import load_spec\n"
        "from deliveries.models import DeliverySchedule\n"
    )

    assert imported_test_modules(source, "suite.deliveries.test_deliver", tree="suite") == {
        "suite.deliveries.test_lifecycle",
        "suite.linepush.test_webhook",
        "suite.console.test_records",
        "suite.deliveries.test_scheduler",
        "suite.conftest",
    }


def decorator_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                names.add(ast.unparse(target))
    return names


def test_it_keeps_fixtures_and_tests_out_of_the_helpers():
    helpers = sorted((TESTS / "helpers").glob("*.py"))
    found = {}
    for path in helpers:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
        ]
        fixtures = [d for d in decorator_names(tree) if d.endswith("fixture")]
        if tests or fixtures or path.name.startswith("test_") or path.name == "conftest.py":
            found[path.name] = tests + fixtures

    assert len(helpers) > 5
    assert found == {}


def unmirrored_folders(tests: Path, root: Path) -> list[str]:
    """Test folders (test-only ones aside) without a package of the same path in the repository."""
    folders = [p.relative_to(tests) for p in tests.rglob("*") if p.is_dir() and "__pycache__" not in p.parts]
    return sorted(
        str(folder)
        for folder in folders
        if folder.parts[0] not in TEST_ONLY_DIRS and not (root / folder / "__init__.py").is_file()
    )


def test_it_mirrors_a_package_of_the_repository_in_each_test_folder():
    mirrored = {p.name for p in TESTS.iterdir() if p.is_dir() and (ROOT / p.name / "__init__.py").is_file()}

    assert mirrored >= {"core", "backlog_bridge", "line", "deliveries", "linepush", "console"}
    assert unmirrored_folders(TESTS, ROOT) == []


def test_it_finds_a_test_folder_that_mirrors_nothing(tmp_path):
    for folder in (
        "app/channels",
        "tests/app/channels",
        "tests/app/publishers",
        "tests/helpers",
        "tests/misc",
    ):
        (tmp_path / folder).mkdir(parents=True)
    for package in ("app", "app/channels"):
        (tmp_path / package / "__init__.py").touch()

    assert unmirrored_folders(tmp_path / "tests", tmp_path) == ["app/publishers", "misc"]
