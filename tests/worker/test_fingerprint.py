"""BLAS is always named: threadpoolctl's view, else numpy's build information, else why not."""

from kit.views.tables import blas_text
from kit.worker import fingerprint as fp


def test_an_invisible_blas_is_named_from_numpys_build_info(monkeypatch):
    import threadpoolctl

    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [])  # as with Accelerate
    got = fp.fingerprint()
    assert got["threadpools"] == []
    build = got["blas_build"]
    assert build and build["name"] and build["source"] == "numpy.show_config"
    text = blas_text(got["threadpools"], build)
    assert text.startswith(build["name"]) and "numpy's build info" in text


def test_the_measured_library_comes_first_and_nothing_is_ever_blank():
    pools = [
        {
            "user_api": "blas",
            "owner": "numpy",
            "internal_api": "openblas",
            "version": "0.3.27",
            "architecture": "Haswell",
        }
    ]
    assert blas_text(pools, {"name": "accelerate"}) == "numpy: openblas 0.3.27 Haswell"
    assert blas_text(None) == "not measured (no threadpoolctl in this stack)"
    assert blas_text([], None) == "none found by threadpoolctl or numpy's build info"


def test_old_numpy_without_show_config_dicts_falls_back_to_its_config_module(monkeypatch):
    import numpy

    class OldConfig:
        blas_opt_info = {"libraries": ["openblas", "openblas"]}

    def old_show_config(*args, **kwargs):
        if kwargs:
            raise TypeError("show_config() got an unexpected keyword argument 'mode'")

    monkeypatch.setattr(numpy, "show_config", old_show_config)
    monkeypatch.setattr(numpy, "__config__", OldConfig, raising=False)
    assert fp._blas_build() == {
        "name": "openblas,openblas",
        "version": None,
        "source": "numpy.__config__",
    }
