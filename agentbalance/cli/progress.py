"""The commands' progress bars: one look for all, and the bar that counts a sweep's finished units wherever
they run (this process or Ray workers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bars(console: Console) -> Progress:
    """Description, bar, done / total, elapsed time; left on screen when finished."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@contextmanager
def unit_progress(console: Console, what: str) -> Iterator[tuple[Progress, Callable[[int, int], None]]]:
    """The bar and its `on_unit(finished, total)`; print through `progress.console` so lines stay above it."""
    with progress_bars(console) as progress:
        task = progress.add_task(what, total=None)

        def on_unit(finished: int, total: int) -> None:
            progress.update(task, completed=finished, total=total)

        yield progress, on_unit
