"""The run's progress on the console: one bar for the whole plan, advanced by elapsed
time within each job, with the live table (`run --live`) under it."""

from __future__ import annotations

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from rtgauge.plan import Job, plan_seconds
from rtgauge.report.safe import markup


class ProgressView:
    """One bar for the whole plan, advanced by elapsed time within each job."""

    def __init__(self, console, jobs: list[Job], warmup_s: float):
        class WithLiveTable(Progress):
            below = None           # the live table (run --live), under the bar

            def get_renderables(self):
                yield from super().get_renderables()
                if self.below is not None:
                    yield self.below
        self.progress = WithLiveTable(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                      TextColumn("left"), TimeRemainingColumn(), console=console,
                                      refresh_per_second=2, transient=False)
        self.total = plan_seconds(jobs, warmup_s)
        self.done = 0.0
        self.current: Job | None = None
        self.task = self.progress.add_task("starting", total=self.total)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def start_job(self, job: Job) -> None:
        self.current = job
        self.progress.update(self.task, description=f"{markup(job.label, 64):<32}", completed=self.done)

    def tick(self, elapsed: float) -> None:
        self.progress.update(self.task, completed=self.done + min(elapsed, self.current.expected_s))

    def grow(self, seconds: float) -> None:
        """More to measure than planned (--until-verdict's further rounds)."""
        self.total += seconds
        self.progress.update(self.task, total=self.total)

    def live(self, table) -> None:
        """Show `table` (trace/live.py: per job and CPU) under the bar until the next one."""
        self.progress.below = table

    def end_job(self, job: Job, doc: dict) -> None:
        self.done += job.expected_s
        state = "ok" if doc.get("ok") else f"failed: {doc.get('error')}"
        self.progress.console.print(f"  {job.label}: {state}", markup=False)
        self.progress.update(self.task, completed=self.done)
