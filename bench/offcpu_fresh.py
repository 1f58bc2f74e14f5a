#!/usr/bin/env python3
"""Benchmark: waiting per thread state as perfsleuth's three modes and pt-pmp read it,
against the program's own clock, on programs the off-CPU work was not tuned on
(issue 29's fresh-eyes round; bench/offcpu_agreement.py is prodcons's).

    .venv/bin/python bench/offcpu_fresh.py [--runs 3]
        [--programs rwtable,plcount,sqlwriters,stdpool,futpool,glibqueue,semphase,pipewait,
                    lotpipe,xz,pigz,pbzip2,lbzip2,sort,pixz,pzstd,memcached,nginx]
        [--tools alone,wall,offcpu,all,pt-pmp]

bench/fresh_waits/ holds the programs, each timing its own lock calls:
- rwtable (C++, g++ -O2 -g): 4 threads on one std::shared_mutex (a pthread rwlock;
  one access in 8 a writer) and one std::mutex; prints the threads' time in lock calls
  over their lifetime: the truth for `mutex`.
- plcount (Rust, cargo --release with debug info; crates.io's parking_lot and
  crossbeam-channel): 3 workers take jobs from a bounded crossbeam channel and fold
  them into a parking_lot::Mutex; prints the workers' time in lock() (`mutex`) and in
  recv() (`condvar`). Both crates spin with sched_yield before they park.
- sqlwriters (C, gcc -O2 -g; Debian's libsqlite3, stripped): 4 threads insert batches
  through one shared SQLite connection, each batch under the connection's own mutex
  (sqlite3_mutex_enter(sqlite3_db_mutex())); prints their time in that call (`mutex`).
- stdpool (Rust, rustc -O -g, std only): 3 workers take jobs from a bounded
  std::sync::mpsc channel behind a Mutex and fold them into a Mutex<HashMap>; prints
  their time in either lock() (`mutex`) and in recv() (`condvar`).
- futpool (C++, g++ -O2 -g): rounds of 3 std::async workers waiting in
  std::shared_future::get() for main's std::promise; prints their time in get()
  (`condvar`: libstdc++'s futures wait on a futex of their own).
- glibqueue (C, gcc -O2 -g; Debian's libglib2.0 2.74, stripped): 3 g_thread_new workers
  pop jobs from a GAsyncQueue (GLib's own futex-based GCond) and fold them into a
  table under a GMutex (GLib's own futex lock, its slow path a static function);
  prints their time in g_mutex_lock (`mutex`) and in g_async_queue_pop (`condvar`,
  the queue's own lock included).
- semphase (C++20, g++ -std=c++20 -O2 -g): 4 workers run rounds, each taking one of 2
  slots of a std::counting_semaphore and meeting at a std::barrier (libstdc++'s
  atomic waits: sched_yield spins, then a futex of their own); prints their time in
  acquire() and arrive_and_wait() (`condvar`).
- pipewait (C, gcc -O2 -g): 2 readers wait in epoll_wait (no timeout) on a pipe each
  that a writer of its own feeds; prints the readers' time in epoll_wait + read
  (`io`) over all four threads' lifetime (the writers' writes do not block).
- lotpipe (Rust, cargo --release with debug info; crates.io's parking_lot): a producer
  fills a bounded queue (parking_lot::Mutex<VecDeque> + two parking_lot::Condvars), 3
  workers pop jobs, digest them, fold them into a std::sync::RwLock<HashMap> (a read
  lock, then the write lock: work under it) and meet at a std::sync::Barrier each
  round; prints the started threads' time in lock(), read() and write() (`mutex`) and in
  the Condvars' and the Barrier's wait() (`condvar`).
- xz: xz 5.4.1 -T4 -0 on 100 MB (a tar of /usr/include, /usr/share/doc and
  Python's library, then base64 of random bytes), built from Debian's source (`apt-get
  source xz-utils`, needs deb-src; -O2 -g) with bench/fresh_waits/xz-waitclock.patch: a
  CLOCK_MONOTONIC clock around liblzma's mutex locks (`mutex`) and condition waits
  (`condvar`, the relock inside included) per thread, printed at exit: the 4 workers'
  states, and the main thread's (`main mutex`, `main condvar`: it waits for them).
- pigz, pbzip2: pigz 2.6 -p 3 on 300 MB (yarn.c's lock/twist library) and pbzip2 1.1.13
  -p3 on 120 MB (pthread mutex + condvar work queues), built from Debian bookworm's
  sources (-O2 -g; count_views.debian_source, which adds its own deb-src list; a pigz
  tree already in bench/out/fresh_waits/pigz-src is used as it is, e.g. upstream's v2.6
  tag where the archive's tarball is missing), their logic unchanged: the clock is
  bench/fresh_waits/waitclock.c, an LD_PRELOAD library that times each thread's
  pthread_mutex_lock (`mutex`) and pthread_cond_wait/timedwait (`condvar`, the relock
  inside included) and its life, printed as xz's patch prints them (the started
  threads, summed, and the main thread).
- pixz, pzstd: pixz 1.0.7 -t -p 3 -1 on 120 MB (its own pthread queues: a reader, 3
  liblzma encoders, the main thread writing) and pzstd 1.5.4 -p 3 -6 on 300 MB (a
  ThreadPool of std::threads on std::mutex and std::condition_variable: a reader and 3
  compressors, the main thread writing), built from Debian bookworm's sources (-O2 -g),
  with waitclock.c, which also prints each thread's kernel clock (schedstat: on a CPU,
  runnable); each thread's line then shows its time blocked (its life less both)
  against the tool's time in any waiting state (which also counts the runnable ends of
  its waits, as the timed calls do).
- memcached: memcached 1.6.18 -t 4 -m 256, built from Debian bookworm's source (-O2 -g)
  and run with waitclock.c, which also times epoll_wait (`io`: libevent's wait for the
  workers' sockets); a server, so once it listens bench/fresh_waits/mcload.c (4
  connections, set + get of 200-byte values, 8 s) loads it from outside the recording,
  then SIGUSR1 stops it gracefully, joining every thread (each prints its clock).
- nginx: nginx 1.22.1 from Debian bookworm's source (-O2 -g, no rewrite or gzip module),
  a master and 2 worker processes of one thread each, with waitclock.c (each process's
  epoll_wait; a forked child's clock starts at the fork); bench/fresh_waits/httpload.c
  (4 keep-alive connections GETting a 16 KiB file, 8 s) loads it, SIGQUIT stops it.
  Its processes' main threads are compared as the other programs' started threads.

Each round runs the program alone, then under `perfsleuth record --mode wall`,
`--mode offcpu`, `--mode all` and real pt-pmp, and prints each reading minus the
program's, in points, per state: the started threads' time in that state over their
time (offcpu mode: over the lifetime the program prints; pt-pmp: the share of their
stacks in that kind of wait), and the tools' perturbation: the started threads'
lifetime under each tool over the same round's run alone.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfsleuth.model.profile import Profile

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "bench" / "fresh_waits"
OUT = ROOT / "bench" / "out" / "fresh_waits"
PERFSLEUTH = [sys.executable, "-m", "perfsleuth.cli"]
MODES = ("wall", "offcpu", "all")


@dataclass(frozen=True)
class Program:
    argv: tuple[str, ...]
    truth: re.Pattern[str]  # named groups: one per state, and `lived` (summed over matches)
    # pt-pmp: the states' marks in a stack (the first state whose mark shows wins)
    marks: tuple[tuple[str, tuple[str, ...]], ...]
    main_truth: re.Pattern[str] | None = None  # the main thread's, when it is timed too
    server: Server | None = None
    processes: bool = False  # single-threaded processes: their main threads are the workers


@dataclass(frozen=True)
class Server:
    """A server program: once it listens on port and has written pid_file, client loads
    it from outside the recording, then the signal `stop` to the pid ends it."""

    port: int
    pid_file: Path
    client: tuple[str, ...]
    stop: int = signal.SIGUSR1


XZ_CLOCK = r"tid \d+ mutex (?P<mutex>\d+) cond (?P<condvar>\d+) lived (?P<lived>\d+)"
PROGRAMS = {
    "rwtable": Program(
        (str(OUT / "rwtable"), "20000", "4"),
        re.compile(r"threads waited (?P<mutex>\d+) ns of (?P<lived>\d+) ns"),
        (("mutex", ("pthread_rwlock", "__lll_lock_wait", "pthread_mutex_lock")),),
    ),
    "plcount": Program(
        (str(OUT / "target" / "release" / "plcount"), "80000", "3"),
        re.compile(r"waited lock (?P<mutex>\d+) ns recv (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        # gdb names Rust's frames its own way: Receiver::recv, raw_mutex::{impl#3}::lock_slow
        (("mutex", ("lock_slow",)), ("condvar", ("Receiver::recv", "Context::wait_until"))),
    ),
    "sqlwriters": Program(
        (str(OUT / "sqlwriters"), "1500", "4"),
        re.compile(r"threads waited (?P<mutex>\d+) ns of (?P<lived>\d+) ns"),
        (("mutex", ("pthread_mutex_lock", "__lll_lock_wait")),),
    ),
    "stdpool": Program(
        (str(OUT / "stdpool"), "20000", "3"),
        re.compile(r"waited lock (?P<mutex>\d+) ns recv (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        # the program times recv() whole, the channel's own lock included
        (("condvar", ("array::{impl#1}::recv",)), ("mutex", ("lock_contended",))),
    ),
    "futpool": Program(
        (str(OUT / "futpool"), "300"),
        re.compile(r"threads waited (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        (("condvar", ("_M_futex_wait_until", "_State_baseV2::wait")),),
    ),
    "glibqueue": Program(
        (str(OUT / "glibqueue"), "30000", "3"),
        re.compile(r"waited lock (?P<mutex>\d+) ns pop (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        # gdb has no name for GLib's static GMutex slow path: a worker's other futex wait
        (("condvar", ("g_async_queue_pop", "g_cond_wait")), ("mutex", ("g_mutex_lock", "syscall"))),
    ),
    "semphase": Program(
        (str(OUT / "semphase"), "1500", "4"),
        re.compile(r"threads waited (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        (("condvar", ("__atomic_spin", "__platform_wait", "_M_do_wait", "barrier", "_M_acquire")),),
    ),
    "pipewait": Program(
        (str(OUT / "pipewait"), "12000"),
        re.compile(r"threads waited (?P<io>\d+) ns of (?P<lived>\d+) ns"),
        (("io", ("epoll_wait", "__GI___libc_read")),),
    ),
    "lotpipe": Program(
        (str(OUT / "target" / "release" / "lotpipe"), "100", "3"),
        re.compile(r"waited lock (?P<mutex>\d+) ns wait (?P<condvar>\d+) ns of (?P<lived>\d+) ns"),
        (
            ("mutex", ("lock_slow", "read_contended", "write_contended")),
            ("condvar", ("Condvar::wait", "Barrier::wait")),
        ),
    ),
    "xz": Program(
        (str(OUT / "xz"), "-T4", "-0", "-c", str(OUT / "corpus.tar")),
        re.compile("worker " + XZ_CLOCK),
        (("condvar", ("pthread_cond_",)), ("mutex", ("pthread_mutex_lock", "__lll_lock_wait"))),
        main_truth=re.compile("main " + XZ_CLOCK),
    ),
}
XZ_DEBIAN = "xz-utils"
WAITCLOCK = OUT / "waitclock.so"
CORPUS_300 = OUT / "corpus300.tar"
CORPUS_120 = OUT / "corpus120.tar"
SORT_INPUT = OUT / "sortinput.txt"
PTHREAD_MARKS = (
    ("condvar", ("pthread_cond_",)),
    ("mutex", ("pthread_mutex_lock", "__lll_lock_wait")),
)
PRELOADED = ("env", f"LD_PRELOAD={WAITCLOCK}")
PROGRAMS |= {
    "pigz": Program(
        (*PRELOADED, str(OUT / "pigz"), "-p", "3", "-c", str(CORPUS_300)),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
        main_truth=re.compile("main " + XZ_CLOCK),
    ),
    "pbzip2": Program(
        (*PRELOADED, str(OUT / "pbzip2"), "-p3", "-c", str(CORPUS_120)),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
        main_truth=re.compile("main " + XZ_CLOCK),
    ),
    # lbzip2's main thread waits in sigsuspend and pthread_join, and ends in _exit: its
    # clock never prints (the started threads' do)
    "lbzip2": Program(
        (*PRELOADED, str(OUT / "lbzip2"), "-n", "3", "-c", str(CORPUS_120)),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
    ),
    "sort": Program(
        (*PRELOADED, "LC_ALL=C", str(OUT / "sort"), "--parallel=4", "-S", "200M", str(SORT_INPUT)),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
        main_truth=re.compile("main " + XZ_CLOCK),
    ),
    # pixz's main thread writes, a reader thread splits the input, 3 encoders (liblzma)
    "pixz": Program(
        (
            *PRELOADED,
            str(OUT / "pixz"),
            "-t",
            "-p",
            "3",
            "-1",
            "-i",
            str(CORPUS_120),
            "-o",
            "/dev/null",
        ),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
        main_truth=re.compile("main " + XZ_CLOCK),
    ),  # fmt: skip
    # pzstd: 3 compressors and a reader in its ThreadPool (std::mutex, std::condition_variable)
    "pzstd": Program(
        (*PRELOADED, str(OUT / "pzstd"), "-q", "-p", "3", "-6", "-c", str(CORPUS_300)),
        re.compile("worker " + XZ_CLOCK),
        PTHREAD_MARKS,
        main_truth=re.compile("main " + XZ_CLOCK),
    ),
}
MEMCACHED_PORT = 21299
MEMCACHED_PID = Path(tempfile.gettempdir()) / "perfsleuth-fresh-memcached.pid"
NGINX_PORT = 21300
NGINX_PID = Path(tempfile.gettempdir()) / "perfsleuth-fresh-nginx.pid"
NGINX_PREFIX = OUT / "nginx-prefix"
IO_CLOCK = XZ_CLOCK + r" run \d+ runq \d+ io (?P<io>\d+)"
PROGRAMS["memcached"] = Program(
    # 4 workers on libevent (epoll_wait), the LRU maintainer and crawler, the slab
    # mover, the hash table's grower, the logger: all joined on SIGUSR1's graceful stop
    (*PRELOADED, str(OUT / "memcached"), "-u", "root", "-U", "0", "-p", str(MEMCACHED_PORT),
     "-t", "4", "-m", "256", "-P", str(MEMCACHED_PID)),
    re.compile("worker " + IO_CLOCK),
    (*PTHREAD_MARKS, ("io", ("epoll_wait",))),
    main_truth=re.compile("main " + IO_CLOCK),
    # 4 connections, set and get of 200-byte values: one slab class
    server=Server(
        MEMCACHED_PORT, MEMCACHED_PID, (str(OUT / "mcload"), str(MEMCACHED_PORT), "4", "8")
    ),
)  # fmt: skip
PROGRAMS["nginx"] = Program(
    # a master and 2 worker processes (epoll_wait, sendfile), one thread each: their main
    # threads are the "started threads" here
    (*PRELOADED, str(OUT / "nginx"), "-p", str(NGINX_PREFIX), "-c", "nginx.conf",
     "-e", "/dev/null"),
    re.compile("main " + IO_CLOCK),
    (("io", ("epoll_wait",)),),
    # 4 keep-alive connections GETting a 16 KiB file for 8 s; SIGQUIT: graceful stop
    server=Server(NGINX_PORT, NGINX_PID,
                  (str(OUT / "httpload"), str(NGINX_PORT), "4", "8", "/page"), signal.SIGQUIT),
    processes=True,
)  # fmt: skip
NGINX_CONF = f"""daemon off; master_process on; worker_processes 2; pid {NGINX_PID};
events {{ worker_connections 256; }}
http {{ access_log off; sendfile on; keepalive_requests 1000000000;
       server {{ listen 127.0.0.1:{NGINX_PORT}; root html; }} }}
