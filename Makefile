# make demo / make test install what is missing, then do their job. Idempotent.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
BIN := $(VENV)/bin
APT_PACKAGES := linux-perf elfutils valgrind bpftrace gdb clang-16 llvm-16 libclang-16-dev \
	hyperfine time libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libconcurrentqueue-dev \
	python3-venv python3-dev pkg-config chromium libc6-dbg build-essential zlib1g-dev libicu-dev dwarves \
	xz-utils bzip2 zstd debuginfod percona-toolkit libglib2.0-dev uthash-dev libstb-dev libsparsehash-dev libabsl-dev robin-map-dev libtsl-hopscotch-map-dev libtsl-ordered-map-dev libdw-dev \
	openjdk-17-jdk-headless curl
# Installed only where they remove nothing (Boost 1.81 conflicts with the default Boost 1.74's
# -dev packages); the examples built on them are built only where their headers are.
APT_OPTIONAL := libboost1.81-dev
STAMP := .venv/.stamp

.PHONY: demo test setup apt venv native wallsnap examples clients lint unit integration clean ui seaweedfs pythons

setup: apt $(STAMP) native wallsnap ui examples clients seaweedfs pythons

apt:
	@bash scripts/install-apt.sh $(APT_PACKAGES)
	@bash scripts/install-apt.sh --unless-removing $(APT_OPTIONAL)

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,spark]'
	@touch $(STAMP)

venv: $(STAMP)

native: $(STAMP)
	@bash scripts/build-native.sh

# Wall mode's snapshotter (C on libdw), built once beside the virtualenv (~1 s).
wallsnap: $(STAMP)
	@$(PY) -m perfsleuth.collect.wallsnap

ui: $(STAMP)
	@if [ -f ui/package.json ]; then bash scripts/build-ui.sh; fi

examples:
	@$(MAKE) -s -C examples

clients: $(STAMP)
	@bash scripts/install-clients.sh

# A real S3 server for the S3 tests (SeaweedFS, built once into .venv/bin; ~4 min).
seaweedfs: $(STAMP)
	@bash scripts/build-seaweedfs.sh

# The CPython builds python mode's tests record (under .venv/pythons; ~1 min, made once).
pythons: $(STAMP)
	@VENV=$(VENV) bash scripts/install-pythons.sh

demo: setup
	@bash scripts/demo.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy src/perfsleuth
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/gen_documents.py --check
	@if [ -f native/Cargo.toml ]; then cd native && cargo fmt --check && cargo clippy --release -q -- -D warnings; fi

unit: $(STAMP) native
	$(BIN)/pytest -q tests/unit

integration: setup
	$(BIN)/pytest -q tests/integration

test: setup lint
	$(BIN)/pytest -q --durations=30 tests

clean:
	rm -rf $(VENV) native/target examples/bin .perfsleuth
