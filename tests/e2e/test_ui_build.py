"""scripts/build-ui.sh gives the browser tests a UI built from the sources as they are.

A build it did not make from them is built again, however new its files: a static/ copied
from another checkout is newer than these sources without being of them. Two flows
(flame_focus_ignore_hide, flame_pixel_ratio_2: the kept canvas's taller bitmap) and the Cache
page's scaling test (the L2's prefetched room) failed in CI exactly as they fail on such a
build; the build step trusted the files' times."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UI = ROOT / "ui"
STATIC = ROOT / "src" / "perfsleuth" / "server" / "static"
SOURCES = (
    "src",
    "index.html",
    "vite.config.ts",
    "tsconfig.json",
    "package.json",
    "package-lock.json",
)

pytestmark = pytest.mark.integration


def source_hash() -> str:
    """What build-ui.sh computes: sha256sum's lines for the sources in byte order, hashed."""
    files = []
    for name in SOURCES:
        path = UI / name
        files += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    listed = sorted(str(p.relative_to(UI)) for p in files)
    lines = "".join(f"{hashlib.sha256((UI / p).read_bytes()).hexdigest()}  {p}\n" for p in listed)
    return hashlib.sha256(lines.encode()).hexdigest()


def build() -> None:
    subprocess.run(["bash", str(ROOT / "scripts" / "build-ui.sh")], check=True, capture_output=True)


def test_the_build_records_the_sources_it_was_made_from() -> None:
    build()
    assert (STATIC / ".source-hash").read_text().strip() == source_hash()


def test_a_build_of_other_sources_is_built_again_however_new() -> None:
    build()
    (STATIC / ".source-hash").write_text("a build of other sources\n")
    left_over = STATIC / "assets" / "from-another-checkout.js"
    left_over.write_text("// not built from these sources\n")
    (STATIC / "index.html").touch()  # newer than every source, as a copy is
    build()
    assert (STATIC / ".source-hash").read_text().strip() == source_hash()
    assert not left_over.exists()
    assert list((STATIC / "assets").glob("index-*.js"))