"""
DEBIAN_BUILT = ("pigz", "pbzip2", "lbzip2", "sort", "pixz", "pzstd", "memcached", "nginx")


def build(programs: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if set(programs) - {"xz", *DEBIAN_BUILT}:
        build_own()
    if "xz" in programs:
        build_xz()
    if set(DEBIAN_BUILT) & set(programs):
        build_preloaded([p for p in programs if p in DEBIAN_BUILT])


def build_own() -> None:
    """The programs of bench/fresh_waits/."""
    subprocess.run(
        ["g++", "-O2", "-g", "-pthread", "-o", str(OUT / "rwtable"), str(SOURCES / "rwtable.cc")],
        check=True,
    )
    sqlwriters = ["gcc", "-O2", "-g", "-pthread", "-o", str(OUT / "sqlwriters")]
    subprocess.run([*sqlwriters, str(SOURCES / "sqlwriters.c"), "-lsqlite3"], check=True)
    stdpool = ["rustc", "-O", "-g", "-C", "force-frame-pointers=yes", "-o", str(OUT / "stdpool")]
    subprocess.run([*stdpool, str(SOURCES / "stdpool.rs")], check=True)
    futpool = ["g++", "-O2", "-g", "-pthread", "-o", str(OUT / "futpool")]
    subprocess.run([*futpool, str(SOURCES / "futpool.cc")], check=True)
    glib = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "glib-2.0"], capture_output=True, text=True, check=True
    ).stdout.split()
    glibqueue = ["gcc", "-O2", "-g", "-pthread", "-o", str(OUT / "glibqueue")]
    subprocess.run([*glibqueue, str(SOURCES / "glibqueue.c"), *glib], check=True)
    semphase = ["g++", "-std=c++20", "-O2", "-g", "-pthread", "-o", str(OUT / "semphase")]
    subprocess.run([*semphase, str(SOURCES / "semphase.cc")], check=True)
    pipewait = ["gcc", "-O2", "-g", "-pthread", "-o", str(OUT / "pipewait")]
    subprocess.run([*pipewait, str(SOURCES / "pipewait.c")], check=True)
    for crate in ("plcount", "lotpipe"):
        manifest = SOURCES / crate / "Cargo.toml"
        subprocess.run(
            ["cargo", "build", "-q", "--release", "--manifest-path", str(manifest)],
            check=True,
            env={**os.environ, "CARGO_TARGET_DIR": str(OUT / "target")},
        )


# name: (Debian source package, build command in its tree, the binary built there)
DEBIAN_BUILDS = {
    "pigz": ("pigz", "make -s pigz CFLAGS='-O2 -g'", "pigz"),
    "pbzip2": ("pbzip2", "make -s pbzip2 CXXFLAGS='-O2 -g -pthread' 2>/dev/null", "pbzip2"),
    # lbzip2 2.5's gnulib fseterr.c predates glibc 2.28's hidden libio flags (Debian's
    # patch for it is in its diff, missing from the mirror here): give it glibc's
    "lbzip2": (
        "lbzip2",
        "./configure -q CFLAGS='-O2 -g' && "
        "make -s CFLAGS='-O2 -g -D_IO_ftrylockfile -D_IO_ERR_SEEN=0x20'",
        "src/lbzip2",
    ),
    "sort": (
        "coreutils",
        # src/sort alone: the generated headers first (BUILT_SOURCES, as `make all` does)
        "FORCE_UNSAFE_CONFIGURE=1 ./configure -q CFLAGS='-O2 -g' --disable-nls && "
        "printf 'built-sources: $(BUILT_SOURCES)\\n' > built-sources.mk && "
        "make -s -j2 -f Makefile -f built-sources.mk built-sources && make -s -j2 src/sort",
        "src/sort",
    ),
    # pixz 1.0.7's tarball has no configure script (autoreconf is not installed here)
    "pixz": (
        "pixz",
        "printf '#define HAVE_DECL_HTOLE64 1\\n#define HAVE_DECL_LE64TOH 1\\n"
        '#define PACKAGE_VERSION "1.0.7"\\n\' > src/config.h && '
        "gcc -O2 -g -pthread -DHAVE_CONFIG_H -D_GNU_SOURCE -Isrc -o pixz src/*.c "
        "-larchive -llzma -lm",
        "pixz",
    ),
    "memcached": (
        "memcached",
        "./configure -q CFLAGS='-O2 -g' && make -s -j2 memcached",
        "memcached",
    ),
    # without the rewrite and gzip modules: no PCRE or zlib headers needed
    "nginx": (
        "nginx",
        "./configure --with-cc-opt='-O2 -g' --without-http_rewrite_module "
        "--without-http_gzip_module >/dev/null && make -s -j2",
        "objs/nginx",
    ),
    "pzstd": (
        "libzstd",
        "make -s -j2 -C contrib/pzstd pzstd CFLAGS='-O2 -g' CXXFLAGS='-O2 -g'",
        "contrib/pzstd/pzstd",
    ),
}


def build_preloaded(programs: list[str]) -> None:
    """Programs from Debian's sources, the clock they are run with, their input."""
    subprocess.run(
        ["gcc", "-O2", "-g", "-shared", "-fPIC", "-o", str(WAITCLOCK),
         str(SOURCES / "waitclock.c"), "-ldl"],
        check=True,
    )  # fmt: skip
    sys.path.insert(0, str(ROOT / "bench"))
    from count_views import debian_source, sh

    for client in ("mcload", "httpload"):
        argv = ["gcc", "-O2", "-pthread", "-o", str(OUT / client), str(SOURCES / f"{client}.c")]
        subprocess.run(argv, check=True)
    (NGINX_PREFIX / "html").mkdir(parents=True, exist_ok=True)
    (NGINX_PREFIX / "nginx.conf").write_text(NGINX_CONF)
    (NGINX_PREFIX / "html" / "page").write_bytes(bytes(range(256)) * 64)
    for name in programs:
        package, make, binary = DEBIAN_BUILDS[name]
        if (OUT / name).exists():
            continue
        src = OUT / f"{name}-src"
        if not any(p.is_dir() and p.name != "apt" for p in src.glob("*")):
            try:
                debian_source(package, src)
            except subprocess.CalledProcessError:
                if not any(src.glob(f"{package}_*.orig.tar.*")):
                    raise  # a missing Debian diff is fine: the sources are unchanged
            sh(f"tar xf $(ls {package}_*.orig.tar.* | grep -v '[.]asc$')", src)
        tree = next(p for p in src.iterdir() if p.is_dir() and p.name != "apt")
        sh(f"{make} && cp {binary} {OUT / name}", tree)
    if "sort" in programs and not SORT_INPUT.exists():
        lines = f"head -c 180000000 /dev/urandom | base64 -w 40 > {SORT_INPUT}"
        subprocess.run(lines, shell=True, check=True)
    if not CORPUS_300.exists():
        tree = "/usr/include /usr/share/doc /usr/lib/python3*"
        tar = f"tar cf - {tree} 2>/dev/null | head -c 220000000"
        noise = "head -c 60000000 /dev/urandom | base64 -w 0 | head -c 80000000"
        subprocess.run(f"({tar}; {noise}) > {CORPUS_300}", shell=True, check=True)
    if not CORPUS_120.exists():
        subprocess.run(f"head -c 120000000 {CORPUS_300} > {CORPUS_120}", shell=True, check=True)


