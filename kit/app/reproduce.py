"""Does this machine reproduce a lab's bundle, and where it does not, does it matter?

``compare_bundle`` imports a bundle, reruns each of its run specs here (same dataset, seeds,
threads and stack, this machine's build of the stack), pairs every bundle run with its local
twin as the factor ``host``, and answers in the budget's terms: kit's own runs by stage and
verdict (``summarise``), a lab pipeline file's output by output by kind (``summarise_outputs``),
each rerun here from the same file, kept by its hash.
"""

from __future__ import annotations

import hashlib

from ..analysis.budget import budget, pair_details
from ..analysis.by_kind import compare as compare_outputs
from ..analysis.compare import ALL_MODELS, STAGES, first_difference
from ..analysis.records import Comparison
from ..analysis.verdicts import run_label
from ..core.callbacks import Confirm, Log, OnDone
from ..core.errors import KitError
from ..core.spec import RunSpec
from ..data import load_dataset, save_dataset
from ..data.pipelines import LabData, add_pipeline, file_sha256, pipeline_info, present, verify
from ..envs.containers import images, loaded
from ..envs.containers.runtime import runtime
from ..envs.derived import PREFIX, definition, lock_named
from ..envs.kinds import split_name, stack_kind
from ..envs.platforms import Platform, detect
from ..runs.executing.runner import run_all
from ..runs.planning.options import Pair
from ..runs.store.hosts import host
from .bundle import import_bundle, local_dataset, opened, recorded_rows

FACTOR = "host"
BLIND_NOTE = (
    "the bundle holds stage digests, not arrays: its runs are compared by their bits "
    "per stage; where bits differ, magnitudes, flips and verdicts need the arrays "
    "(`kit export --arrays` on the other machine)"
)


def find_dataset(summary: dict, sha: str, runs=()):
    """The local dataset with this sha256, found by the bundle's hint; else a clear error. The
    synthetic set is made here only at the size the bundle's ``runs`` record (their embedding's
    rows), and kept only when it is the one they ran on: a hint alone makes nothing."""
    ds = local_dataset(summary, sha)
    if ds is not None:
        return ds
    summary = summary if isinstance(summary, dict) else {}
    if summary.get("method") == "graphpart":  # a homology split: remade from its source here
        return _remade_split(summary, sha)
    name, rows = str(summary.get("name") or ""), summary.get("rows")
    try:
        if summary.get("source") == "synthetic" and rows:
            held = recorded_rows(runs)
            if rows != held:
                raise KitError(f"its hint says {rows} proteins, its runs hold {held}")
            base = load_dataset("synthetic", rows, save=False)
            if base.sha256 == sha:
                save_dataset(base)
                return base
        else:
            base = load_dataset(name.split("[:")[0])
            base = base.head(rows) if type(rows) is int and rows != base.n else base
    except KitError as e:
        raise KitError(f"the bundle's dataset {name[:64] or sha[:12]} is not here ({e})") from e
    theirs, ours = summary.get("release"), base.meta.get("release")
    flag = (
        f"; UniProt release {theirs} in the bundle, {ours} here: a different release"
        if theirs and theirs != ours
        else ""
    )
    raise KitError(
        f"dataset {name} here (sha256 {base.sha256[:12]}) is not the bundle's "
        f"(sha256 {sha[:12]}){flag}"
    )


def _remade_split(summary: dict, sha: str):
    """The bundle's GraphPart split, remade here from its source dataset and recorded
    parameters, saved; or one line on what differs."""
    from ..data.homology_split import recompute

    source = local_dataset({"name": summary.get("source_name")}, str(summary.get("source_dataset")))
    if source is None:
        raise KitError(
            f"the bundle's dataset {str(summary.get('name'))[:64]} is a GraphPart split "
            f"of {str(summary.get('source_name'))[:64]}, which is not here: import or "
            "fetch it, then compare again"
        )
    ds = recompute(summary, sha, source)
    save_dataset(ds)
    return ds


def _kind(name: str):
    """The stack of that name here, or None (the bundle's stack is not known here)."""
    try:
        return stack_kind(name)
    except KitError:
        return None


