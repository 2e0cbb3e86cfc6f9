"""The read commands with --pipeline FILE.py|HASH: a lab pipeline's budget, verdicts, advice,
report and runs, thin over kit.analysis.lab_budget, lab_verdicts and lab_advice."""

from __future__ import annotations

from ..core.errors import KitError
from .common import print_json


def pipeline_arg(p) -> None:
    p.add_argument("--pipeline", metavar="FILE.py|HASH",
                   help="a lab's own pipeline (kit run --pipeline): its file, or the hash prefix "
                        "`kit runs` shows")


def _selected(args):
    from ..app.selection import pipeline_or_dataset, select_pipeline
    from ..runs.store import Store

    pipeline_or_dataset(args.pipeline, getattr(args, "dataset", None), getattr(args, "n", None))
    store = Store()
    return store, select_pipeline(store, args.pipeline)


def _readings(store, info, factor=None):
    from ..analysis.lab_budget import lab_budget
    from ..analysis.lab_verdicts import lab_verdicts

    b, v = lab_budget(store, info), lab_verdicts(store, info)
    if factor:
        if factor not in b["factors"]:
            raise KitError(f"no pairs of factor {factor!r} of pipeline {info['name']}; stored: "
                           f"{', '.join(b['factors']) or 'none'}")
        b["factors"] = {factor: b["factors"][factor]}
        v["factors"] = {k: r for k, r in v["factors"].items() if k == factor}
    return b, v


def budget(args) -> int:
    from ..analysis.lab_budget import lab_pair_details
    from ..views.lab import lab_budget_text, lab_pairs_text
    from ..views.lab_readers import lab_verdicts_text

    store, info = _selected(args)
    b, v = _readings(store, info, args.factor)
    if args.factor:  # the pairs behind the row, as kit's own `kit budget --factor` lists them
        b["pairs"] = lab_pair_details(store, info, args.factor)
    if args.json or args.csv:
        if args.csv:
            raise KitError("--csv is kit's own budget table; a pipeline's budget: --json")
        print_json(b)
        return 0
    print(lab_pairs_text(info["name"], info["sha256"], args.factor, b["pairs"]) if args.factor
          else lab_budget_text(b))
    if v["factors"] or v["unfit"]:
        print("\n" + lab_verdicts_text(v))
    return 0


def verdicts(args) -> int:
    from ..analysis.lab_homology import protein_outputs
    from ..views.lab_homology import lab_homology_pointer
    from ..views.lab_readers import lab_verdicts_text

    store, info = _selected(args)
    _, v = _readings(store, info, args.run_set)
    print_json(v) if args.json else print(lab_verdicts_text(v))
    if not args.json and protein_outputs(info)[0] and v["factors"]:
        print("\n" + lab_homology_pointer(args.pipeline))
    return 0


def homology(args) -> int:
    """`kit homology --pipeline FILE.py [--data NAME]`: its runs' protein ids in a stored
    clustering, the verdicts under the cluster bootstrap and the leakage split."""
    from ..analysis.lab_homology import find_clustering, lab_homology, protein_outputs
    from ..views.lab_homology import lab_homology_text

    if not args.pipeline:
        raise KitError("--data goes with --pipeline FILE.py (kit's own runs: --dataset NAME)")
    store, info = _selected(args)
    if protein_outputs(info)[0] is None:
        raise KitError(f"pipeline {info['name']} declares no \"proteins\" output: homology maps "
                       f"each run's test protein ids (KINDS {{\"ids\": \"proteins\"}}, one per "
                       f"truth row) into a clustering")
    r = lab_homology(store, info, *find_clustering(store, info, args.data, args.identity,
                                                   args.coverage))
    h = r["summary"]
    if not h.runs:
        raise KitError(f"no run of pipeline {info['name']} could be read in dataset "
                       f"{r['dataset']}'s clustering: " + "; ".join(h.left_out[:1])
                       + (f" (and {len(h.left_out) - 1} more)" if len(h.left_out) > 1 else ""))
    print_json(r) if args.json else print(lab_homology_text(r))
    return 0


def advise(args) -> int:
    from ..analysis.lab_advice import lab_advise
    from ..views.lab_readers import lab_advice_text

    store, info = _selected(args)
    a = lab_advise(*_readings(store, info))
    print_json(a) if args.json else print(lab_advice_text(a))
    return 0


def report(args) -> int:
    from ..views.lab_readers import write_lab_report

    from ..core.atomic import out_folder

    folder = out_folder(args.out)  # --out's one rule, as kit's own report's
    store, info = _selected(args)
    out = write_lab_report(store, info, folder)
    print(f"pipeline {info['name']} ({info['sha256'][:12]})")
    print(f"wrote {out['md']} and {out['html']} ({len(out['plots'])} plots)")
    return 0


def pipeline_runs(args, store, factors=None) -> list:
    """The run ids of the pipeline --pipeline names (only those in pairs of ``factors``)."""
    from ..app.selection import lab_runs, pipeline_or_dataset, select_pipeline

    pipeline_or_dataset(args.pipeline, getattr(args, "dataset", None), getattr(args, "n", None))
    sha = select_pipeline(store, args.pipeline)["sha256"]
    ids = [r.id for r in lab_runs(store, sha)]
    if not ids:
        raise KitError(f"no runs of pipeline {sha[:12]} stored: kit run --pipeline FILE.py first")
    if factors:
        from ..analysis.lab_budget import pairs

        found = pairs(store, sha)
        stored = list(dict.fromkeys(f for f, _, _ in found))
        absent = [f for f in factors if f not in stored]
        if absent:
            raise KitError(f"no pairs of factor {absent[0]!r} of pipeline {sha[:12]} stored; "
                           f"stored: {', '.join(stored) or 'none'}")
        keep = {x for f, a, b in found if f in factors for x in (a, b)}
        ids = [i for i in ids if i in keep]
    return ids


def runs(args) -> int:
    from ..app.selection import lab_runs
    from ..views.tables import runs_text

    store, info = _selected(args)
    got = lab_runs(store, info["sha256"])
    if got and args.factor:
        keep = set(pipeline_runs(args, store, args.factor))
        got = [r for r in got if r.id in keep]
    if args.stack:
        got = [r for r in got if r.spec.stack == args.stack]
    if args.json:
        print_json(got)
    else:
        # one pipeline's runs: named once above, not in a column on every row
        head = f"pipeline {info['name']} ({info['sha256'][:12]})"
        print(f"runs of {head}\n" + runs_text(got, dataset=False) if got else
              f"no runs of {head} stored")
    return 0