def build_xz() -> None:
    """xz from Debian's source with the clock patch, and its 100 MB input, once."""
    if not (OUT / "xz").exists():
        src = OUT / "xz-src"
        src.mkdir(exist_ok=True)
        subprocess.run(["apt-get", "source", "-q", XZ_DEBIAN], cwd=src, check=True)
        tree = next(p for p in src.iterdir() if p.is_dir())
        patch = (SOURCES / "xz-waitclock.patch").read_text()
        subprocess.run(["patch", "-p1"], input=patch, text=True, cwd=tree, check=True)
        configure = ["./configure", "-q", "CFLAGS=-O2 -g", "--disable-shared", "--disable-nls",
                     "--disable-doc", "--disable-scripts"]  # fmt: skip
        subprocess.run(configure, cwd=tree, check=True)
        subprocess.run(["make", "-s", "-j2"], cwd=tree, check=True, capture_output=True)
        (OUT / "xz").write_bytes((tree / "src" / "xz" / "xz").read_bytes())
        (OUT / "xz").chmod(0o755)
    corpus = OUT / "corpus.tar"
    if not corpus.exists():
        tree = "/usr/include /usr/share/doc /usr/lib/python3*"
        tar = f"tar cf - {tree} 2>/dev/null | head -c 75000000"
        noise = "head -c 25000000 /dev/urandom | base64 -w 0 | head -c 25000000"
        subprocess.run(f"({tar}; {noise}) > {corpus}", shell=True, check=True)


