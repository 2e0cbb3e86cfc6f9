"""`compare`: a bundle from another machine rerun here and answered, for either kind of run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.callbacks import Confirm, Log, OnDone
from ...runs.store import Store
from .records import Compared

if TYPE_CHECKING:
    from ...envs.platforms import Platform


def compare(
    store: Store,
    path,
    files=(),
    *,
    jobs: int = 1,
    log: Log = lambda msg: None,
    on_done: OnDone = lambda spec: None,
    confirm: Confirm[list] = lambda stacks: True,
    trust_image: bool = False,
    trust: Confirm[list] = lambda images: False,
    plat: Platform | None = None,
) -> Compared:
    """Rerun the runs of the bundle at ``path`` here and say how far they differ
    (kit.app.reproduce.compare_bundle: kit's own runs by stage and verdict, a pipeline file's
    output by output, ``files`` the pipeline files its runs were made with). ``log(msg)``: what
    it is doing; ``on_done(spec)``: a rerun stored; ``confirm(stacks)``: asked before building
    stacks [(name, download bytes or None)] (False or a raise: nothing is built or written);
    ``trust_image``: rerun in the images the bundle carries, once ``trust(images)`` says yes;
    ``plat``: the machine the reruns' stacks are found for (None: this one)."""
    from ..reproduce import compare_bundle

    return Compared(
        compare_bundle(
            store,
            path,
            plat=plat,
            jobs=jobs,
            log=log,
            on_done=on_done,
            confirm=confirm,
            pipelines=tuple(files),
            trust_image=trust_image,
            trust=trust,
        )
    )