def _derived_here(doc: dict, specs, plat: Platform) -> dict:
    """{stack: why its runs cannot be rerun here} of the bundle's derived stacks (a catalogue
    stack plus its pipeline's REQUIRES, read from the pipeline's file), each locked here first
    (uv's reason when it cannot be); the others are then stacks like any."""
    lost = {}
    for s in specs:
        if s.stack.startswith(PREFIX) and s.stack not in lost and definition(s.stack) is None:
            requires = doc["_declared"].get(s.pipeline, {}).get("requires", [])
            why = lock_named(s.stack, requires, plat)
            if why:
                lost[s.stack] = f"stack {s.stack[:60]}: {why}"
    return lost


def _local_spec(spec: RunSpec, twins: dict, plat: Platform, stack: str) -> RunSpec | str:
    """This machine's twin of a bundle spec, run in ``stack`` (the spec's own, or the bundle's
    image loaded here), or the reason it cannot run here."""
    if spec.kind == "feed":  # explain's intermediates: `kit explain` makes them again here
        return "a cross-fed run of kit explain: `kit explain` makes its own here"
    kind = _kind(stack)
    if kind is None:
        return (
            f"stack {spec.stack} is neither in this kit's catalogue nor added here "
            f"(`kit stacks add {spec.stack} PYTHON` names an interpreter for it)"
        )
    st, why = kind.status(plat)
    if st == "unavailable":
        return f"stack {stack}: {why}"
    changes = {"host": host()["id"], "stack": stack}
    if spec.kind in ("torch", "perturb"):
        if spec.input not in twins or isinstance(twins[spec.input], str):
            return "its embedding run has no twin here"
        changes["input"] = twins[spec.input].run_id
    return spec.with_(**changes)


def compare_bundle(
    store,
    path,
    plat: Platform | None = None,
    jobs: int = 1,
    on_done: OnDone | None = None,
    log: Log = lambda msg: None,
    confirm: Confirm[list] = lambda stacks: True,
    pipelines=(),
    trust_image: bool = False,
    trust: Confirm[list] = lambda images: False,
) -> dict:
    """Verify, plan the reruns, import, rerun what is missing here, pair, and summarise.

    Everything that can refuse the bundle (its checksums, its datasets, its stacks) is checked
    before anything is written: a failed compare leaves the store as it was. ``confirm(stacks)``
    ([(name, download bytes or None)] not built here) is asked before any is built, as `kit run`
    asks; it may raise, or return False, to refuse (nothing is built or written then).
    ``pipelines``: the lab pipeline files the bundle's runs were made with, checked by hash.
    ``trust_image``: rerun in the images the bundle carries instead of rebuilding them from their
    recipes, each checked to be the image its recipe names, and only once ``trust(images)``
    ([(stack, image id, archive bytes)]) says yes (False or a raise: nothing is loaded).
    """
    plat = plat or detect()
    with opened(path, store.root) as found:
        swap = _trusted(found[0], path, trust, log) if trust_image else {}
        return _compare(store, path, found, plat, jobs, on_done, log, confirm, pipelines, swap)


def _trusted(doc: dict, path, trust, log) -> dict:
    """{bundle stack: the stack of its image as loaded here} (kit compare --trust-image): each
    archive read as untrusted and loaded only if it is the image its recipe and runs name."""
    carried = doc["_images"]
    if not carried:
        raise KitError(
            "--trust-image: the bundle carries no image (it was exported without "
            "--image); compare it without --trust-image to rebuild its images from "
            "their recipes"
        )
    offered = [
        (stack, doc["images"][stack]["id"], p.stat().st_size)
        for stack, p in sorted(carried.items())
    ]
    if not trust(offered):
        raise KitError("not compared: the bundle's images were not run; nothing was written")
    swap, rt = {}, runtime()
    for stack, p in sorted(carried.items()):
        log(f"checking and loading the image of {stack} the bundle carries")
        parts = split_name(stack)
        if parts is None:  # a bundle carries images of container stacks alone
            raise KitError(f"the bundle carries an image for {stack!r}, not a container stack")
        swap[stack] = loaded.load(rt, parts[0], p, doc["images"][stack], _bundle_sha(path))
    return swap