MAIN = "main "  # the prefix of the main thread's states


def groups(program: Program) -> dict[str, tuple[re.Pattern[str], bool]]:
    """{prefix of the states: (their pattern, of the main thread?)}"""
    started = {"": (program.truth, False)}
    return started | ({MAIN: (program.main_truth, True)} if program.main_truth else {})


def measured(pattern: re.Pattern[str], stderr: str) -> dict[str, float]:
    """The program's numbers (ns), summed over its lines (xz prints one a thread)."""
    sums: dict[str, float] = {}
    for found in pattern.finditer(stderr):
        for name, value in found.groupdict().items():
            sums[name] = sums.get(name, 0.0) + float(value)
    return sums


def truth_of(program: Program, stderr: str) -> dict[str, float]:
    truth = {}
    for prefix, (pattern, _main) in groups(program).items():
        sums = measured(pattern, stderr)
        if not sums:
            raise SystemExit(f"no measurement from the program:\n{stderr[-2000:]}")
        truth |= {prefix + s: v / sums["lived"] for s, v in sums.items() if s != "lived"}
    return truth


def lived_of(program: Program, stderr: str) -> float:
    """The started threads' lifetimes, summed (ns): the program's slowdown under a tool."""
    return measured(program.truth, stderr).get("lived", float("nan"))


