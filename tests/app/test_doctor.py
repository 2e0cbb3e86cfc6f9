"""kit.app.doctor: surprises in a measured fingerprint become one-line problems."""

import pytest

from kit.envs.probe import problems


def fp(api="openblas", arch="Haswell", version="0.3.34"):
    return {
        "threadpools": [
            {
                "user_api": "blas",
                "owner": "numpy",
                "internal_api": api,
                "version": version,
                "architecture": arch,
            }
        ]
    }


def test_a_healthy_stack_has_no_problems():
    assert problems(fp(), "OpenBLAS", frozenset({"avx2"})) == []


def test_wrong_blas_and_generic_kernel_are_flagged():
    wrong = problems(fp(), "MKL")[0]
    assert wrong.code == "blas-mismatch"
    assert "expected MKL but threadpoolctl sees openblas" in wrong.message
    generic = problems(fp(arch="Prescott", version="0.3.23.dev"), "OpenBLAS", frozenset({"avx2"}))
    assert len(generic) == 1 and generic[0].code == "generic-kernel"
    assert "generic 'Prescott' kernel" in generic[0].message
    none = problems({"threadpools": None}, None)[0]
    assert none.code == "no-threadpoolctl"
    assert none.message.startswith("threadpoolctl is not installed")


@pytest.mark.slow
def test_a_busy_machine_is_not_blamed_on_the_stack():
    """Every core kept busy by other processes: the n-thread probe cannot show n threads. The
    doctor measures the load and calls the result inconclusive instead of "not honoured"."""
    import subprocess
    import sys

    from kit.core.processes import cores as count
    from kit.envs.catalogue import HOST
    from kit.envs.kinds import stack_kind
    from kit.envs.probe import busy_cores, thread_probe

    cores = count()
    if cores < 2:
        return
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        assert busy_cores(0.5) >= cores - 0.5
        probe = thread_probe(stack_kind(HOST).runnable().command, cores, attempts=1)
    finally:
        for h in hogs:
            h.kill()
    assert probe["honoured"] in (True, None)  # never False while the machine was busy
    assert probe["busy_cores"] >= 0.5


def test_threads_are_honoured_only_when_n_threads_show_most_of_n_cores():
    """0.38 CPU per wall second at 2 threads against 0.12 at 1 was called "yes": a one-thread
    product that keeps no core busy says nothing, and n threads must show at least half of the
    ideal n-fold use."""
    from kit.envs.probe import judge

    assert judge(0.12, 0.38, 2, busy=0.0)[0] is None
    assert "kept no core busy" in judge(0.12, 0.38, 2, busy=0.0)[1]
    assert judge(0.98, 1.9, 2, busy=0.0) == (True, None)
    assert judge(0.98, 1.2, 2, busy=0.0) == (False, None)  # 1.22x of the 2x ideal
    assert judge(0.98, 1.2, 2, busy=1.5)[0] is None  # busy: not the stack's fault
    assert judge(0.98, 2.5, 4, busy=0.0) == (True, None)  # >= 1 + 0.5 x 3 = 2.5x
    assert judge(0.3, 0.3, 1, busy=0.0) == (True, None)  # one core: nothing to judge


def test_what_was_not_judged_is_said_and_not_called_fine():
    from kit.views.health import doctor_text

    probe = {
        "threads": 2,
        "cpu_per_wall_1": 0.12,
        "cpu_per_wall_n": 0.38,
        "honoured": None,
        "not_judged": "CPU/wall at 1 thread only 0.12: the probe kept no core busy",
    }
    rep = {
        "null_experiment": {"dataset": "d", "ok": True, "identical": 1, "pairs": 1},
        "stacks": [{"name": "host", "threads": probe, "blas": [], "blas_build": None}],
        "problems": [],
    }
    text = " ".join(doctor_text(rep).split())
    assert "not judged" in text and "Thread control was not judged for host" in text
    assert "kept no core busy" in text
    assert text.endswith("No problems found in what was judged.")


@pytest.mark.slow
def test_the_doctor_stores_no_dataset_of_the_users(kit_home):
    """Its null experiment's synthetic set was kept in the user's datasets folder, and then
    appeared in every "stored:" list."""
    from kit.app.doctor import machine_doctor
    from kit.data.dataset import stored_datasets
    from kit.envs.platforms import detect

    before = stored_datasets()
    rep = machine_doctor(detect(), 100)
    assert rep["null_experiment"]["pairs"] >= 1 and stored_datasets() == before == []


def test_the_doctors_blas_libraries_read_whole_at_80_columns():
    """Piped, the BLAS column was squeezed to ~12 characters (about 80 lines for 4 stacks);
    now each stack is one row and each of its libraries one whole line under it."""
    from kit.views.fit import fitted
    from kit.views.health import doctor_text

    pools = [
        {
            "user_api": "blas",
            "owner": owner,
            "internal_api": "openblas",
            "version": version,
            "architecture": "SkylakeX",
        }
        for owner, version in (("numpy", "0.3.34.237.2"), ("scipy", "0.3.31.dev"))
    ]
    probe = {"threads": 2, "cpu_per_wall_1": 0.98, "cpu_per_wall_n": 1.9, "honoured": True}
    names = ("host", "np1-sk152", "py39-openblas-sk161", "torch-linux-cpu")
    rep = {
        "null_experiment": {"dataset": "d", "ok": True, "identical": 1, "pairs": 1},
        "stacks": [{"name": n, "threads": probe, "blas": pools, "blas_build": None} for n in names],
        "problems": [],
    }
    with fitted(80):
        lines = doctor_text(rep).splitlines()
    assert max(len(ln) for ln in lines) <= 80
    for n in names:
        at = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [n])
        assert lines[at].split()[1:] == ["0.98", "1.90", "yes"]
        assert lines[at + 1].split() == ["BLAS", "numpy:", "openblas", "0.3.34.237.2", "SkylakeX"]
        assert lines[at + 2].split() == ["scipy:", "openblas", "0.3.31.dev", "SkylakeX"]
    assert len(lines) <= 6 + 3 * len(names)


def test_the_doctors_title_lines_fit_a_narrow_width():
    """`COLUMNS=60 kit doctor | cat` printed its null experiment line at 77 columns (#43):
    its title lines are fitted as its paragraphs are, every word kept."""
    from kit.views.fit import fitted
    from kit.views.health import doctor_text

    probe = {"threads": 2, "cpu_per_wall_1": 0.98, "cpu_per_wall_n": 1.9, "honoured": True}
    rep = {
        "null_experiment": {"dataset": "synthetic-200", "ok": True, "identical": 1, "pairs": 1},
        "warm_workers": {"ok": True, "identical": 1, "pairs": 1},
        "stacks": [{"name": "host", "threads": probe, "blas": [], "blas_build": None}],
        "problems": [],
    }
    for w in (60, 40):
        with fitted(w):
            text = doctor_text(rep)
        assert max(len(ln) for ln in text.splitlines()) <= w, text
        said = " ".join(text.split())
        assert (
            "null experiment (synthetic-200): ok - 1 of 1 repeated pairs bitwise identical "
            "warm workers: ok - 1 of 1 fresh/warm pairs bitwise identical"
        ) in said
