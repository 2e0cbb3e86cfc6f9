"""A release scan's time against the time of the stages it reruns, in the same run.

    .venv/bin/python bench/release_scan.py [--n 6000] [--releases 7] [--group models]

In a fresh KIT_HOME (a temporary one unless KIT_HOME is set): builds the np1-sk152 stack, makes
one pipeline run ``a`` in it on N synthetic proteins, then scans the first RELEASES releases of
scikit-learn from 1.5.2 (numpy 1.26.4, Python 3.12): each probe stack is locked and built (timed
apart: uv's cache makes it seconds), then GROUP is rerun in each on a's arrays, one run at a
time. Reports the scan's wall time (probes built, runs to make) and its ratio to the summed
wall time of the stages those runs rerun (their manifests' timings, without the import). Target:
ratio <= ~2 at 6,000 proteins and 7 releases (issue 28).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KIT_HOME", tempfile.mkdtemp(prefix="kit-bench-scan-"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kit.analysis.releases import Release, scan_specs  # noqa: E402
from kit.app.releases import Scan, run_scans  # noqa: E402
from kit.data.dataset import make_dataset  # noqa: E402
from kit.data.synthetic import generate  # noqa: E402
from kit.envs.catalogue import definitions  # noqa: E402
from kit.envs.kinds import stack_kind  # noqa: E402
from kit.envs.platforms import detect  # noqa: E402
from kit.envs.probes import prepare  # noqa: E402
from kit.envs.releases import versions  # noqa: E402
from kit.runs.executing.runner import run_all  # noqa: E402
from kit.runs.planning.options import PlanOptions  # noqa: E402
from kit.runs.planning.plan import plan  # noqa: E402
from kit.runs.store import Store  # noqa: E402
from kit.runs.store.records import StoredPair  # noqa: E402

BASE = "np1-sk152"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--releases", type=int, default=7)
    ap.add_argument("--group", default="models", choices=("tfidf", "svd", "models"))
    args = ap.parse_args()
    plat, store = detect(), Store()
    print(f"KIT_HOME={os.environ['KIT_HOME']}")
    t = time.perf_counter()
    stack_kind(BASE).build(plat)
    ds = make_dataset(f"synthetic{args.n}", "synthetic", *generate(args.n))
    a = plan("repeat", ds.sha256, PlanOptions(threads=(1,)))[0].a
    a = a.with_(stack=BASE, stack_id=stack_kind(BASE).runnable().identity)
    run_all([a], ds, store, jobs=1)
    print(f"stack {BASE} and run a ({args.n} proteins): {time.perf_counter() - t:.1f} s")

    listed = [v for v in versions("scikit-learn") if v.count(".") == 2]
    chosen = [v for v in listed if tuple(map(int, v.split("."))) >= (1, 5, 2)][: args.releases]
    t = time.perf_counter()
    rel = [
        Release(
            v,
            *((lambda n, w: (n, None, w))(*prepare(definitions()[BASE], "scikit-learn", v, plat))),
        )
        for v in chosen
    ]
    for r in rel:
        if r.stack:
            stack_kind(r.stack).build(plat)
    print(
        f"{len(rel)} probe stacks locked and built: {time.perf_counter() - t:.1f} s "
        f"({', '.join(r.version + ('' if r.stack else ' (could not build)') for r in rel)})"
    )

    scan = Scan(
        StoredPair("sklearn", "", a.run_id, a.run_id, "bench"), "scikit-learn", rel, (args.group,)
    )
    t = time.perf_counter()
    left = run_scans([scan], store, lambda: ds, jobs=1)
    wall = time.perf_counter() - t
    specs = scan_specs(a, scan.releases, scan.groups)
    stages = sum(
        v["wall_s"]
        for s in specs
        for k, v in store.run(s.run_id).manifest["timings"].items()
        if k != "import"
    )
    print(
        f"scan: {len(specs)} feed runs in {wall:.1f} s; the stages they rerun: {stages:.1f} s; "
        f"ratio {wall / stages:.2f} (target <= ~2){'; not run: ' + str(left) if left else ''}"
    )


if __name__ == "__main__":
    main()
