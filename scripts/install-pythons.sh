#!/usr/bin/env bash
# The CPython interpreters python mode's tests record (tests/integration/
# test_python_interpreters.py, docs/python.md#interpreters-tested), kept under
# .venv/pythons/ and made once (a stamp per interpreter; ~2 s in all, and ~1 min
# for standalone-3.10):
#   debian-venv/      a venv of Debian's /usr/bin/python3.11 (libpython linked in)
#   shared-3.11/      a pyenv-style layout: bin/python3.11, a launcher calling
#                     Py_BytesMain, linked against Debian's libpython3.11.so.1.0, so
#                     the interpreter's code is in a shared libpython as in pyenv's
#                     --enable-shared builds
#   shared-venv/      a venv of that launcher
#   uv-venv/          a venv uv made of Debian's python3.11 (`uv run` starts it as a child)
#   standalone-3.10/  python-build-standalone's CPython 3.10.16 (the builds uv and rye
#                     install: PGO+LTO, clang, a shared libpython under $ORIGIN/../lib),
#                     as the Go module github.com/kluctl/go-embed-python carries it:
#                     scripts/extract-python, a Go program using that module, writes it
#                     out (the module from the Go module proxy, ~180 MB, kept only
#                     while building)
#   standalone-venv/  a venv of it
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
OUT=$VENV/pythons
SYSTEM=/usr/bin/python3.11
mkdir -p "$OUT"

made() { [ -f "$OUT/$1/.made" ]; }
done_with() { touch "$OUT/$1/.made"; }

if ! made debian-venv; then
    rm -rf "$OUT/debian-venv"
    "$SYSTEM" -m venv --without-pip "$OUT/debian-venv"
    done_with debian-venv
fi

if ! made shared-3.11; then
    rm -rf "$OUT/shared-3.11"
    mkdir -p "$OUT/shared-3.11/bin"
    config=/usr/bin/python3.11-config
    printf '#include <Python.h>\nint main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n' \
        > "$OUT/shared-3.11/launcher.c"
    # shellcheck disable=SC2046
    cc -O2 -g $("$config" --includes) "$OUT/shared-3.11/launcher.c" \
        -o "$OUT/shared-3.11/bin/python3.11" $("$config" --ldflags --embed)
    ln -sf python3.11 "$OUT/shared-3.11/bin/python3"
    # Not `| grep -q`: it exits at the first match, ldd then dies of SIGPIPE and pipefail
    # fails the check that passed (clean-clone CI caught it).
    ldd "$OUT/shared-3.11/bin/python3.11" | grep 'libpython3\.11\.so' > /dev/null \
        || { echo "shared-3.11: the launcher is not linked against libpython3.11.so" >&2; exit 1; }
    done_with shared-3.11
fi

if ! made shared-venv; then
    rm -rf "$OUT/shared-venv"
    "$OUT/shared-3.11/bin/python3.11" -m venv --without-pip "$OUT/shared-venv"
    done_with shared-venv
fi

if ! made uv-venv; then
    rm -rf "$OUT/uv-venv"
    UV_PYTHON_DOWNLOADS=never "$VENV/bin/uv" venv -q --python "$SYSTEM" "$OUT/uv-venv"
    done_with uv-venv
fi
if ! made standalone-3.10; then
    rm -rf "$OUT/standalone-3.10"
    # shellcheck source=scripts/go-toolchain.sh
    source scripts/go-toolchain.sh
    GO=$(go_bin 1.22)
    MODCACHE=$(realpath "$(mktemp -d "$OUT/gomod.XXXXXX")")  # Go wants it absolute
    (cd scripts/extract-python && GOTOOLCHAIN=local GOFLAGS="-modcacherw -buildvcs=false" \
        GOMODCACHE="$MODCACHE" "$GO" build -o "$MODCACHE/extract-python" .)
    "$MODCACHE/extract-python" "$OUT/standalone-3.10" >/dev/null
    rm -rf "$MODCACHE" "$OUT/standalone-3.10.lock"
    "$OUT/standalone-3.10/bin/python3.10" -c 'import sys; assert sys.version_info[:2] == (3, 10)'
    done_with standalone-3.10
fi

if ! made standalone-venv; then
    rm -rf "$OUT/standalone-venv"
    "$OUT/standalone-3.10/bin/python3.10" -m venv --without-pip "$OUT/standalone-venv"
    done_with standalone-venv
fi
echo "pythons: $(ls "$OUT" | tr '\n' ' ')"