def _bundle_sha(path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _to_build(specs, plat, swap: dict) -> list:
    """[(name, download bytes or None)] of the stacks the reruns need that are not built here
    (a bundle's image loaded here is not built)."""
    out: dict = {}
    for spec in specs:
        if spec.kind == "feed" or spec.stack in swap:  # never rerun here, or loaded
            continue
        kind = _kind(spec.stack)
        if kind is not None and kind.buildable and kind.status(plat)[0] in ("not built", "broken"):
            out.setdefault(spec.stack, kind.download_bytes(plat))
    return list(out.items())


def _compare(store, path, found, plat, jobs, on_done, log, confirm, pipelines, swap) -> dict:
    doc = found[0]
    if doc["host"]["id"] == host()["id"]:
        raise KitError("this bundle was made on this machine (same KIT_HOME): nothing to compare")
    specs = {r["id"]: RunSpec.from_dict(r["spec"]) for r in doc["runs"]}  # verified by read()
    labs = {s.pipeline for s in specs.values() if s.pipeline}  # a lab's file is its "dataset"
    keep_pipeline_files(doc, labs, pipelines)
    lost = _derived_here(doc, specs.values(), plat)  # a lab's REQUIRES added here as there
    # the runs whose embedding others train on first, so that those find their twin input
    runs = sorted(doc["runs"], key=lambda r: specs[r["id"]].kind in ("torch", "perturb"))
    needed = _to_build(specs.values(), plat, swap)
    if needed and not confirm(needed):
        raise KitError("not compared: the stacks it needs were not built; nothing was written")
    twins: dict[str, RunSpec | str] = {}  # {run id: its twin here, or why it has none}
    reasons: dict[str, str] = {}
    for r in runs:
        spec = specs[r["id"]]
        stack = swap.get(spec.stack, spec.stack)
        kind = _kind(stack)
        builds = spec.kind != "feed" and kind is not None and kind.buildable
        if builds and kind.status(plat)[0] in ("not built", "broken"):
            log(f"building stack {stack}")
            kind.build(plat)
        twin = lost.get(spec.stack) or _local_spec(spec, twins, plat, stack)
        if isinstance(twin, RunSpec):
            twin = twin.with_(stack_id=stack_kind(stack).runnable().identity)
        twins[r["id"]] = twin
        if isinstance(twin, str):
            reasons[r["id"]] = twin
    made = {i: t for i, t in twins.items() if isinstance(t, RunSpec)}
    by_dataset: dict = {}
    for r in runs:
        if r["id"] in made:
            by_dataset.setdefault(specs[r["id"]].dataset, []).append(r)
    datasets = {
        sha: pipeline_data(doc, sha)
        if sha in labs
        else find_dataset(doc["datasets"].get(sha, {}), sha, by_dataset[sha])
        for sha in by_dataset
    }
    imported = import_bundle(store, path, found)
    pairs = []
    for sha, rs in by_dataset.items():
        ds = datasets[sha]
        local = [made[r["id"]] for r in rs]
        ref = [s for s in local if s.kind == "pipeline"]  # embeddings before the torch runs
        run_all(ref, ds, store, jobs=jobs, on_done=on_done)
        run_all(
            [s for s in local if s.kind in ("torch", "perturb")],
            ds,
            store,
            jobs=jobs,
            on_done=on_done,
        )
        for r in rs:
            a = specs[r["id"]]
            pairs.append(
                Pair(
                    FACTOR,
                    "",
                    a,
                    made[r["id"]],
                    f"{doc['host']['name']} vs {host()['name']}: {run_label(a)}",
                )
            )
    # in the order of their labels, not of the bundle (runs made in one second are listed by id)
    pairs.sort(key=lambda p: (p.label, p.a.run_id))
    store.add_pairs(pairs)
    if labs:
        out = summarise_outputs(store, doc, [p for p in pairs if p.a.pipeline], reasons, imported)
    else:
        out = summarise(store, doc, pairs, reasons, imported)
    return {**out, "images": image_findings(doc, specs, twins, swap)}


def image_findings(doc: dict, specs: dict, twins: dict, swap: dict) -> list:
    """Each container stack the bundle's runs ran in, with its image id there and here: the
    bundle's own image loaded (``swap``, --trust-image), or one built here from its recipe. The
    same id holds the image fixed, so what remains is the machine (the CPU, the kernel); another
    id is a finding of its own, said by what differs: the lock, a Debian package, a layer."""
    out = {}
    recipes = doc.get("images", {})
    for r in doc["runs"]:
        spec, twin = specs[r["id"]], twins.get(r["id"])
        parts = split_name(spec.stack)
        if parts is None or not isinstance(twin, RunSpec) or spec.stack in out:
            continue
        there = recipes.get(spec.stack) or r["manifest"].get("image") or {"id": spec.stack_id}
        here = (loaded.record(twin.stack) if spec.stack in swap else images.record(*parts)) or {
            "id": twin.stack_id
        }
        same = spec.stack_id == twin.stack_id
        out[spec.stack] = {
            "stack": spec.stack,
            "there": spec.stack_id,
            "here": twin.stack_id,
            "same": same,
            "difference": None if same else images.recipe_difference(there, here),
            "carried": bool(recipes.get(spec.stack, {}).get("archive")),
            "loaded": twin.stack if spec.stack in swap else None,
        }
    return list(out.values())


def summarise(store, doc, pairs, reasons, imported) -> dict:
    """The one-screen answer: identical, within the budget, or changing conclusions."""
    per_run, datasets = [], sorted({p.a.dataset for p in pairs})
    for sha in datasets:
        ids = {(p.a.run_id, p.b.run_id) for p in pairs if p.a.dataset == sha}
        for d in pair_details(store, sha, FACTOR):
            if (d["a"], d["b"]) in ids:
                per_run.append(d)
    rows = [r for sha in datasets for r in budget(store, sha)["rows"] if r.factor == FACTOR]
    units = {sha: budget(store, sha)["yardstick"] for sha in datasets}
    identical = sum(all(d["comparison"].identical.values()) for d in per_run)
    verdicts = sum(r.verdicts_changed_max or 0 for r in rows)
    worst_su = max(
        (m.flips_max_seed_units or 0 for r in rows for m in r.models.values()), default=0
    )
    flips = max((m.flips_max for r in rows for m in r.models.values()), default=0)
    blind = [d for d in per_run if d["comparison"].digests_only]  # a hash-only bundle's runs
    if not per_run:
        answer = "nothing could be compared here: " + "; ".join(sorted(set(reasons.values())))
    elif identical == len(per_run):
        answer = (
            f"reproduced: all {len(per_run)} runs are bitwise identical at every stage "
            "on this machine"
        )
    elif verdicts:
        answer = (
            f"NOT reproduced where it matters: {verdicts} model-comparison verdict(s) "
            f"changed; {identical} of {len(per_run)} runs identical"
        )
    elif any(not all(d["comparison"].identical.values()) for d in blind):
        # bits differ where only digests are known: how far, and whether it matters, is unknown
        first = sorted(
            {s for d in blind if (s := first_difference(d["comparison"])) is not None},
            key=list(STAGES).index,
        )
        answer = (
            f"differs in bits: {len(per_run) - identical} of {len(per_run)} runs differ "
            f"(first at stage {', '.join(first)}); how far, and whether any prediction or "
            "verdict changed, is unknown without the arrays"
        )
    elif flips and worst_su >= 1:
        answer = (
            f"differs beyond the budget: up to {flips} test predictions flipped "
            f"({worst_su:.2f} seed units); no verdict changed"
        )
    elif flips:
        answer = (
            f"differs within the budget: up to {flips} test predictions flipped "
            + (f"({worst_su:.2f} seed units) " if worst_su else "")
            + f"and no verdict changed; {identical} of {len(per_run)} runs identical"
        )
    else:
        answer = (
            f"differs in bits or magnitudes only: no prediction flipped; {identical} of "
            f"{len(per_run)} runs identical"
        )
    env: dict = {}
    for d in per_run:
        for k, (a, b) in d["comparison"].env_diff.items():
            env.setdefault(k, set()).add(f"{a} -> {b}")
    extra = {"digests_only": BLIND_NOTE} if blind or doc.get("arrays") is False else {}
    return {
        "answer": answer,
        **extra,
        "bundle_host": doc["host"],
        "this_host": host(),
        "imported": imported,
        "pairs": len(per_run),
        "identical": identical,
        "not_compared": [{"run": k, "reason": v} for k, v in reasons.items()],
        "rows": rows,
        "seed_units": units,
        "environment_differences": {k: sorted(v) for k, v in sorted(env.items())},
        "per_run": [_per_run(d["label"], d["comparison"]) for d in per_run],
    }


def _per_run(label: str, c: Comparison) -> dict:
    """One bundle run against its twin here, in the summary's terms (a run known by its stage
    digests alone also says which stages differ, and the first)."""
    out = {
        "label": label,
        "identical_stages": sum(c.identical.values()),
        "stages": len(c.identical),
        # in kit's model order, as the budget's rows list them (not the comparison's)
        "flips": {m: c.models[m].flips for m in ALL_MODELS if m in c.models},
        "emb_rel": c.svd_rand.rel_fro if c.svd_rand else None,
    }
    if c.digests_only:
        out.update(
            digests_only=True,
            first_difference=first_difference(c),
            differing=[s for s, same in c.identical.items() if not same],
        )
    return out


def keep_pipeline_files(doc: dict, labs: set, files) -> None:
    """Check that each of ``files`` (`kit compare --pipeline`) is a file the bundle's runs were
    made with (``labs``: their pipelines' hashes), and that each of several pipelines' files
    is given or here, then keep each by its hash. KitError, one line, before anything is
    written, naming the bundle's pipelines."""
    named = ", ".join(f"{_name(doc, s)} ({s[:12]})" for s in sorted(labs))
    if files and not labs:
        raise KitError(
            "the bundle holds no pipeline file's runs (they are kit's own): compare "
            "it without --pipeline"
        )
    for f in files:
        sha = file_sha256(f)
        if sha not in labs:
            raise KitError(
                f"{f} differs from the file the bundle's runs were made with: it hashes "
                f"to {sha[:12]}, the bundle's "
                + (
                    f"pipeline is {named}"
                    if len(labs) == 1
                    else f"runs name {len(labs)} pipelines: {named}"
                )
                + " (an edited file is another pipeline); nothing was written"
            )
    given = {file_sha256(f) for f in files}
    absent = sorted(s for s in labs - given if not present(s))
    if len(labs) > 1 and absent:  # one pipeline's absence is pipeline_data's line
        raise KitError(
            f"the bundle's runs name {len(labs)} pipelines: {named}; the file of "
            + ", ".join(f"{_name(doc, s)} ({s[:12]})" for s in absent)
            + " is not here: give --pipeline FILE.py once for each; nothing was written"
        )
    for f in files:
        add_pipeline(f)


def _name(doc: dict, sha: str) -> str:
    hint = doc.get("datasets", {}).get(sha, {})
    return (hint.get("pipeline") if isinstance(hint, dict) else None) or "file"


def pipeline_data(doc: dict, sha: str) -> LabData:
    """What the runner needs to rerun pipeline ``sha`` here: its file, kept under its hash.
    KitError, one line, when this KIT_HOME does not have that exact file."""
    name = _name(doc, sha)
    try:
        info = pipeline_info(sha)
    except KitError:
        info = None
    if info is None or verify(sha) is not None:
        raise KitError(
            f"the bundle's runs are of pipeline {name} ({sha[:12]}), whose "
            f"file is not here: `kit compare BUNDLE --pipeline FILE.py` gives it (the "
            f"same bytes: an edited file is another pipeline)"
        )
    return LabData(info)


def summarise_outputs(store, doc: dict, pairs: list, reasons: dict, imported: dict) -> dict:
    """The answer for a pipeline file's bundle, each pair compared output by output by kind
    (as kit.analysis.by_kind compares a pair): identical outputs, or which outputs differ
    and by how much; a probabilities output's flips are changed predictions."""
    per_run, flips, probabilities = [], 0, False
    differ: dict[str, int] = {}  # {output: pairs in which it differs}
    for p in pairs:
        kinds = pipeline_info(p.a.pipeline).get("kinds", {})
        probabilities = probabilities or "probabilities" in kinds.values()
        outs = compare_outputs(store, p.a.run_id, p.b.run_id, kinds)
        moved = {n: d for n, d in outs.items() if not d["identical"]}
        for n in moved:
            differ[n] = differ.get(n, 0) + 1
        flips = max([flips] + [d.get("flips", 0) for d in moved.values()])
        per_run.append(
            {
                "label": p.label,
                "a": p.a.run_id,
                "b": p.b.run_id,
                "outputs": outs,
                "identical": not moved,
            }
        )
    same = sum(r["identical"] for r in per_run)
    if not per_run:
        answer = "nothing could be compared here: " + "; ".join(sorted(set(reasons.values())))
    elif same == len(per_run):
        answer = f"reproduced: all {len(per_run)} runs are bitwise identical at every output here"
    else:
        answer = (
            f"differs: {', '.join(f'{n} in {k} of {len(per_run)} runs' for n, k in differ.items())}"
            + (
                f"; up to {flips} predictions flipped"
                if flips
                else "; no prediction flipped"
                if probabilities
                else ""
            )
        )  # only what was measured
    return {
        "answer": answer,
        "pipeline": True,
        "bundle_host": doc["host"],
        "this_host": host(),
        "imported": imported,
        "pairs": len(per_run),
        "identical": same,
        "not_compared": [{"run": k, "reason": v} for k, v in reasons.items()],
        "per_run": per_run,
    }
