"""Bundles between machines: `kit export`, `kit import` and `kit compare`."""

from __future__ import annotations

from ..core.errors import KitError
from .common import (bounded, path, confirm, dataset_args, emit, factor_list, pipeline_arg, say_stacks,
                     subject, words)


def add(sub) -> None:
    p = sub.add_parser("export", help="write runs into one portable, checksummed bundle")
    dataset_args(p)
    p.add_argument("--out", type=path, required=True, help="bundle file to write (e.g. lab.kit.tgz)")
    p.add_argument("--factor", type=factor_list, help="only the runs of these factors' pairs "
                   "(and the cross-fed and probe runs `kit explain` made for them; with "
                   "--pipeline: any of its factors, seed:NAME included)")
    p.add_argument("--arrays", action="store_true", help="include the stage arrays (for magnitudes)")
    pipeline_arg(p)
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("import", help="merge a bundle into the store (verified, idempotent)")
    p.add_argument("file", type=path, help="a bundle written by `kit export`")
    # all or nothing (kit.runs.store.Store.import_runs): an interrupt keeps nothing of the bundle
    p.set_defaults(func=_cmd_import, stopped="stopped: nothing of the bundle was imported; run "
                   "the same command to import it")

    p = sub.add_parser("compare", help="rerun a bundle's runs here and say how far they differ",
                       description="Import a lab's bundle (`kit export`), rerun each of its runs on "
                       "this machine (same dataset, seeds, threads and stack), pair each with its "
                       "twin as the factor `host`, and answer: reproduced, bits only, within the "
                       "budget, beyond it, or a changed conclusion.")
    p.add_argument("file", type=path, help="the bundle (e.g. lab.kit)")
    p.add_argument("--jobs", type=bounded("--jobs"), default=1, help="runs at once (default 1)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--yes", action="store_true",
                   help="build the stacks the reruns need without asking (for scripts)")
    p.add_argument("--pipeline", type=path, metavar="FILE.py", action="append", default=[], dest="files",
                   help="the lab pipeline file the bundle's runs were made with (kit export "
                        "--pipeline): rerun here from the same bytes (once per file)")
    p.set_defaults(func=_cmd_compare)


def _cmd_export(args) -> int:
    from rich.console import Console

    from ..app.bundle import export, plan_export
    from ..app.verbs import export_runs, factor_names
    from ..runs.store import Store
    from ..views.verbs import export_head

    from ..core.atomic import out_file

    # --out's one rule, as every command's (a folder, a link or a device there: one line),
    # said before any work; missing folders above it are made, as `kit report --out` makes its
    out_path = out_file(args.out, "lab.kit")
    factors = factor_names(args.factor, **words(args))  # said before anything is read
    store = Store()
    rec = export_runs(store, subject(args, store), factors)
    said = export_head(rec)
    if said:
        Console(stderr=True).print(said)
    ids = list(rec.ids)
    p = plan_export(store, ids, args.arrays)
    Console(stderr=True).print(
        f"exporting {len(p['runs'])} runs, {len(p['pairs'])} pairs"
        + (f", {len(p['blobs'])} arrays ({p['array_bytes'] / 2**20:.2f} MiB before compression)"
           if args.arrays else ", hashes only (add --arrays for magnitudes)"))
    out = export(store, ids, out_path, args.arrays)
    print(f"wrote {out['file']}: {out['runs']} runs, {out['bytes'] / 2**20:.2f} MiB, "
          f"sha256 {out['sha256']}")
    return 0


def _unverified_note(imported: dict, bundle) -> None:
    """Say once, on stderr, which of a bundle's datasets are not on this machine and how each is
    made here (an import never makes one)."""
    wanted = imported.get("wanted") or {}
    if wanted:
        import sys

        print(f"note: the runs need dataset{'s' if len(wanted) > 1 else ''} "
              f"{'; '.join(wanted.values())}; it is not on this machine, so its summary is "
              f"unverified until it is, and `kit import {bundle}` again verifies it",
              file=sys.stderr)


def _cmd_import(args) -> int:
    from ..app.bundle import import_bundle
    from ..runs.store import Store

    out = import_bundle(Store(), args.file)
    print(f"imported {out['added']} new of {out['runs']} runs ({out['arrays']} arrays) from "
          f"{out['host']['name']} ({out['created']})")
    _unverified_note(out, args.file)
    return 0


def _cmd_compare(args) -> int:
    from rich.console import Console

    from ..app.verbs import compare
    from ..runs.store import Store
    from ..views.verbs import compare_page

    err = Console(stderr=True)
    def ask(stacks) -> bool:
        """As `kit run` asks; without a terminal, only with --yes (gigabytes, not seconds)."""
        say_stacks(err, f"Comparing {args.file}", stacks)
        if not args.yes:
            status.stop()
            confirm(err, "Build them now?", "Without a terminal, add --yes to build them (or "
                    "build them first: kit stacks build NAME).")
            status.start()
        return True

    with err.status("comparing") as status:
        rec = compare(Store(), args.file, args.files or (), jobs=args.jobs, log=status.update,
                      on_done=lambda s: err.print(f"ran {s.run_id[:12]} here"), confirm=ask)
    emit(compare_page(rec.data, args.json))
    _unverified_note(rec.data["imported"], args.file)
    return 0
