"""Allocator choice, install advice, and reading the loader's bindings log."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.experiments import allocator

MIMALLOC = Path("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2")
# Lines as glibc 2.36's loader writes them with LD_DEBUG=bindings (captured on Debian 12).
PRELOADED = """\
     15502:	binding file /lib/x86_64-linux-gnu/libc.so.6 [0] to /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 [0]: normal symbol `malloc' [GLIBC_2.2.5]
     15502:	binding file ./m [0] to /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 [0]: normal symbol `malloc' [GLIBC_2.2.5]
     15502:	binding file ./m [0] to /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 [0]: normal symbol `free' [GLIBC_2.2.5]
"""  # noqa: E501
OWN_MALLOC = """\
     15563:	binding file /lib/x86_64-linux-gnu/libc.so.6 [0] to ./own [0]: normal symbol `malloc' [GLIBC_2.2.5]
     15563:	binding file ./own [0] to ./own [0]: normal symbol `malloc' [GLIBC_2.2.5]
"""  # noqa: E501


def bindings(log: str) -> list[tuple[str, str]]:
    return allocator.BINDING.findall(log)


def test_a_preload_that_took_effect_names_who_now_uses_it() -> None:
    proof = allocator._judge(bindings(PRELOADED), MIMALLOC)
    assert proof == f"malloc of libc.so.6, m bound to {MIMALLOC}"


def test_a_program_keeping_its_own_malloc_is_caught() -> None:
    with pytest.raises(UserError, match="libc.so.6 still resolves to ./own"):
        allocator._judge(bindings(OWN_MALLOC), MIMALLOC)


def test_no_lookup_at_all_is_not_taken_as_proof() -> None:
    with pytest.raises(UserError, match="no process of the command looked up malloc"):
        allocator._judge([], MIMALLOC)


def test_install_command_for_the_missing_ones() -> None:
    missing = allocator.by_names(["jemalloc", "tcmalloc"])
    assert allocator.install_command(missing) == (
        "apt-get install -y libjemalloc2 libtcmalloc-minimal4"
    )


def test_unknown_allocator_is_named() -> None:
    with pytest.raises(UserError, match="unknown allocator 'hoard'"):
        allocator.by_names(["mimalloc", "hoard"])


def test_preload_keeps_what_the_caller_already_preloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_PRELOAD", "/opt/libtrace.so")
    assert allocator.preload_env(MIMALLOC) == {"LD_PRELOAD": f"{MIMALLOC}:/opt/libtrace.so"}
