"""`kit cluster show|init|check`: the cluster settings, and every worker's node and stacks."""

from __future__ import annotations

import sys

from ..core.errors import KitError
from ..envs.catalogue import HOST
from .common import CLUSTERS, cluster_arg, print_json, prints_tables


def add(sub) -> None:
    p = sub.add_parser("cluster", help="Dask cluster settings, and a check of every worker")
    cs = p.add_subparsers(dest="cluster_cmd", required=True, metavar="ACTION")
    s = cs.add_parser("show", help="the settings kit run --cluster uses")
    s.add_argument(
        "--job-script",
        action="store_true",
        help="print the exact job script of each node class instead (nothing submitted)",
    )
    s.add_argument(
        "--cluster",
        default="slurm",
        metavar="SYSTEM",
        type=cluster_arg,
        help="with --job-script: slurm (default), pbs, sge, lsf or htcondor",
    )
    prints_tables(s).set_defaults(func=_show)
    cs.add_parser("init", help="write a commented settings file to edit").set_defaults(func=_init)
    c = cs.add_parser("check", help="start or join a cluster and describe every worker")
    c.add_argument("--cluster", default="local", metavar="WHICH", type=cluster_arg, help=CLUSTERS)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_check)


def _show(args) -> int:
    from ..runs.executing.cluster_kinds import JobQueueKind, cluster_kind
    from ..runs.executing.cluster_settings import settings, settings_path
    from ..views.cluster import job_scripts_text, settings_text

    if not args.job_script:
        print(settings_text(str(settings_path()), settings_path().exists(), settings()))
        return 0
    kind = cluster_kind(args.cluster)
    if not isinstance(kind, JobQueueKind):
        raise KitError(
            f"--job-script shows a batch job; --cluster {args.cluster} starts none "
            "(use slurm, pbs, sge, lsf or htcondor)"
        )
    print(job_scripts_text(kind.system, kind.job_scripts()))
    return 0


def _init(args) -> int:
    from ..runs.executing.cluster_settings import init_settings, settings_path

    existed = settings_path().exists()
    path = init_settings()
    print(
        f"{path} exists; left as it is"
        if existed
        else f"wrote {path}; edit it, then `kit cluster show`"
    )
    return 0


def _check(args) -> int:
    from ..envs.kinds import names
    from ..runs.executing.answers import check_rows
    from ..runs.executing.dask_executor import DaskExecutor
    from ..views.cluster import check_text

    with DaskExecutor(args.cluster, log=lambda m: print(f"kit: {m}", file=sys.stderr)) as ex:
        rows = check_rows(ex, [HOST, *names()])
    print_json(rows) if args.json else print(check_text(rows, args.cluster))
    return 0
