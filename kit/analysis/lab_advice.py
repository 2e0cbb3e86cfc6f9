"""What to fix first in a lab's pipeline, from its measured budget: the loose generator, then
each named seed by what it reaches, with the lesson's rule on naming seeds separately."""

from __future__ import annotations

# the lesson on seeds: its rule, said beside every seed that reaches an output
RULE = ("name the seeds separately and record each with the run, so a reproduction can vary one "
        "while holding the others")
# said beside a seed the file already names that reaches outputs: what to do with it now
HOLD = ("keep it recorded with every run and fixed while comparing anything else; report what "
        "it reaches across several of its values, not one")


def lab_advise(b: dict, v: dict | None = None) -> dict:
    """Ranked steps from lab_budget ``b`` (and lab_verdicts ``v``): each {"step", ...}.

    step "loose": outputs that differ between runs with the same named seeds (first: until it is
    seeded every other comparison is a single draw); "null": no repeat pair stored yet;
    "shape": an output whose shape a factor changes; "seed": a named seed and the outputs it
    reaches (those a loose generator also moves left out: the seed's own effect cannot be told
    from it there), most outputs first, with the verdicts it changes; "inert": a seed that
    reaches no output; "one-at-a-time": only `seed` (all at once) is stored."""
    steps = []
    factors = b["factors"]
    if b["loose"]:
        steps.append({"step": "loose", "outputs": list(b["loose"]), "line": b["loose_line"]})
    elif "repeat" not in factors:
        steps.append({"step": "null", "outputs": []})
    for s in b.get("shapes", []):
        steps.append({"step": "shape", **s})
    changes = _verdict_changes(v)
    seeds = []
    for factor, row in factors.items():
        if not factor.startswith("seed:"):
            continue
        reached = [n for n, o in row["outputs"].items() if o["changed"] and n not in b["loose"]]
        if reached:
            seeds.append({"step": "seed", "seed": factor.split(":", 1)[1], "factor": factor,
                          "outputs": reached, "pairs": row["pairs"],
                          "verdicts": changes.get(factor, []), "rule": HOLD})
    seeds.sort(key=lambda s: (-len(s["verdicts"]), -len(s["outputs"]), s["seed"]))
    steps += seeds
    steps += [{"step": "inert", "seed": name, "outputs": []} for name in b["inert"]]
    if "seed" in factors and not any(f.startswith("seed:") for f in factors):
        steps.append({"step": "one-at-a-time", "outputs": [], "rule": RULE,
                      "verdicts": changes.get("seed", []), "seeds": list(b.get("seeds", []))})
    return {"pipeline": b["pipeline"], "name": b["name"], "steps": steps}


def _verdict_changes(v: dict | None) -> dict:
    """{factor: the verdict keys that change in one of its pairs}."""
    if not v:
        return {}
    return {f: [k for k, row in r["verdicts"].items() if row["changed"]]
            for f, r in v["factors"].items()}
