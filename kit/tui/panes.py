"""The six steps of the TUI, one pane each: setup, plan, run, budget, verdicts, advice.

Every number shown comes from the same library calls the CLI makes (kit.audit, kit.budget,
kit.verdicts, kit.advice, kit.report); the panes only lay results out.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (Button, DataTable, Input, Label, Log, Markdown, ProgressBar,
                             RadioButton, RadioSet, SelectionList, Static)
from textual.widgets.selection_list import Selection
from textual.worker import get_current_worker
from textual_plotext import PlotextPlot

from .. import audit as au
from .. import factors
from ..compare import ALL_MODELS
from ..errors import KitError
from ..tables import fmt, libraries


def _numbers(text: str, parse=None) -> tuple:
    """A plan field's numbers, parsed as the CLI parses its flags (empty: the default)."""
    from ..plan import parse_ints

    text = text.strip()
    return (parse or parse_ints)(text) if text else ()


# -- 1. setup ---------------------------------------------------------------------------------
class SetupPane(Vertical):
    """The dataset and the stacks: what is here, fetch, verify, build."""

    def compose(self) -> ComposeResult:
        yield Static(id="dataset-info")
        with Horizontal(classes="buttons"):
            yield Button("Fetch Swiss-Prot", id="fetch")
            yield Button("Verify", id="verify")
            yield Button("Build stack", id="build")
        yield ProgressBar(id="setup-progress", show_eta=False)
        yield DataTable(id="stacks", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        t = self.query_one("#stacks", DataTable)
        t.add_columns("stack", "status", "python", "numpy", "sklearn/torch", "why not here")
        self.query_one("#setup-progress").display = False
        self.refresh_all()

    def refresh_all(self) -> None:
        from ..data import load_dataset
        from ..stacks import listing, recheck

        recheck()  # a stack may have been damaged (or repaired) since the app started
        app = self.app
        try:
            s = load_dataset(app.dataset_name, app.n).summary()
            tag = "  [b yellow]SYNTHETIC[/]" if s["synthetic"] else ""
            rel = f"UniProt release {s['release']} ({s.get('release_date')})" if s.get("release") else s["source"]
            text = (f"[b]Dataset[/] {s['name']}{tag}  ({rel})\n"
                    f"{s['rows']} proteins: {s['train']} train / {s['test']} test; "
                    f"{s['positives']} positive ({s['label_rate']:.1%}); sha256 {s['sha256'][:16]}")
        except KitError as e:
            text = f"[b]Dataset[/] {app.dataset_name}: [red]{e}[/]"
        self.query_one("#dataset-info", Static).update(text)
        t = self.query_one("#stacks", DataTable)
        t.clear()
        for r in listing(app.platform):
            a = r["attributes"]
            external = r["kind"] == "external"
            t.add_row(r["name"] + (" *" if r["reference"] else ""),
                      r["status"] + (" (external)" if external else ""), a["python"],
                      a.get("numpy") or "-", libraries(a),
                      r["reason"] or (r["venv"] if external else ""), key=r["name"])

    @on(Button.Pressed, "#fetch")
    def fetch(self) -> None:
        self._job("fetch")

    @on(Button.Pressed, "#verify")
    def verify(self) -> None:
        self._job("verify")

    @on(Button.Pressed, "#build")
    def build(self) -> None:
        t = self.query_one("#stacks", DataTable)
        if t.row_count:
            self._job("build", t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value)

    @work(thread=True, exclusive=True, group="setup")
    def _job(self, what: str, stack: str | None = None) -> None:
        bar = self.query_one("#setup-progress", ProgressBar)
        self.app.call_from_thread(setattr, bar, "display", True)
        self.app.call_from_thread(bar.update, total=None)
        try:
            if what == "fetch":
                from ..data import uniprot

                def progress(taxid, name, done, total):
                    self.app.call_from_thread(self.app.notify, f"{name}: {done}/{total}", timeout=1)

                ds = uniprot.fetch_dataset(on_progress=progress)
                self.app.call_from_thread(setattr, self.app, "dataset_name", "swissprot")
                msg = f"fetched {ds.n} proteins, release {ds.meta.get('release')}"
            elif what == "verify":
                from ..data import load_dataset, uniprot

                if self.app.dataset_name == uniprot.NAME:
                    uniprot.verify()
                else:
                    load_dataset(self.app.dataset_name, self.app.n)
                msg = f"{self.app.dataset_name}: verified"
            else:
                from ..build import build_named

                built = build_named(stack, self.app.platform,
                              log=lambda m: self.app.call_from_thread(self.app.notify, m, timeout=2))
                msg = f"{stack}: {'built' if built else 'already built'}"
            self.app.call_from_thread(self.app.notify, msg)
        except KitError as e:
            self.app.call_from_thread(self.app.notify, str(e), severity="error", timeout=8)
        finally:
            self.app.call_from_thread(setattr, bar, "display", False)
            self.app.call_from_thread(self.refresh_all)


# -- 2. plan ----------------------------------------------------------------------------------
class PlanPane(Horizontal):
    """Choose factors and settings; see how many runs the plan needs and how long."""

    def compose(self) -> ComposeResult:
        from ..plan import availability, devices
        from ..stacks import listing

        rows = availability(self.app.platform)
        self._about = {r["factor"]: r["description"] if r["available"] else f"cannot run here: {r['reason']}"
                       for r in rows}
        with Vertical(id="factor-column"):
            yield SelectionList[str](
                *[Selection(f"{r['factor']:<20} " + (r["description"] if r["available"]
                                                     else f"[dim]{r['reason']}[/]"),
                            r["factor"], r["factor"] in ("repeat", "seed"), disabled=not r["available"])
                  for r in rows], id="factors")
            yield Static(id="plan-summary")
            yield Static(id="factor-help")
        with VerticalScroll(id="settings"):
            yield Label("dataset (synthetic, swissprot, or imported)")
            yield Input(self.app.dataset_name, id="dataset")
            yield Label("proteins (--n; empty: all)")
            yield Input(str(self.app.n or ""), id="n")
            yield Label("threads (e.g. 1,2)")
            yield Input(self.app.initial["threads"], placeholder="1..cores", id="threads")
            yield Label("seeds (e.g. 0-9)")
            yield Input(self.app.initial["seeds"], placeholder="factor default", id="seeds")
            yield Label("power iterations (svd-iters)")
            yield Input("5,10,20,50", id="iters")
            yield Label("PyTorch device")
            devs = devices(self.app.platform)
            with RadioSet(id="device"):
                for d in ("cpu", "mps", "cuda"):
                    yield RadioButton(d.upper() + ("" if devs[d] is None else f" ({devs[d]})"),
                                      value=d == "cpu", disabled=devs[d] is not None, id=f"dev-{d}")
            # stacks added with `kit stacks add` that hold torch (a cluster's or GPU image's)
            self._torch_stacks = [r["name"] for r in listing(self.app.platform)
                                  if r["kind"] == "external" and "torch" in r["uses"]]
            if self._torch_stacks:
                yield Label("PyTorch stack")
                with RadioSet(id="torch-stack"):
                    yield RadioButton("this platform's, from the catalogue", value=True, id="ts-0")
                    for i, name in enumerate(self._torch_stacks, 1):
                        yield RadioButton(f"{name} (external)", id=f"ts-{i}")
            yield Button("Run this plan", id="run-plan", variant="primary")

    def on_mount(self) -> None:
        self.update_summary()

    @on(SelectionList.SelectionHighlighted)
    def describe(self, event: SelectionList.SelectionHighlighted) -> None:
        # the list truncates at 80 columns: the highlighted factor is spelled out here
        factor = event.selection.value
        self.query_one("#factor-help", Static).update(f"[b]{factor}[/]: {self._about[factor]}")

    def selected_device(self) -> str | None:
        pressed = self.query_one("#device", RadioSet).pressed_button
        dev = pressed.id.removeprefix("dev-") if pressed else "cpu"
        return None if dev == "cpu" else dev

    def selected_torch_stack(self) -> str | None:
        if not self._torch_stacks:
            return None
        pressed = self.query_one("#torch-stack", RadioSet).pressed_button
        i = int(pressed.id.removeprefix("ts-")) if pressed else 0
        return self._torch_stacks[i - 1] if i else None

    def audit(self) -> au.Audit:
        from ..plan import SVD_ITERS, PlanOptions, parse_ints, parse_threads

        factors = self.query_one("#factors", SelectionList).selected
        n_text = self.query_one("#n", Input).value.strip()
        if n_text and not (n_text.isdigit() and int(n_text) > 0):
            raise KitError(f"proteins: expected a positive whole number, not {n_text!r}")
        n = int(n_text) if n_text else None
        try:
            threads = _numbers(self.query_one("#threads", Input).value, parse_threads)
            seeds = _numbers(self.query_one("#seeds", Input).value)
            iters = _numbers(self.query_one("#iters", Input).value,
                             lambda t: parse_ints(t, minimum=1))
        except ValueError as e:  # the CLI's messages are the ones a user needs here
            raise KitError(str(e)) from None
        opts = PlanOptions(threads=threads, seeds=seeds, svd_iters=iters or SVD_ITERS,
                           device=self.selected_device(), torch_stack=self.selected_torch_stack())
        self.app.dataset_name = self.query_one("#dataset", Input).value.strip() or "synthetic"
        self.app.n = n
        return au.prepare(factors, self.app.dataset_name, n, opts, plat=self.app.platform)

    @on(SelectionList.SelectedChanged)
    @on(Input.Submitted)
    @on(RadioSet.Changed)
    def update_summary(self) -> None:
        from ..stacks import built_stack, definitions
        from ..store import Store

        out = self.query_one("#plan-summary", Static)
        try:
            a = self.audit()
            defs = definitions()
            missing = [s for s in a.stacks if s in defs and built_stack(defs[s], a.platform) is None]
            if missing:
                out.update(f"[b]{len(a.factors)} factor(s)[/]; stacks built when the plan runs: "
                           + ", ".join(missing))
                return
            au.plan_runs(a)
            store = Store()
            todo = au.todo(a, store)
            est = au.estimate_seconds(a, store)
            out.update(f"[b]{len(a.pairs)} pairs, {len(a.specs)} runs[/]: {len(a.specs) - len(todo)} "
                       f"stored, {len(todo)} to run"
                       + (f", about {est / 60:.1f} min from past timings" if est is not None else
                          ", no past timings for an estimate"))
        except KitError as e:
            out.update(f"[red]{e}[/]")

    @on(Button.Pressed, "#run-plan")
    def run_plan(self) -> None:
        self.app.action_run_plan()


# -- 3. run -----------------------------------------------------------------------------------
class RunPane(Vertical):
    """Runs the plan in a worker thread: overall progress, the current run, a live log."""

    def compose(self) -> ComposeResult:
        yield Static("Nothing running. Choose a plan (2) and press r.", id="run-status")
        yield ProgressBar(total=1, id="run-progress", show_eta=True)
        with Horizontal(classes="buttons"):
            yield Button("Cancel", id="cancel", variant="error")
        yield Log(id="run-log", highlight=False)

    def start(self, audit: au.Audit) -> None:
        self.query_one("#run-log", Log).clear()
        self._run(audit)

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.app.workers.cancel_group(self, "run")
        self.query_one("#run-log", Log).write_line("cancel: stopping after the current run")

    @work(thread=True, exclusive=True, group="run")
    def _run(self, a: au.Audit) -> None:
        from ..store import Store

        worker = get_current_worker()
        call = self.app.call_from_thread
        log = self.query_one("#run-log", Log)
        status = self.query_one("#run-status", Static)
        bar = self.query_one("#run-progress", ProgressBar)
        try:
            call(status.update, f"building stacks for {', '.join(a.factors)}")
            au.build_stacks(a, log=lambda n, m: call(log.write_line, f"[{n}] {m}"))
            au.plan_runs(a)
            store = Store()
            todo = au.todo(a, store)
            call(bar.update, total=max(len(todo), 1), progress=0)
            call(log.write_line, f"{len(a.pairs)} pairs, {len(a.specs)} runs: "
                                 f"{len(a.specs) - len(todo)} stored, {len(todo)} to run")
            done = []

            def on_done(spec):
                done.append(spec)
                call(bar.advance, 1)
                call(log.write_line, f"run {len(done)}/{len(todo)} done: {spec.stack} "
                                     f"{spec.kind} threads={spec.threads} {spec.run_id[:12]}")
                call(status.update, f"running {a.dataset.name}: {len(done)} of {len(todo)} done")

            call(status.update, f"running {a.dataset.name}: 0 of {len(todo)} done")
            au.execute(a, store, on_done=on_done, should_stop=lambda: worker.is_cancelled)
            if worker.is_cancelled:
                call(status.update, f"cancelled after {len(done)} run(s); they are stored, run again to resume")
            else:
                call(status.update, f"finished: {len(done)} run(s). The budget (4) is ready.")
                call(self.app.notify, "plan finished: see the budget (4)")
        except KitError as e:
            call(status.update, f"[red]{e}[/]")
            call(log.write_line, f"error: {e}")


# -- 4. budget --------------------------------------------------------------------------------
class BudgetPane(Vertical):
    """The budget table (raw or seed units), a factor's pairs, and flips per factor."""

    def compose(self) -> ComposeResult:
        yield Static(id="budget-head")
        yield DataTable(id="budget-table", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="pairs", cursor_type="row")
        yield PlotextPlot(id="budget-plot")
        yield PlotextPlot(id="amplify-plot")

    def on_mount(self) -> None:
        self.query_one("#pairs").display = False
        self.query_one("#budget-plot").display = False
        self.query_one("#amplify-plot").display = False

    def show(self) -> None:
        from ..budget import budget
        from ..store import Store

        ds = self.app.dataset_hash()
        b = budget(Store(), ds) if ds else {"rows": [], "dataset": {}, "yardstick": None,
                                            "note": "no dataset yet"}
        self.app.last_budget = b
        units = self.app.seed_units
        d = b["dataset"]
        head = (f"[b]{d.get('name') or self.app.dataset_name}[/]" + ("  [b yellow]SYNTHETIC[/]" if d.get("synthetic") else "")
                + f"   view: {'seed units' if units else 'raw flips'} (u)   plots (p, a)   pairs: Enter")
        if b.get("note"):
            head += f"\n[dim]{b['note']}[/]"
        self.query_one("#budget-head", Static).update(head)
        t = self.query_one("#budget-table", DataTable)
        t.clear(columns=True)
        models = [m for m in ALL_MODELS if any(m in r["models"] for r in b["rows"])]
        t.add_columns("factor", "pairs", "identical", "emb diff", *models, "verdicts")
        for r in b["rows"]:
            cells = []
            for m in models:
                x = r["models"].get(m)
                if x is None:
                    cells.append("-")
                elif units:
                    cells.append(fmt(x["flips_median_seed_units"]))
                else:
                    cells.append(f"{fmt(x['flips_median'], 4)}/{x['flips_max']}")
            emb = r["emb_rel_seed_units"] if units else r["emb_rel_max"]
            name = r["factor"] + (f"={r['level']}" if r["level"] else "")
            t.add_row(name, str(r["pairs"]), f"{r['all_identical']}/{r['pairs']}", fmt(emb), *cells,
                      "-" if r["verdicts_changed_max"] is None else f"{r['verdicts_changed_max']}/12",
                      key=name)
        self._plot(b)

    def _plot(self, b: dict) -> None:
        plot = self.query_one("#budget-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        rows = [r for r in b["rows"] if not factors.is_yardstick(r["factor"])]
        vals = []
        for r in rows:
            su = [x["flips_median_seed_units"] for x in r["models"].values()
                  if x["flips_median_seed_units"] is not None]
            vals.append(max(su) if su else 0.0)
        if rows:
            plt.bar([r["factor"] + (f"={r['level']}" if r["level"] else "") for r in rows], vals,
                    orientation="h", width=0.3)
            plt.xlim(0, max([1.0] + vals))  # 1 = what a seed flips: the yardstick stays in view
        plt.title("median flips in seed units (largest model)")
        plot.refresh()
        self._amplify(b)

    def _amplify(self, b: dict) -> None:
        import math

        from ..amplify import curves

        plot = self.query_one("#amplify-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        for m, c in curves(b["rows"]).items():
            plt.plot([math.log10(p["eps"]) for p in c], [p["flips_median"] for p in c], label=m)
        plt.title("amplification: median flips against log10(eps)")
        plot.refresh()

    @on(DataTable.RowSelected, "#budget-table")
    def drill(self, event: DataTable.RowSelected) -> None:
        from ..budget import pair_details
        from ..store import Store

        name = event.row_key.value
        factor = name.split("=")[0]
        level = name.split("=")[1] if "=" in name else ""
        rows = [p for p in pair_details(Store(), self.app.dataset_hash(), factor) if p["level"] == level]
        t = self.query_one("#pairs", DataTable)
        t.clear(columns=True)
        t.add_columns("pair", "identical", "emb diff", "flips", "confounds")
        for p in rows:
            c = p["comparison"]
            flips = " ".join(f"{m}:{v['flips']}" for m, v in c["models"].items())
            t.add_row(p["label"], f"{sum(c['identical'].values())}/{len(c['identical'])}",
                      fmt(c.get("svd_rand", {}).get("rel_fro")), flips,
                      "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in p["confounds"].items()) or "-")
        t.display = True
        t.focus()


# -- 5. verdicts ------------------------------------------------------------------------------
class VerdictsPane(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="verdicts-head")
        yield DataTable(id="verdicts-table", zebra_stripes=True)

    def show(self) -> None:
        from ..store import Store
        from ..verdicts import stability_report

        ds = self.app.dataset_hash()
        rep = stability_report(Store(), ds) if ds else {}
        names = list(rep)
        if not names:
            self.query_one("#verdicts-head", Static).update("no runs in pairs yet: run a plan first")
            return
        current = self.app.verdict_set if self.app.verdict_set in names else names[0]
        self.app.verdict_set = current
        self.query_one("#verdicts-head", Static).update(
            f"run set [b]{current}[/] (s: next of {', '.join(names)}); paired bootstrap, 2,000 "
            "resamples, 95% interval")
        t = self.query_one("#verdicts-table", DataTable)
        t.clear(columns=True)
        t.add_columns("verdict", "runs", "b>a", "b<a", "n.s.", "stable", "range", "per run")
        for v in rep[current]:
            c = v["counts"]
            diffs = [r["diff"] for r in v["per_run"]]
            t.add_row(v["verdict"], str(v["runs"]), str(c[">"]), str(c["<"]), str(c["="]),
                      "yes" if v["stable"] else "NO", f"{min(diffs):+.4f}..{max(diffs):+.4f}",
                      "".join(r["verdict"] for r in v["per_run"]))


# -- 6. advice --------------------------------------------------------------------------------
class AdvicePane(Vertical):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(id="advice-md")
        with Horizontal(classes="buttons"):
            yield Input("kit-report", placeholder="folder for report.md and report.html",
                        id="report-dir")
            yield Button("Export report", id="export")

    def show(self) -> None:
        from ..advice import advise, not_measured_lines
        from ..store import Store

        ds = self.app.dataset_hash()
        if not ds:
            self.query_one("#advice-md", Markdown).update("No runs yet: run a plan first.")
            return
        a = advise(Store(), ds, plat=self.app.platform)
        lines = ["## What to pin first", "", "| # | factor | reached | seed units | pairs |",
                 "|---|---|---|---|---|"]
        lines += [f"| {i + 1} | {r['factor']} | {r['level']} | {fmt(r['reach_seed_units'])} | {r['pairs']} |"
                  for i, r in enumerate(a["ranking"])]
        lines += ["", "## Advice", ""] + [f"- {r['text']}" for r in a["recommendations"]]
        lines += [""] + [f"- {line}" for line in not_measured_lines(a)]
        self.query_one("#advice-md", Markdown).update("\n".join(lines))

    @on(Button.Pressed, "#export")
    def export(self) -> None:
        from ..report import write
        from ..store import Store

        ds = self.app.dataset_hash()
        if not ds:
            self.app.notify("nothing to report yet", severity="warning")
            return
        out = write(Store(), ds, self.query_one("#report-dir", Input).value)
        self.app.notify(f"wrote {out['html']}")


# -- 7. compare -------------------------------------------------------------------------------
class ComparePane(Vertical):
    """A lab's bundle against this machine: the same answer as `kit compare`."""

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Input(placeholder="path to a bundle from `kit export` (e.g. lab.kit)", id="bundle-path")
            yield Button("Compare", id="compare", variant="primary")
        yield Static("Rerun a lab's runs here and see whether, and how far, they differ.",
                     id="compare-answer")
        yield DataTable(id="compare-table", zebra_stripes=True)
        yield Log(id="compare-env", highlight=False)

    @on(Button.Pressed, "#compare")
    @on(Input.Submitted, "#bundle-path")
    def start(self) -> None:
        path = self.query_one("#bundle-path", Input).value.strip()
        if not path:
            self.app.notify("give the bundle's path first", severity="warning")
            return
        self.query_one("#compare-answer", Static).update(f"comparing {path} ...")
        self._compare(path)

    @work(thread=True, exclusive=True, group="compare")
    def _compare(self, path: str) -> None:
        from ..onboarding import compare_bundle
        from ..store import Store

        call = self.app.call_from_thread
        try:
            rep = compare_bundle(Store(), path, plat=self.app.platform,
                                 log=lambda m: call(self.app.notify, m, timeout=2))
        except KitError as e:
            call(self.query_one("#compare-answer", Static).update, f"[red]{e}[/]")
            return
        call(self.show, rep)

    def show(self, rep: dict) -> None:
        self.query_one("#compare-answer", Static).update(
            f"[b]{rep['bundle_host']['name']} vs {rep['this_host']['name']}:[/] {rep['answer']}")
        t = self.query_one("#compare-table", DataTable)
        t.clear(columns=True)
        t.add_columns("run (theirs vs here)", "identical", "emb diff", "flips")
        for r in rep["per_run"]:
            t.add_row(r["label"], f"{r['identical_stages']}/{r['stages']}", fmt(r["emb_rel"]),
                      " ".join(f"{m}:{v}" for m, v in r["flips"].items()))
        log = self.query_one("#compare-env", Log)
        log.clear()
        log.write_line("What differs between the two machines (measured):")
        for k, v in rep["environment_differences"].items():
            log.write_line(f"  {k}: {'; '.join(v)}")
        for x in rep["not_compared"]:
            log.write_line(f"not compared: {x['run'][:12]}: {x['reason']}")
