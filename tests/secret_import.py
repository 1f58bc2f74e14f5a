"""A run imported from a home-like folder holding .ssh/id_rsa, from a pprof that names
that file: what must never be served or written (tests of source roots, issue 19)."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.cli import main
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.present import pprof

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- do-not-serve"


def import_secret_run(home: Path) -> None:
    """Imports the run into home/store; the caller has made home the working directory."""
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{SECRET}\n" * 3)
    builder = ProfileBuilder()
    leaked = Frame("steal", "evil", ".ssh/id_rsa", 2)
    absolute = Frame("main", "evil", str(home / ".ssh" / "id_rsa"), 1)
    builder.add([leaked, absolute], 10.0)
    (home / "evil.pb").write_bytes(pprof.encode(builder.build()))
    assert main(["import", "--store", "store", "evil.pb"]) == 0
