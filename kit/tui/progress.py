"""A run's progress, as kit.app.audit tells it (kit.core.callbacks.Progress), in the Run tab's
messages (imported by the run's worker)."""

from __future__ import annotations

from ..core.callbacks import Progress
from ..views.quoting import markup


class Messages(Progress):
    """A run's progress (from the worker thread) as Progress messages to the Run pane, told the
    same way for either subject (kit.app.audit.run_audit's and run_pairs' interface)."""

    def __init__(self, pane, factors: tuple):
        self.pane, self.name, self.factors, self.total, self.made = pane, "", factors, 0, 0

    def chosen(self, subject) -> None:
        """What runs (kit.app.verbs.run says it before planning): its name goes into the
        status's markup as text (a bundle's may read as markup)."""
        self.name = markup(subject.label())

    def say(self, line: str = "", **kw) -> None:
        self.pane.post_message(self.pane.Progress(line, **kw))

    def failed(self, e) -> None:
        """The error ``e`` (a KitError, or a bug's line) in the log and, red, as the status."""
        self.say(f"error: {e}", status=f"[red]{markup(e)}[/]")

    def building(self, stacks):
        self.say(status=f"building stacks for {markup(', '.join(self.factors))}")
        return super().building(stacks)

    def log(self, stack, line):
        self.say(f"[{stack}] {line}")

    def noted(self, line):
        """A stack the plan leaves out (a lab file's REQUIRES cannot be had there): its line."""
        self.say(f"skipped: {line}")

    def planned(self, a, todo):
        self.say(
            f"{len(a.pairs)} pairs, {len(a.specs)} runs: {len(a.specs) - len(todo)} stored, "
            f"{len(todo)} to run"
        )

    def running(self, todo):
        self.total = len(todo)
        self.say(status=f"running {self.name}: 0 of {self.total} done", done=0, total=self.total)
        return super().running(todo)

    def done(self, spec):
        self.made += 1
        self.say(
            f"run {self.made}/{self.total} done: {spec.stack} {spec.kind} "
            f"threads={spec.threads} {spec.run_id[:12]}",
            status=f"running {self.name}: {self.made} of {self.total} done",
            done=self.made,
        )
