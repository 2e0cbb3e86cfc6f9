"""The kit worker processes running on this machine now, read from /proc (Linux)."""

from pathlib import Path


def kit_workers():
    """(pid, argv as bytes) of every `python -m kit.worker` process."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kit.worker" in args:
            yield int(d.name), args


def run_folder(args) -> str:
    """The name of the folder holding a fresh worker's spec.json ("" for a warm worker)."""
    spec = next((a.decode() for a in args if a.endswith(b"spec.json")), "")
    return Path(spec).parent.name if spec else ""
