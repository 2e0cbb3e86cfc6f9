"""kit.doctor: surprises in a measured fingerprint become one-line problems."""

from kit.doctor import problems


def fp(api="openblas", arch="Haswell", version="0.3.34"):
    return {"threadpools": [{"user_api": "blas", "owner": "numpy", "internal_api": api,
                             "version": version, "architecture": arch}]}


def test_a_healthy_stack_has_no_problems():
    assert problems(fp(), "OpenBLAS", frozenset({"avx2"})) == []


def test_wrong_blas_and_generic_kernel_are_flagged():
    assert "expected MKL but threadpoolctl sees openblas" in problems(fp(), "MKL")[0]
    generic = problems(fp(arch="Prescott", version="0.3.23.dev"), "OpenBLAS", frozenset({"avx2"}))
    assert len(generic) == 1 and "generic 'Prescott' kernel" in generic[0]
    assert problems({"threadpools": None}, None)[0].startswith("threadpoolctl is not installed")
