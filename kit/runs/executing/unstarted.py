"""A cluster read before any of its jobs starts: where a plan's runs go when the settings name
every node class ([jobqueue.CLASS] tables), so that a plan whose runs are all stored starts
no job (it started Slurm jobs, and failed where sbatch is missing, to make nothing)."""

from __future__ import annotations

from ...core.errors import KitError
from .cluster_kinds import cluster_kind
from .node_classes import ClassTable
from .runner import Executor


class Unstarted(Executor):
    """The node classes the settings name, no worker joined: plans as the started cluster
    would, and refuses to make a run (it is handed only a plan with nothing to run)."""

    name = "dask"
    remote = True

    def __init__(self, target: str, planned: dict):
        self.table = ClassTable({}, target, planned)

    def classes(self) -> dict:
        return self.table.classes()

    def default_host(self) -> str:
        return self.table.default()

    def fewest_cores(self) -> int:
        return self.table.fewest_cores()

    def resolve(self, names) -> tuple:
        return self.table.resolve(names)

    def unfit(self, spec):
        return self.table.unfit(spec)

    def refit(self, pair):
        return self.table.refit(pair)

    def check(self, spec):
        raise KitError(
            f"run {spec.run_id[:12]}: the cluster was not started (every run of the "
            "plan was stored when it was planned); run the command again"
        )

    def retried_text(self) -> None:
        return None


def unstarted(target: str) -> Unstarted | None:
    """The cluster ``target`` as its settings name it before a job starts; None where its node
    classes are the workers' own (known only once one joins) or it starts no jobs."""
    planned = cluster_kind(target).planned()
    return Unstarted(target, planned) if planned else None
