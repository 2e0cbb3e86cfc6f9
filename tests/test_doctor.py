"""kit.app.doctor: surprises in a measured fingerprint become one-line problems."""

from kit.envs.probe import problems


def fp(api="openblas", arch="Haswell", version="0.3.34"):
    return {"threadpools": [{"user_api": "blas", "owner": "numpy", "internal_api": api,
                             "version": version, "architecture": arch}]}


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


def test_a_busy_machine_is_not_blamed_on_the_stack():
    """Every core kept busy by other processes: the n-thread probe cannot show n threads. The
    doctor measures the load and calls the result inconclusive instead of "not honoured"."""
    import subprocess
    import sys

    from kit.core.processes import cores as count
    from kit.envs.probe import busy_cores, thread_probe
    from kit.envs.catalogue import HOST
    from kit.envs.kinds import stack_kind

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
