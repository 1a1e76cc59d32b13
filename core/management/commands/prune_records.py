"""`manage.py prune_records [--dry-run]`: the retention policy applied once (it also runs
daily as the django-q2 schedule `automedia-prune-records`).

Prints one line per table and what was done to it (rows deleted, texts blanked,
profiles removed); with --dry-run, how many rows each rule would touch, touching none.
Safe to run while another prune runs: each batch takes rows no other prune holds.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from core.retention import records_prune


class Command(BaseCommand):
    help = "Delete or strip what the retention policy (RETENTION_*) no longer keeps, in short batches."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count what would go; change nothing")

    def handle(self, *args, dry_run: bool = False, **options) -> None:
        results = records_prune(dry_run=dry_run)
        width = max((len(table) for table, _, _ in results), default=0)
        for table, verb, rows in results:
            shown = f"would be {verb}" if dry_run else verb
            self.stdout.write(f"{table:<{width}}  {shown}: {rows}")