Reading = tuple[dict[str, float], dict[str, float], float]  # truth, tool's, lived


def perfsleuth_reading(work: Path, mode: str, program: Program, stderr: str) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "src"))
    from perfsleuth.store.runs import Store

    store = Store(work / ".perfsleuth")
    profile = store.load(store.resolve("latest"))
    by_state: dict[str, float] = {}
    total = {"": 0.0, MAIN: 0.0}
    for _stack, weight, _count, t, state in profile.rows():
        if t < 0:
            continue
        main = profile.threads[t].tid == profile.threads[t].pid and not program.processes
        prefix = MAIN if main else ""
        total[prefix] += weight
        by_state[prefix + state] = by_state.get(prefix + state, 0.0) + weight
    seen = {}
    for prefix, (pattern, _main) in groups(program).items():
        lived = measured(pattern, stderr).get("lived", total[prefix])
        over = lived if mode == "offcpu" else total[prefix]
        seen |= {s: by_state.get(s, 0.0) / over for s in truth_of(program, stderr) if
                 s.startswith(prefix) and (prefix or not s.startswith(MAIN))}  # fmt: skip
    print_worst_thread(profile, mode, program, stderr)
    if "oncpu_samples_lost" in profile.meta:
        print(f"  perf lost {profile.meta['oncpu_samples_lost']} on-CPU samples")
    return seen


