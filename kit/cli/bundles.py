"""Bundles between machines: `kit export`, `kit import` and `kit compare`."""

from __future__ import annotations

import sys

from ..core.atomic import out_file
from .common import (
    bounded,
    confirm,
    dataset_args,
    emit,
    factor_list,
    path,
    pipeline_arg,
    say_stacks,
    subject,
    words,
)


def add(sub) -> None:
    p = sub.add_parser("export", help="write runs into one portable, checksummed bundle")
    dataset_args(p)
    p.add_argument(
        "--out", type=path, required=True, help="bundle file to write (e.g. lab.kit.tgz)"
    )
    p.add_argument(
        "--factor",
        type=factor_list,
        help="only the runs of these factors' pairs "
        "(and the cross-fed and probe runs `kit explain` made for them; with "
        "--pipeline: any of its factors, seed:NAME included)",
    )
    p.add_argument(
        "--arrays", action="store_true", help="include the stage arrays (for magnitudes)"
    )
    images = p.add_mutually_exclusive_group()
    images.add_argument(
        "--image",
        action="store_true",
        dest="image",
        help="carry each container stack's image as an OCI archive (hundreds of "
        "MB; the other end runs it only with kit compare --trust-image)",
    )
    images.add_argument(
        "--no-image",
        action="store_false",
        dest="image",
        help="carry only each image's id and recipe (the default): the other "
        "end rebuilds it and compares the ids",
    )
    pipeline_arg(p)
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("import", help="merge a bundle into the store (verified, idempotent)")
    p.add_argument("file", type=path, help="a bundle written by `kit export`")
    # all or nothing (kit.runs.store.Store.import_runs): an interrupt keeps nothing of the bundle
    p.set_defaults(
        func=_cmd_import,
        stopped="stopped: nothing of the bundle was imported; run the same command to import it",
    )

    p = sub.add_parser(
        "compare",
        help="rerun a bundle's runs here and say how far they differ",
        description="Import a lab's bundle (`kit export`), rerun each of its runs on "
        "this machine (same dataset, seeds, threads and stack), pair each with its "
        "twin as the factor `host`, and answer: reproduced, bits only, within the "
        "budget, beyond it, or a changed conclusion.",
    )
    p.add_argument("file", type=path, help="the bundle (e.g. lab.kit)")
    p.add_argument("--jobs", type=bounded("--jobs"), default=1, help="runs at once (default 1)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument(
        "--yes",
        action="store_true",
        help="build the stacks the reruns need without asking (for scripts)",
    )
    p.add_argument(
        "--pipeline",
        type=path,
        metavar="FILE.py",
        action="append",
        default=[],
        dest="files",
        help="the lab pipeline file the bundle's runs were made with (kit export "
        "--pipeline): rerun here from the same bytes (once per file)",
    )
    p.add_argument(
        "--trust-image",
        action="store_true",
        help="rerun in the container images the bundle carries (kit export --image), "
        "each checked to be the image its recipe names, instead of rebuilding "
        "them from their recipes: an image is code, so kit asks first",
    )
    p.set_defaults(func=_cmd_compare)


def _cmd_export(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.verbs import export_head

    # --out's one rule, as every command's (a folder, a link or a device there: one line),
    # said before any work; missing folders above it are made, as `kit report --out` makes its
    out_path = out_file(args.out, "lab.kit")
    k = Kit()
    factors = k.factor_names(args.factor, **words(args))  # said before anything is read
    rec = k.export_runs(subject(args, k), factors)
    said = export_head(rec)
    if said:
        Console(stderr=True).print(said)
    ids = list(rec.ids)
    p = k.export_plan(ids, args.arrays, args.image)
    err = Console(stderr=True)
    err.print(
        f"exporting {len(p['runs'])} runs, {len(p['pairs'])} pairs"
        + (
            f", {len(p['blobs'])} arrays ({p['array_bytes'] / 2**20:.2f} MiB before compression)"
            if args.arrays
            else ", hashes only (add --arrays for magnitudes)"
        )
        + _images_said(p["images"], p["image_bytes"])
    )
    if args.image and not p["images"]:
        err.print("note: --image: none of these runs ran in a container stack, so no image travels")
    with err.status("exporting") as status:
        out = k.export(ids, out_path, args.arrays, args.image, log=status.update)
    print(
        f"wrote {out['file']}: {out['runs']} runs, {out['bytes'] / 2**20:.2f} MiB, "
        f"sha256 {out['sha256']}"
    )
    return 0


def _images_said(recipes: dict, size: int) -> str:
    """What the bundle carries of the images its runs ran in."""
    if not recipes:
        return ""
    carried = [n for n, r in recipes.items() if r["archive"]]
    if carried:
        return (
            f", the image{'s' if len(carried) > 1 else ''} of {', '.join(carried)} "
            f"({size / 2**20:,.0f} MiB unpacked)"
        )
    return (
        f", the recipe of the image{'s' if len(recipes) > 1 else ''} of "
        f"{', '.join(recipes)} (--image carries the image itself)"
    )


def _unverified_note(imported: dict, bundle) -> None:
    """Say once, on stderr, which of a bundle's datasets are not on this machine and how each is
    made here (an import never makes one)."""
    wanted = imported.get("wanted") or {}
    if wanted:
        print(
            f"note: the runs need dataset{'s' if len(wanted) > 1 else ''} "
            f"{'; '.join(wanted.values())}; it is not on this machine, so its summary is "
            f"unverified until it is, and `kit import {bundle}` again verifies it",
            file=sys.stderr,
        )


def _cmd_import(args) -> int:
    from ..app.facade import Kit

    out = Kit().import_bundle(args.file)
    print(
        f"imported {out['added']} new of {out['runs']} runs ({out['arrays']} arrays) from "
        f"{out['host']['name']} ({out['created']})"
    )
    _unverified_note(out, args.file)
    return 0


def _cmd_compare(args) -> int:
    from rich.console import Console

    from ..app.facade import Kit
    from ..views.verbs import compare_page

    err = Console(stderr=True)

    def asked(question: str, refusal: str) -> bool:
        """A question on the terminal, the status line paused; --yes answers it."""
        if not args.yes:
            status.stop()
            confirm(err, question, refusal)
            status.start()
        return True

    def ask(stacks) -> bool:
        """As `kit run` asks; without a terminal, only with --yes (gigabytes, not seconds)."""
        say_stacks(err, f"Comparing {args.file}", stacks)
        return asked(
            "Build them now?",
            "Without a terminal, add --yes to build them (or build "
            "them first: kit stacks build NAME).",
        )

    def trust(images) -> bool:
        """--trust-image: the images a bundle carries are code, asked for by name and id."""
        err.print(
            "--trust-image: the bundle carries "
            + ", ".join(f"{n}'s image {i[7:19]} ({b / 2**20:,.0f} MiB)" for n, i, b in images)
            + ". Its code runs here (no network, a read-only root, no capabilities, "
            "writing only its runs' folders), after each archive is checked to be the "
            "image its recipe names."
        )
        return asked(
            "Run the bundle's images?",
            "Without a terminal, add --yes to run them (or "
            "leave out --trust-image: kit then rebuilds them from their recipes).",
        )

    with err.status("comparing") as status:
        rec = Kit().compare(
            args.file,
            args.files or (),
            jobs=args.jobs,
            log=status.update,
            on_done=lambda s: err.print(f"ran {s.run_id[:12]} here"),
            confirm=ask,
            trust_image=args.trust_image,
            trust=trust,
        )
    emit(compare_page(rec.data, args.json))
    _unverified_note(rec.data["imported"], args.file)
    return 0