PER_THREAD = re.compile(XZ_CLOCK.replace(r"tid \d+", r"tid (?P<tid>\d+)"))
# waitclock's kernel clock of the thread (schedstat): on a CPU, runnable
SCHEDULED = re.compile(r" run (?P<run>\d+) runq (?P<runq>\d+)")
TIMED_IO = re.compile(r" run \d+ runq \d+ io (?P<io>\d+)")


def print_worst_thread(profile: Profile, mode: str, program: Program, stderr: str) -> None:
    """Each thread's reading against its own clock line (the clocks that print one a
    thread): the thread read farthest from it, and how many are within 2 points."""
    by_thread: dict[tuple[int, str], float] = {}
    total: dict[int, float] = {}
    for _stack, weight, _count, t, state in profile.rows():
        tid = profile.threads[t].tid if t >= 0 else -1
        total[tid] = total.get(tid, 0.0) + weight
        by_thread[(tid, state)] = by_thread.get((tid, state), 0.0) + weight
    diffs = []
    for line in PER_THREAD.finditer(stderr):
        tid, lived = int(line["tid"]), float(line["lived"])
        over = lived if mode == "offcpu" else total.get(tid, lived)
        each = []
        for state, ns in clock_states(line, stderr, "io" in program.truth.groupindex).items():
            read = by_thread.get((tid, state), 0.0) / over
            diffs.append((100 * (read - ns / lived), tid, state))
            each.append(f"{state} {100 * ns / lived:.1f}% read {100 * read:.1f}%")
        print_thread(tid, by_thread, over, lived, line, stderr, each)
    if diffs:
        worst = max(diffs, key=lambda d: abs(d[0]))
        within = sum(abs(d) <= 2 for d, _tid, _state in diffs)
        print(f"  per thread: {within} of {len(diffs)} readings within 2 points, "
              f"worst tid {worst[1]} {worst[2]} {worst[0]:+.1f}")  # fmt: skip


def clock_states(line: re.Match[str], stderr: str, timed_io: bool) -> dict[str, float]:
    """A clock line's timed states (ns): mutex and condvar, and io for a program whose
    io the clock times whole (memcached: its threads' waits for events; the others' file
    reads and writes are io to the tools and untimed)."""
    states = {"mutex": float(line["mutex"]), "condvar": float(line["condvar"])}
    io = TIMED_IO.match(stderr, line.end()) if timed_io else None
    return states | ({"io": float(io["io"])} if io else {})


def print_thread(
    tid: int,
    by_thread: dict[tuple[int, str], float],
    over: float,
    lived: float,
    line: re.Match[str],
    stderr: str,
    each: list[str],
) -> None:
    """One thread's clock against the tool: its timed calls, and where waitclock read the
    kernel's clock, its time blocked (life less on a CPU and runnable) against the tool's
    time in any waiting state (which also counts the runnable ends of its waits)."""
    scheduled = SCHEDULED.match(stderr, line.end())
    if scheduled:
        blocked = lived - float(scheduled["run"]) - float(scheduled["runq"])
        waiting = sum(ns for (t, s), ns in by_thread.items() if t == tid and s != "running")
        each.append(
            f"blocked {100 * blocked / lived:.1f}% waiting read {100 * waiting / over:.1f}%"
        )
    states = ", ".join(
        f"{s} {100 * ns / over:.1f}%" for (t, s), ns in sorted(by_thread.items()) if t == tid
    )
    print(f"    tid {tid}: {'; '.join(each)} ({states})")


def started(argv: list[str], **kwargs: object) -> subprocess.Popen[str]:
    MEMCACHED_PID.unlink(missing_ok=True)
    NGINX_PID.unlink(missing_ok=True)
    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kwargs
    )  # type: ignore[call-overload]


def ended(program: Program, proc: subprocess.Popen[str]) -> str:
    """The program's stderr once it has ended; a server's after its client's load."""
    if program.server:
        serving(program.server)
        subprocess.run(program.server.client, check=True, stdout=subprocess.DEVNULL)
        os.kill(int(program.server.pid_file.read_text()), program.server.stop)
    _out, err = proc.communicate()
    return err


def serving(server: Server) -> None:
    """Returns once the server listens on its port and has written its pid file (60 s at
    most: bpftrace's start takes seconds on a loaded machine)."""
    for _ in range(600):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", server.port)) == 0 and server.pid_file.exists():
                return
        time.sleep(0.1)
    raise SystemExit(f"nothing listens on port {server.port}")


def run_alone(program: Program) -> Reading:
    proc = started(list(program.argv))
    err = ended(program, proc)
    if proc.returncode != 0:
        raise SystemExit(f"{program.argv} failed:\n{err[-2000:]}")
    truth = truth_of(program, err)
    return truth, truth, lived_of(program, err)


def run_mode(mode: str, program: Program) -> Reading:
    with tempfile.TemporaryDirectory(prefix="perfsleuth-fresh.") as work:
        cmd = [*PERFSLEUTH, "record", "--mode", mode, "--", *program.argv]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = started(cmd, cwd=work, env=env)
        err = ended(program, proc)
        if proc.returncode != 0:
            raise SystemExit(f"record --mode {mode} failed:\n{err[-2000:]}")
        truth = truth_of(program, err)
        seen = perfsleuth_reading(Path(work), mode, program, err)
        return truth, seen, lived_of(program, err)


def run_pt_pmp(program: Program) -> Reading:
    with tempfile.TemporaryDirectory(prefix="perfsleuth-fresh-pmp.") as work:
        samples = Path(work) / "samples"
        target = started(list(program.argv))
        pmp = subprocess.Popen(
            ["pt-pmp", "--pid", str(target.pid), "--iterations", "100000", "--interval", "0",
             "--save-samples", str(samples)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        err = ended(program, target)
        os.killpg(pmp.pid, signal.SIGTERM)
        pmp.wait()
        truth = truth_of(program, err)
        aggregated = subprocess.run(
            ["pt-pmp", str(samples)], capture_output=True, text=True, check=True
        ).stdout
        return truth, pt_pmp_shares(aggregated, program, truth), lived_of(program, err)


def pt_pmp_shares(aggregated: str, program: Program, truth: dict[str, float]) -> dict[str, float]:
    counts = {s: 0 for s in truth}
    stacks = {"": 0, MAIN: 0}
    for line in aggregated.splitlines():
        count, _, stack = line.strip().partition(" ")
        if not count.isdigit():
            continue
        prefix = "" if "start_thread" in stack or program.processes else MAIN
        stacks[prefix] += int(count)
        state = next((s for s, marks in program.marks if any(m in stack for m in marks)), "")
        if prefix + state in counts:
            counts[prefix + state] += int(count)
    print(f"  pt-pmp: {stacks['']} stacks of the started threads, {stacks[MAIN]} of the main")
    return {s: n / max(stacks[MAIN if s.startswith(MAIN) else ""], 1) for s, n in counts.items()}


def reading(tool: str, program: Program) -> Reading:
    if tool == "alone":
        return run_alone(program)
    return run_pt_pmp(program) if tool == "pt-pmp" else run_mode(tool, program)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", default="rwtable,plcount")
    parser.add_argument("--tools", default="alone,wall,offcpu,all,pt-pmp")
    args = parser.parse_args()
    build(args.programs.split(","))
    diffs: dict[tuple[str, str, str], list[float]] = {}
    lived: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.runs):
        for name in args.programs.split(","):
            program = PROGRAMS[name]
            for tool in args.tools.split(","):
                truth, seen, ns = reading(tool, program)
                line = ", ".join(
                    f"{s} {100 * truth[s]:.1f}% read {100 * seen[s]:.1f}%" for s in truth
                )
                print(f"  {name:8s} {tool:7s} {line}, threads lived {ns / 1e9:.2f} s", flush=True)
                lived.setdefault((name, tool), []).append(ns)
                for s in truth if tool != "alone" else ():
                    diffs.setdefault((name, tool, s), []).append(100 * (seen[s] - truth[s]))
    load = os.getloadavg()[0]
    print(f"\ntool - program, points ({args.runs} runs, load now {load:.1f})")
    for (name, tool, state), d in diffs.items():
        values = " ".join(f"{v:+.1f}" for v in d)
        print(f"{name:8s} {tool:7s} {state:8s} median {statistics.median(d):+5.1f}   {values}")
    print_slowdowns(lived)
    return 0


def print_slowdowns(lived: dict[tuple[str, str], list[float]]) -> None:
    """The program's threads' lifetimes under each tool over alone (its perturbation),
    round by round."""
    print("\nthreads' lifetime under the tool / alone, per round")
    for (name, tool), values in lived.items():
        alone = lived.get((name, "alone"))
        if alone and tool != "alone":
            ratios = [v / a for v, a in zip(values, alone, strict=False)]
            each = " ".join(f"{r:.2f}" for r in ratios)
            print(f"{name:10s} {tool:7s} median {statistics.median(ratios):.2f}x   {each}")


if __name__ == "__main__":
    sys.exit(main())
