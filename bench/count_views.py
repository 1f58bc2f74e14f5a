#!/usr/bin/env python3
"""Benchmark: views of exact counts — perfsleuth top/annotate/diff vs cg_annotate/cg_diff.

    .venv/bin/python bench/count_views.py [--program speedtest1|lua|lz4|brotli|cjson|libyaml|
                                          expat|pcre2|jq|bzip2|mawk|xmllint|tcc|bc|m4|
                                          gawk|mujs]
                                          [--size 5] [--runs 3] [--before CHECKOUT]

The workload (--program) is built from a Debian source package, fetched with `apt-get
source` through a deb-src list of its own (the machine's apt setup is left alone), and
kept in bench/out/PROGRAM/ with two count runs (`perfsleuth record --mode count`, sizes
N and N+1) and two cachegrind runs of the same commands in the same environment:

* speedtest1 (default): SQLite's micro-optimisation workflow, speedtest1 built from
  Debian's sqlite3 source (the 250k-line amalgamation, gcc -O2 -g; needs tclsh to make
  the amalgamation), --size N and N+1; annotated function sqlite3VdbeExec.
* lua: a small program, where a view's fixed cost (Python's start, its imports) weighs
  most: Lua 5.4 built from Debian's lua5.4 source (gcc -O2 -g, 30 files), running a
  script of table sorts, string formatting, hashing and recursion (work.lua, written
  here) on N*40,000 and (N+1)*40,000 items: ~0.9 G instructions; annotated function
  luaV_execute. Lua seeds its string hashes from the clock, so the two runs' counts
  differ a little beyond the size.
* lz4, brotli: two small compressors from Debian's sources (gcc -O2 -g) that the earlier
  rounds had not seen, compressing 1 MB of their own C sources (`lz4 -9` and `-10`,
  `brotli -q 7` and `-q 8`); `annotate` lists their hottest function.
* cjson: cJSON 1.7.15 from Debian's cjson source (gcc -O2 -g) in a driver written here
  that parses, walks (recursively), prints and frees a 0.7 MB JSON document N times
  (N and N+1: ~110 M instructions a round); recursive (callgrind's parse_value'2); its
  `annotate` lists print_value.
* libyaml: libyaml 0.2.5 from Debian's libyaml source (gcc -O2 -g) in a driver written
  here that loads a generated 1.7 MB block-style document and emits it again, N and N+1
  times (~450 M instructions a round); `annotate` lists yaml_parser_fetch_more_tokens.
* expat: expat 2.5.0 from Debian's expat source (gcc -O2 -g, an expat_config.h written
  here) in a driver that parses a generated 2 MB XML document (attributes, text, CDATA,
  entity references, UTF-8) N and N+1 times (~157 M instructions a round), its hash
  salt fixed (expat takes it from getrandom, and its hash tables' collisions move the
  counts); `annotate` lists normal_contentTok.
* pcre2: PCRE2 10.42 from Debian's pcre2 source (gcc -O2 -g, its generic config.h, no
  JIT) in a driver that compiles 5 patterns and finds every match in 1 MB of generated log
  lines, N and N+1 times (~238 M instructions a round; its compiler recurses,
  compile_regex'2); `annotate` lists pcre2_match_8.
* jq: jq 1.6 from Debian's jq source and patches (gcc -O2 -g, defines for what its
  configure finds: the tarball has none) running a filter of selects, sorts, groups and a
  recursive descent over a generated 1.2 MB array read N times (~0.8 G instructions a
  read; its value freeing recurses through two functions, jv_free'2); `annotate` lists
  jq_next, its bytecode interpreter.
* bzip2: bzip2 1.0.8 from Debian's bzip2 source (gcc -O2 -g) compressing 1 MB of its own
  C sources at -(N+4) and -(N+5); `annotate` lists mainSort.
* mawk: mawk 1.3.4-20200120 from Debian's mawk source (its configure, gcc -O2 -g) running
  a script of field splits, arrays, regex matches, gsub and sprintf over 1 MB of
  generated log lines read N times, and a recursive fib(22) (~180 M instructions a read;
  awk functions run a nested execute(), execute'2); `annotate` lists execute.
* xmllint: xmllint of libxml2 2.9.14 from Debian's libxml2 source and patches (its
  configure, static, gcc -O2 -g) evaluating an XPath expression over the 2 MB document
  of the expat bench, read N times (~440 M instructions a read; its XPath evaluator
  recurses, xmlXPathCompOpEval'2); `annotate` lists xmlXPathCompOpEval.
* tcc: the Tiny C Compiler 0.9.27+git20200814 from Debian's tcc source (its configure
  with --debug, which keeps the symbols, and -O2 -g) compiling its own source as one
  unit (tcc.c with ONE_SOURCE, 20,000 lines with its headers) N times (~225 M
  instructions a compile; its parser recurses through unary, expr_cond, block and decl0
  entered from many places, unary'2); `annotate` lists next_nomacro1, its tokenizer.
* bc: GNU bc 1.07.1 from Debian's bc source and patches (its configure, gcc -O2 -g)
  running a script of a recursive bc function and pi, e, a logarithm and a square root
  to 600 digits, read N times (~1.6 G instructions a read; its multiplication recurses,
  _bc_rec_mul'2); `annotate` lists _bc_rec_mul.
* m4: GNU m4 1.4.19 from Debian's m4 source (its configure, gcc -O2 -g) expanding a script
  of a recursive fib macro, translit, patsubst (gnulib's regex) and format over 3,000
  rows, read N times (~370 M instructions a read; it expands macro arguments as it
  collects them, expand_token'2); `annotate` lists expand_token.
* gawk: GNU awk 5.2.1 from Debian's gawk source and patches (its configure, gcc -O2 -g)
  counting the words of its own ChangeLogs and NEWS (0.9 MB of text) read N times, and
  listing the commonest through a user-defined PROCINFO["sorted_in"] comparison, which
  the sort calls back into the interpreter (r_interpret'2); `annotate` lists r_interpret.
* mujs: MuJS 1.3.2 from Debian's mujs source and patches (its Makefile, the library one
  unit: one.c includes every .c file; gcc -O2 -g) running a script of a recursive fib,
  a recursive tree built, summed and through JSON, a sort with a JavaScript comparator
  (Array.prototype.sort calls back into the interpreter, jsR_run'2), string building
  and two regular expressions, N and N+1 rounds (~590 M instructions a round);
  `annotate` lists jsR_run, its bytecode interpreter.

Then, interleaved, --runs times, the CPU time (user + system) and wall time of:

  perfsleuth top            the function table          cg_annotate (its function table
  perfsleuth annotate FUNC  sqlite3VdbeExec's lines       and auto-annotated sources,
  perfsleuth annotate --all every file, 8 lines context   8 lines of context)
  perfsleuth diff A B       every function and line       cg_diff A B (a diff file) and
                            whose count changed           cg_annotate of that file
  perfsleuth diff --format json  the same as one JSON document (for scripts)

and prints the medians and the ratio of each perfsleuth view to its cachegrind tool.
CPU time is the measure: the machine is shared and loaded, so wall time waits.
Every command runs once before the timed rounds (a stored run's files in answers/ are
kept by the first view that asks, as for a user), and Python writes its bytecode caches.
With --before, `top`, `diff` and `diff --format json` of another checkout of perfsleuth
(its src/ first on PYTHONPATH, on a copy of the store: each code keeps its own answers/
files) are timed in the same rounds, so a change is measured against the code before it
on the same load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = Path(sys.executable)
DEB_SRC = (
    "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian bookworm main\n"
)
LUA_SCRIPT = """\
local n = tonumber(arg[1]) or 200000
local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
local t, words = {}, {}
for i = 1, n do t[i] = (i * 7919) % n end
table.sort(t)
for i = 1, n // 10 do words[#words + 1] = string.format("w%05d", i % 977) end
local counts = {}
for _, w in ipairs(words) do counts[w] = (counts[w] or 0) + 1 end
print(fib(22), #t, #words, counts["w00001"], table.concat(words, ","):len())
"""


def sh(cmd: str, cwd: Path) -> None:
    subprocess.run(["bash", "-c", cmd], check=True, cwd=cwd)


def debian_source(package: str, out: Path) -> None:
    """The source package's files downloaded into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "apt" / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (out / "apt" / "sources.list").write_text(DEB_SRC)
    apt = (
        f"-o Dir::Etc::SourceList={out}/apt/sources.list -o Dir::Etc::SourceParts=/dev/null "
        f"-o Dir::State::Lists={out}/apt/lists"
    )
    sh(
        f"apt-get -q {apt} update >/dev/null && apt-get -q {apt} source --download-only {package}",
        out,
    )


def patched_source(package: str, out: Path, tarball: str) -> Path:
    """The source package unpacked in `out` with Debian's patches applied: its folder.
    `tarball`: how its upstream tarball's name ends (gz, xz)."""
    debian_source(package, out)
    sh(f"tar xf {package}_*.orig.tar.{tarball} && tar xf {package}_*.debian.tar.xz", out)
    src = next(p for p in out.glob(f"{package}-*") if p.is_dir())
    sh(
        "for p in $(cat ../debian/patches/series); do patch -p1 -s < ../debian/patches/$p; done",
        src,
    )
    return src


def speedtest1(out: Path) -> None:
    """speedtest1 built from Debian's sqlite3 source."""
    debian_source("sqlite3", out)
    sh("tar xf sqlite3_*.orig.tar.xz && cd sqlite3-*/ && ./configure -q && make -s sqlite3.c", out)
    src = next(out.glob("sqlite3-*/"))
    for name in ("sqlite3.c", "sqlite3.h", "test/speedtest1.c"):
        shutil.copy(src / name, out / Path(name).name)
    sh("gcc -O2 -g -I. -o speedtest1 speedtest1.c sqlite3.c -lpthread -lm", out)


def lua(out: Path) -> None:
    """The Lua 5.4 interpreter built from Debian's lua5.4 source, and the script it runs."""
    debian_source("lua5.4", out)
    sh("tar xf lua5.4_*.orig.tar.gz", out)
    src = next(out.glob("lua-5.4*/src"))
    files = " ".join(sorted(p.name for p in src.glob("*.c") if p.name != "luac.c"))
    sh(f"gcc -O2 -g -DLUA_USE_LINUX -o {out}/lua {files} -lm -ldl", src)
    (out / "work.lua").write_text(LUA_SCRIPT)


def corpus(out: Path, sources: Path) -> None:
    """The text lz4 and brotli compress: the package's own C sources, about 1 MB."""
    text = b"".join(p.read_bytes() for p in sorted(sources.rglob("*.c")))
    (out / "corpus.txt").write_bytes((text * (1 + (1 << 20) // max(1, len(text))))[: 1 << 20])


def lz4(out: Path) -> None:
    """The lz4 command from Debian's lz4 source (gcc -O2 -g), compressing at -9 and up:
    a program the views' earlier rounds had not seen."""
    debian_source("lz4", out)
    sh("tar xf lz4_*.orig.tar.gz", out)
    src = next(p for p in out.glob("lz4-*") if p.is_dir())
    sh(f"make -s -C programs lz4 CFLAGS='-O2 -g' && cp programs/lz4 {out}/lz4", src)
    corpus(out, src)


def brotli(out: Path) -> None:
    """The brotli command from Debian's brotli source (gcc -O2 -g), quality 7 and up."""
    debian_source("brotli", out)
    sh("tar xf brotli_*.orig.tar.gz", out)
    src = next(p for p in out.glob("brotli-*") if p.is_dir())
    sh(
        f"gcc -O2 -g -Ic/include c/common/*.c c/dec/*.c c/enc/*.c c/tools/brotli.c -lm "
        f"-o {out}/brotli",
        src,
    )
    corpus(out, src)


CJSON_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cJSON.h"

static long count_numbers(const cJSON *item)
{
    long n = cJSON_IsNumber(item) ? 1 : 0;
    for (const cJSON *c = item->child; c; c = c->next)
        n += count_numbers(c);
    return n;
}

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n + 1);
    if (fread(text, 1, n, f) != (size_t)n) return 2;
    text[n] = 0;
    fclose(f);
    size_t out = 0;
    long numbers = 0;
    for (int i = 0; i < atoi(argv[2]); i++) {
        cJSON *doc = cJSON_Parse(text);
        if (!doc) return 1;
        numbers += count_numbers(doc);
        char *s = cJSON_PrintUnformatted(doc);
        out += strlen(s);
        free(s);
        cJSON_Delete(doc);
    }
    printf("%zu bytes printed, %ld numbers\n", out, numbers);
    return 0;
}
"""


def json_document(seed: int = 42, items: int = 12) -> str:
    """A nested JSON document of numbers, strings and literals, the same on every call."""
    import json
    import random

    rng = random.Random(seed)

    def node(depth: int) -> object:
        if depth == 0 or rng.random() < 0.2:
            return rng.choice(
                [rng.randint(-(10**6), 10**6), rng.random() * 1000, f"s{rng.randint(0, 9999)}"]
                + [True, None]
            )
        if rng.random() < 0.5:
            return [node(depth - 1) for _ in range(rng.randint(1, 6))]
        return {f"k{i}": node(depth - 1) for i in range(rng.randint(1, 6))}

    return json.dumps([node(8) for _ in range(items)], indent=1)


def cjson(out: Path) -> None:
    """cJSON from Debian's cjson source (gcc -O2 -g) in a driver that parses, walks,
    prints and frees a generated document."""
    debian_source("cjson", out)
    sh("tar xf cjson_*.orig.tar.gz", out)
    src = next(p for p in out.glob("cJSON-*") if p.is_dir())
    for name in ("cJSON.c", "cJSON.h"):
        shutil.copy(src / name, out / name)
    (out / "drive.c").write_text(CJSON_DRIVER)
    (out / "data.json").write_text(json_document())
    sh("gcc -O2 -g -o cjson drive.c cJSON.c -lm", out)


YAML_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "yaml.h"

static unsigned char out[1 << 24];

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *text = malloc(n);
    if (fread(text, 1, n, f) != (size_t)n) return 2;
    fclose(f);
    size_t written = 0, nodes = 0;
    for (int i = 0; i < atoi(argv[2]); i++) {
        yaml_parser_t parser;
        yaml_emitter_t emitter;
        yaml_document_t doc;
        yaml_parser_initialize(&parser);
        yaml_parser_set_input_string(&parser, text, n);
        if (!yaml_parser_load(&parser, &doc)) return 1;
        nodes += doc.nodes.top - doc.nodes.start;
        yaml_emitter_initialize(&emitter);
        yaml_emitter_set_output_string(&emitter, out, sizeof out, &written);
        yaml_emitter_open(&emitter);
        if (!yaml_emitter_dump(&emitter, &doc)) return 1;
        yaml_emitter_close(&emitter);
        yaml_emitter_delete(&emitter);
        yaml_parser_delete(&parser);
    }
    printf("%zu nodes, %zu bytes emitted\n", nodes, written);
    return 0;
}
"""


def yaml_document(seed: int = 42, items: int = 12) -> str:
    """A block-style YAML document of nested sequences and mappings (1.7 MB)."""
    import random

    rng = random.Random(seed)

    def node(depth: int, indent: int) -> str:
        pad = "  " * indent
        if depth == 0 or rng.random() < 0.2:
            scalars = [str(rng.randint(-(10**6), 10**6)), f"{rng.random() * 1000:.4f}"]
            scalars += [f"s{rng.randint(0, 9999)}", "true", "null"]
            scalars.append(f"'quoted {rng.randint(0, 99)}'")
            return f" {rng.choice(scalars)}\n"
        if rng.random() < 0.5:
            count = rng.randint(1, 6)
            return "\n" + "".join(f"{pad}-{node(depth - 1, indent + 1)}" for _ in range(count))
        count = rng.randint(1, 6)
        return "\n" + "".join(f"{pad}k{i}:{node(depth - 1, indent + 1)}" for i in range(count))

    return "".join(f"item{i}:{node(8, 1)}" for i in range(items))


def libyaml(out: Path) -> None:
    """libyaml 0.2.5 from Debian's libyaml source (gcc -O2 -g) in a driver that loads a
    generated document and emits it again, N times."""
    debian_source("libyaml", out)
    sh("tar xf libyaml_*.orig.tar.gz", out)
    src = next(p for p in out.glob("libyaml-*") if p.is_dir())
    (out / "drive.c").write_text(YAML_DRIVER)
    (out / "data.yaml").write_text(yaml_document())
    version = "-DYAML_VERSION_MAJOR=0 -DYAML_VERSION_MINOR=2 -DYAML_VERSION_PATCH=5"
    sh(
        f"gcc -O2 -g -I{src}/include {version} '-DYAML_VERSION_STRING=\"0.2.5\"' "
        f"-o yaml drive.c {src}/src/*.c",
        out,
    )


EXPAT_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "expat.h"

struct tally { long elements, attributes, chars, depth, deepest; unsigned long hash; };

static void XMLCALL start(void *data, const XML_Char *name, const XML_Char **atts)
{
    struct tally *t = data;
    t->elements++;
    if (++t->depth > t->deepest) t->deepest = t->depth;
    for (; *atts; atts += 2) {
        t->attributes++;
        t->hash = t->hash * 31 + strlen(atts[1]);
    }
    t->hash = t->hash * 31 + name[0];
}

static void XMLCALL end(void *data, const XML_Char *name)
{
    (void)name;
    ((struct tally *)data)->depth--;
}

static void XMLCALL text(void *data, const XML_Char *s, int len)
{
    struct tally *t = data;
    t->chars += len;
    t->hash = t->hash * 31 + (unsigned char)s[0];
}

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *doc = malloc(n);
    if (fread(doc, 1, n, f) != (size_t)n) return 2;
    fclose(f);
    struct tally t = {0};
    for (int i = 0; i < atoi(argv[2]); i++) {
        XML_Parser p = XML_ParserCreate(NULL);
        XML_SetHashSalt(p, 42); /* not getrandom: the counts repeat */
        XML_SetUserData(p, &t);
        XML_SetElementHandler(p, start, end);
        XML_SetCharacterDataHandler(p, text);
        for (long off = 0; off < n; off += 65536) {
            long len = n - off < 65536 ? n - off : 65536;
            if (XML_Parse(p, doc + off, (int)len, off + len == n) == XML_STATUS_ERROR) {
                fprintf(stderr, "%s at line %lu\n", XML_ErrorString(XML_GetErrorCode(p)),
                        XML_GetCurrentLineNumber(p));
                return 1;
            }
        }
        XML_ParserFree(p);
    }
    printf("%ld elements, %ld attributes, %ld chars, depth %ld, hash %lx\n", t.elements,
           t.attributes, t.chars, t.deepest, t.hash);
    return 0;
}
"""

EXPAT_CONFIG = """\
#define EXPAT_CONFIG_H 1
#define BYTEORDER 1234
#define HAVE_GETRANDOM 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define XML_CONTEXT_BYTES 1024
#define XML_DTD 1
#define XML_NS 1
#define XML_DEV_URANDOM 1
"""


def xml_document(seed: int = 42, size: int = 2_000_000) -> str:
    """A nested XML document of elements with attributes, text, CDATA, entity
    references and non-ASCII characters (2 MB)."""
    import random

    rng = random.Random(seed)
    tags = ["item", "entry", "x:record", "group", "field", "note"]

    def node(depth: int, pad: str) -> str:
        tag = rng.choice(tags)
        attrs = "".join(f' a{j}="{rng.randint(0, 99999)}"' for j in range(rng.randint(0, 4)))
        if depth == 0 or rng.random() < 0.25:
            body = rng.choice(
                [
                    f"text {rng.randint(0, 9999)} &amp; more",
                    f"{rng.random() * 1000:.4f}",
                    "<![CDATA[raw <data> here]]>",
                    f"caf\u00e9 n\u00b0{rng.randint(0, 99)}",
                    "",
                ]
            )
            return f"{pad}<{tag}{attrs}>{body}</{tag}>\n"
        kids = "".join(node(depth - 1, pad + "  ") for _ in range(rng.randint(1, 5)))
        return f"{pad}<{tag}{attrs}>\n{kids}{pad}</{tag}>\n"

    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<catalog xmlns:x="urn:x">\n']
    length = len(out[0])
    while length < size:
        out.append(node(7, "  "))
        length += len(out[-1])
    return "".join(out) + "</catalog>\n"


def expat(out: Path) -> None:
    """expat 2.5.0 from Debian's expat source (gcc -O2 -g) in a driver that parses a
    generated document N times, with a fixed hash salt."""
    debian_source("expat", out)
    sh("tar xf expat_*.orig.tar.gz", out)
    lib = next(out.glob("libexpat-*/expat/lib"))
    (out / "expat_config.h").write_text(EXPAT_CONFIG)
    (out / "drive.c").write_text(EXPAT_DRIVER)
    (out / "data.xml").write_text(xml_document(), encoding="utf-8")
    sh(
        f"gcc -O2 -g -I. -I{lib} -o expat drive.c {lib}/xmlparse.c {lib}/xmlrole.c {lib}/xmltok.c",
        out,
    )


PCRE2_DRIVER = r"""
#define PCRE2_CODE_UNIT_WIDTH 8
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pcre2.h"

static const char *patterns[] = {
    "\\b(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\b",
    "(?i)error|warn(?:ing)?|fail(?:ed|ure)",
    "\"(GET|POST|PUT) ([^ \"]+) HTTP/1\\.[01]\"",
    "user=([a-z]+)_(\\w+)@example\\.(?:com|org)",
    "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}",
};

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *text = malloc(n);
    if (fread(text, 1, n, f) != (size_t)n) return 2;
    fclose(f);
    long matches[5] = {0};
    for (int round = 0; round < atoi(argv[2]); round++) {
        for (int p = 0; p < 5; p++) {
            int err;
            PCRE2_SIZE off;
            pcre2_code *re = pcre2_compile((PCRE2_SPTR)patterns[p], PCRE2_ZERO_TERMINATED, 0,
                                           &err, &off, NULL);
            if (!re) return 1;
            pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
            PCRE2_SIZE start = 0;
            while (pcre2_match(re, text, n, start, 0, md, NULL) > 0) {
                PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
                matches[p]++;
                start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
            }
            pcre2_match_data_free(md);
            pcre2_code_free(re);
        }
    }
    printf("%ld %ld %ld %ld %ld matches\n", matches[0], matches[1], matches[2], matches[3],
           matches[4]);
    return 0;
}
"""

PCRE2_SOURCES = (
    "auto_possess chartables compile config context convert dfa_match error extuni "
    "find_bracket jit_compile maketables match match_data newline ord2utf pattern_info "
    "script_run serialize string_utils study substitute substring tables ucd valid_utf xclass"
)


def log_lines(seed: int = 42, size: int = 1_000_000) -> str:
    """Web-server-like log lines: timestamps, addresses, requests, e-mail addresses, words."""
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "ok", "done", "Error", "warning", "failed"]
    words.append("retry")
    out: list[str] = []
    length = 0
    while length < size:
        ip = ".".join(str(rng.randint(0, 255)) for _ in range(4))
        stamp = f"2026-12-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        stamp += f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        request = f'"{rng.choice(["GET", "POST", "PUT"])} /api/v{rng.randint(1, 3)}/'
        request += f'{rng.choice(words)} HTTP/1.1"'
        user = f"user={rng.choice(words).lower()}_{rng.randint(0, 999)}@example."
        user += rng.choice(["com", "org", "net"])
        rest = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))
        out.append(f"{stamp} {ip} {request} {user} {rest}\n")
        length += len(out[-1])
    return "".join(out)


def pcre2(out: Path) -> None:
    """PCRE2 10.42 from Debian's pcre2 source (gcc -O2 -g, its generic config, no JIT) in
    a driver that compiles 5 patterns and finds every match in 1 MB of log lines, N times."""
    debian_source("pcre2", out)
    sh("tar xf pcre2_*.orig.tar.gz", out)
    src = next(out.glob("pcre2-*/src"))
    for generic, name in (
        ("config.h.generic", "config.h"),
        ("pcre2.h.generic", "pcre2.h"),
        ("pcre2_chartables.c.dist", "pcre2_chartables.c"),
    ):
        shutil.copy(src / generic, src / name)
    (out / "drive.c").write_text(PCRE2_DRIVER)
    (out / "data.log").write_text(log_lines())
    files = " ".join(f"{src}/pcre2_{name}.c" for name in PCRE2_SOURCES.split())
    sh(
        f"gcc -O2 -g -DHAVE_CONFIG_H -DPCRE2_CODE_UNIT_WIDTH=8 -DPCRE2_STATIC -I{src} "
        f"-o pcre2 drive.c {files}",
        out,
    )


JQ_FILTER = """\
[.[] | select(.age > 30) | {name, tags: (.tags|sort), score: (.scores|add), extra}]
| sort_by(.score)
| {top: .[:500], groups: (group_by(.tags[0]) | map({k: .[0].tags[0], n: length})),
   nums: ([..|numbers]|add)}
"""
# what jq 1.6's configure finds on Debian 12 (jq's git tarball has no configure script)
JQ_DEFINES = (
    "-DIEEE_8087 -DHAVE_ISATTY -DUSE_ISATTY -DHAVE_MEMMEM -DHAVE_MKSTEMP -DHAVE_GMTIME "
    "-DHAVE_GMTIME_R -DHAVE_STRFTIME -DHAVE_STRPTIME -DHAVE_TIMEGM -DHAVE_MKTIME -DHAVE_FREXP "
    "-DHAVE_MODF -DHAVE_FLOOR -DHAVE_SQRT -DHAVE_POW -DHAVE_LOG -DHAVE_ALLOCA -DHAVE_ALLOCA_H "
    "-DHAVE_PTHREAD_KEY_CREATE -DHAVE_PTHREAD_ONCE -DHAVE___THREAD -DHAVE_TM_TM_GMT_OFF "
    "-DHAVE_SETLOCALE -DUSE_LOCALE"
)
JQ_SOURCES = (
    "main builtin bytecode compile execute jq_test jv jv_alloc jv_aux jv_dtoa jv_file jv_parse "
    "jv_print jv_unicode linker locfile util lexer parser"
)


def people(seed: int = 42, items: int = 1200) -> str:
    """A JSON array of records with nested extras (1.2 MB), the same on every call."""
    import json
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]

    def node(depth: int) -> object:
        if depth > 3 or rng.random() < 0.2:
            return rng.choice([rng.randint(-1000, 100000), rng.random() * 1000, "w", True, None])
        if rng.random() < 0.5:
            return [node(depth + 1) for _ in range(rng.randint(0, 5))]
        return {f"{rng.choice(words)}{i}": node(depth + 1) for i in range(rng.randint(1, 5))}

    records = [
        {
            "id": i,
            "name": f"user{i:05d}",
            "age": rng.randint(18, 80),
            "tags": rng.sample(words, rng.randint(1, 4)),
            "scores": [rng.randint(0, 100) for _ in range(rng.randint(1, 8))],
            "active": rng.random() < 0.6,
            "extra": node(0),
        }
        for i in range(items)
    ]
    return json.dumps(records, indent=1)


def jq(out: Path) -> None:
    """jq 1.6 from Debian's jq source with its patches (gcc -O2 -g), its bytecode
    interpreter running a filter of selects, sorts, groups and a recursive descent over a
    generated 1.2 MB array, read N times (its value freeing recurses through two functions,
    jv_free'2)."""
    debian_source("jq", out)
    sh("tar xf jq_*.orig.tar.gz && tar xf jq_*.debian.tar.xz", out)
    src = next(p for p in out.glob("jq-*") if p.is_dir())
    patches = "../debian/patches"
    sh(f"for p in $(cat {patches}/series); do patch -p1 -s < {patches}/$p; done", src)
    # what jq's Makefile makes with sed: builtin.jq as C string literals, and version.h
    jq_lines = (src / "src" / "builtin.jq").read_text().splitlines()
    quoted = (line.replace("\\", "\\\\").replace('"', '\\"') for line in jq_lines)
    (src / "src" / "builtin.inc").write_text("".join(f'"{line}\\n"\n' for line in quoted))
    (src / "src" / "version.h").write_text('#define JQ_VERSION "1.6"\n')
    files = " ".join(f"src/{name}.c" for name in JQ_SOURCES.split())
    sh(f"gcc -O2 -g {JQ_DEFINES} -I. -Isrc -o {out}/jq {files} -lm -lpthread", src)
    (out / "work.jq").write_text(JQ_FILTER)
    (out / "data.json").write_text(people())


def bzip2(out: Path) -> None:
    """bzip2 1.0.8 from Debian's bzip2 source (gcc -O2 -g), compressing 1 MB of its own
    C sources at -N."""
    debian_source("bzip2", out)
    sh("tar xf bzip2_*.orig.tar.gz", out)
    src = next(p for p in out.glob("bzip2-*") if p.is_dir())
    files = "blocksort huffman crctable randtable compress decompress bzlib bzip2"
    sources = " ".join(f"{name}.c" for name in files.split())
    sh(f"gcc -O2 -g -D_FILE_OFFSET_BITS=64 -o {out}/bzip2 {sources}", src)
    corpus(out, src)


MAWK_SCRIPT = """\
function fib(k) { return k < 2 ? k : fib(k - 1) + fib(k - 2) }
{
    bytes[$4] += $6; hits[$3]++
    for (i = 7; i <= NF; i++) words[$i]++
    if ($5 ~ /^5[0-9][0-9]$/) errors++
    n = split($4, parts, "/"); top[parts[3]]++
    line = $0; gsub(/[aeiou]/, "", line); shrunk += length(line)
    key = sprintf("%s-%03d", substr($1, 1, 6), $5); per[key]++
}
END {
    for (w in words) total += words[w]
    for (p in bytes) s += bytes[p]
    print NR, total, s, errors, shrunk, length(per), fib(22)
}
"""


def access_log(seed: int = 42, size: int = 1_000_000) -> str:
    """Access-log lines: date, address, method, path, status, bytes and some words."""
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
    words += ["lambda", "mu", "nu", "xi", "pi"]
    out: list[str] = []
    length = 0
    while length < size:
        ip = ".".join(str(rng.randint(0, 255)) for _ in range(4))
        stamp = (
            f"{rng.randint(1, 28):02d}/Dec/2026:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        )
        request = (
            f"{rng.choice(['GET', 'POST', 'PUT'])} /api/{rng.choice(words)}/{rng.randint(1, 999)}"
        )
        status = rng.choice([200, 200, 200, 404, 500])
        rest = " ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
        out.append(f"{stamp} {ip} {request} {status} {rng.randint(100, 99999)} {rest}\n")
        length += len(out[-1])
    return "".join(out)


def mawk(out: Path) -> None:
    """mawk 1.3.4 from Debian's mawk source (its configure, gcc -O2 -g)."""
    debian_source("mawk", out)
    sh("tar xf mawk_*.orig.tar.gz", out)
    src = next(p for p in out.glob("mawk-*") if p.is_dir())
    sh(f"./configure -q CC=gcc CFLAGS='-O2 -g' >/dev/null && make -s && cp mawk {out}/mawk", src)
    (out / "work.awk").write_text(MAWK_SCRIPT)
    (out / "data.log").write_text(access_log())


XPATH = (
    "sum(//@a0) + count(//*[local-name()='record'][@a1 > 50000]//field)"
    " + count(//note[contains(., 'caf')])"
)


def xmllint(out: Path) -> None:
    """xmllint of libxml2 2.9.14 from Debian's source and patches (static, gcc -O2 -g)."""
    src = patched_source("libxml2", out, "xz")
    options = "--disable-shared --without-python --without-zlib --without-lzma --without-icu"
    options += " --without-http --without-ftp --without-threads"
    # the patches touch Makefile.am: make would run automake again, which is not installed
    tools = "ACLOCAL=: AUTOMAKE=: AUTOCONF=: AUTOHEADER=:"
    sh(
        f"./configure -q {options} CC=gcc CFLAGS='-O2 -g' >/dev/null "
        f"&& make -s -j2 xmllint {tools} && cp xmllint {out}/xmllint",
        src,
    )
    (out / "data.xml").write_text(xml_document(), encoding="utf-8")


TCC_COPIES = 8
TCC_FLAGS = (
    "-B. -Iinclude -DONE_SOURCE=1 -DTCC_TARGET_X86_64 -DCONFIG_TRIPLET='\"x86_64-linux-gnu\"'"
)


def tcc(out: Path) -> None:
    """tcc from Debian's tcc source (--debug keeps its symbols; -O2 -g), and its own source
    to compile."""
    debian_source("tcc", out)
    src = out / "tcc-src"  # the tarball has no folder of its own
    src.mkdir(exist_ok=True)
    sh(f"tar xf {out}/tcc_*.orig.tar.bz2", src)
    sh(
        "./configure --cc=gcc --debug --extra-cflags='-O2 -g' >/dev/null && make -s -j2 tcc "
        f"&& cp tcc {out}/tcc && cp -r include *.c *.h *.def {out}/",
        src,
    )
    for i in range(TCC_COPIES):  # one unit a compile: tcc -c writes each one's .o
        shutil.copy(out / "tcc.c", out / f"u{i}.c")


BC_SCRIPT = """\
define f(n) { if (n < 2) return n; return f(n-1) + f(n-2); }
f(18)
scale=600
a(1)*4
e(1)
l(2)
sqrt(2)
"""


def bc(out: Path) -> None:
    """GNU bc from Debian's bc source and patches (its configure, gcc -O2 -g)."""
    src = patched_source("bc", out, "gz")
    # the patches change Makefile.am, bc.y and scan.l with what they make: make would run
    # automake, yacc and lex again, none of them installed
    sh("touch aclocal.m4 configure Makefile.in */Makefile.in config.h.in bc/bc.[ch] bc/scan.c", src)
    sh(
        f"./configure -q CC=gcc CFLAGS='-O2 -g' >/dev/null && make -s -C lib >/dev/null "
        f"&& make -s -C bc >/dev/null && cp bc/bc {out}/bc",
        src,
    )
    (out / "work.bc").write_text(BC_SCRIPT)


M4_SCRIPT = """\
divert(-1)
define(`fib', `ifelse(eval(`$1 < 2'), 1, `$1', `eval(fib(decr($1)) + fib(decr(decr($1))))')')
define(`loop', `ifelse(eval(`$1 > 0'), 1, `$2(`$1')loop(decr(`$1'), `$2')')')
define(`word', `translit(`$1', `0123456789', `ABCDEFGHIJ')')
define(`row', `format(`%05d %s %s', `$1', word(`$1'), patsubst(word(`$1'), `[AEIOU]', `_'))
')
divert(0)dnl
fib(19)
loop(3000, `row')dnl
"""


def m4(out: Path) -> None:
    """GNU m4 1.4.19 from Debian's m4 source (its configure, gcc -O2 -g; Debian's two
    patches touch its manual and loongarch alone)."""
    debian_source("m4", out)
    sh("tar xf m4_*.orig.tar.xz", out)
    src = next(p for p in out.glob("m4-*") if p.is_dir())
    sh(
        f"./configure -q CC=gcc CFLAGS='-O2 -g' >/dev/null && make -s -j2 >/dev/null "
        f"&& cp src/m4 {out}/m4",
        src,
    )
    (out / "work.m4").write_text(M4_SCRIPT)


GAWK_SCRIPT = """\
function by_count(i1, v1, i2, v2) {
    if (v1 != v2) return v2 - v1
    return i1 < i2 ? -1 : i1 > i2
}
{
    line = tolower($0)
    gsub(/[^a-z0-9_]+/, " ", line)
    n = split(line, w, " ")
    for (i = 1; i <= n; i++) { freq[w[i]]++; total++ }
    if ($0 ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/) months[substr($0, 1, 7)]++
}
END {
    PROCINFO["sorted_in"] = "by_count"
    k = 0
    for (x in freq) if (++k <= 20) printf "%-20s %6d %5.2f%%\\n", x, freq[x], 100 * freq[x] / total
    for (m in months) out = out m ":" months[m] " "
    print length(freq), total, length(out)
}
"""


def gawk(out: Path) -> None:
    """GNU awk 5.2.1 from Debian's gawk source and patches (its configure, gcc -O2 -g), and
    its ChangeLogs and NEWS as the text it counts."""
    src = patched_source("gawk", out, "xz")
    sh(
        f"./configure -q CC=gcc CFLAGS='-O2 -g' --disable-nls >/dev/null "
        f"&& make -s -C support >/dev/null && make -s gawk >/dev/null && cp gawk {out}/gawk "
        f"&& cat ChangeLog ChangeLog.0 ChangeLog.1 NEWS NEWS.0 NEWS.1 > {out}/corpus.txt",
        src,
    )
    (out / "work.awk").write_text(GAWK_SCRIPT)


MUJS_SCRIPT = """\
var n = Number(scriptArgs[0]) || 1;
function fib(k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
function tree(d) { return d == 0 ? { v: d } : { l: tree(d - 1), r: tree(d - 1), v: d }; }
function sum(t) { return t.l ? sum(t.l) + sum(t.r) + t.v : t.v; }
var total = 0;
for (var round = 0; round < n; round++) {
  total += fib(23);
  var t = tree(12);
  total += sum(t);
  var s = JSON.stringify(t);
  total += JSON.parse(s).v + s.length;
  var words = [];
  for (var i = 0; i < 12000; i++) words.push("w" + ((i * 7919) % 1013) + "x" + (i % 17));
  words.sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
  var counts = {};
  for (var i = 0; i < words.length; i++) { var w = words[i]; counts[w] = (counts[w] || 0) + 1; }
  var line = words.join(" ");
  total += line.match(/w(\\d+)x1[0-6]/g).length + Object.keys(counts).length;
  total += line.replace(/x(\\d)/g, "y$1").length;
}
print(total);
"""


def mujs(out: Path) -> None:
    """MuJS 1.3.2 from Debian's mujs source (its Makefile: the library as one unit, one.c
    including every .c file; CFLAGS '-O2 -g' as Debian's rules pass them, no readline)."""
    src = patched_source("mujs", out, "xz")
    sh(
        f"make -s build=debug CFLAGS='-O2 -g' HAVE_READLINE=no build/debug/mujs "
        f"&& cp build/debug/mujs {out}/mujs",
        src,
    )
    (out / "work.js").write_text(MUJS_SCRIPT)


@dataclass(frozen=True)
class Program:
    build: Callable[[Path], None]
    exe: str  # what the build makes, in bench/out/PROGRAM/
    function: str  # the function `annotate FUNC` lists
    command: Callable[[int], str]  # the command of a run of size N


PROGRAMS = {
    "speedtest1": Program(
        speedtest1, "speedtest1", "sqlite3VdbeExec", "./speedtest1 --size {}".format
    ),
    "lua": Program(lua, "lua", "luaV_execute", lambda n: f"./lua work.lua {n * 40000}"),
    "lz4": Program(
        lz4,
        "lz4",
        "LZ4HC_compress_generic_noDictCtx",
        lambda n: f"./lz4 -q -{n + 4} -f corpus.txt c.lz4",
    ),
    "brotli": Program(
        brotli,
        "brotli",
        "CreateBackwardReferencesNH6",
        lambda n: f"./brotli -q {n + 2} -f -o c.br corpus.txt",
    ),
    "cjson": Program(cjson, "cjson", "print_value", lambda n: f"./cjson data.json {n}"),
    "libyaml": Program(
        libyaml, "yaml", "yaml_parser_fetch_more_tokens", lambda n: f"./yaml data.yaml {n}"
    ),
    "expat": Program(expat, "expat", "normal_contentTok", lambda n: f"./expat data.xml {n}"),
    "pcre2": Program(pcre2, "pcre2", "pcre2_match_8", lambda n: f"./pcre2 data.log {n}"),
    "jq": Program(jq, "jq", "jq_next", lambda n: "./jq -f work.jq" + " data.json" * n),
    "bzip2": Program(bzip2, "bzip2", "mainSort", lambda n: f"./bzip2 -{n + 4} -c corpus.txt"),
    "mawk": Program(mawk, "mawk", "execute", lambda n: "./mawk -f work.awk" + " data.log" * n),
    "xmllint": Program(
        xmllint,
        "xmllint",
        "xmlXPathCompOpEval",
        lambda n: f'./xmllint --xpath "{XPATH}"' + " data.xml" * n,
    ),
    "tcc": Program(
        tcc,
        "tcc",
        "next_nomacro1",
        lambda n: f"./tcc {TCC_FLAGS} -c" + "".join(f" u{i}.c" for i in range(n)),
    ),
    "bc": Program(bc, "bc", "_bc_rec_mul", lambda n: "./bc -lq" + " work.bc" * n),
    "m4": Program(m4, "m4", "expand_token", lambda n: "./m4" + " work.m4" * n),
    "gawk": Program(
        gawk, "gawk", "r_interpret", lambda n: "./gawk -f work.awk" + " corpus.txt" * n
    ),
    "mujs": Program(mujs, "mujs", "jsR_run", lambda n: f"./mujs work.js {n}"),
}


def recorded(program: Program, out: Path, size: int) -> None:
    """The program built, count runs 1 (size N) and 2 (N+1) in out/.perfsleuth, and the
    cachegrind out files of the same commands, once."""
    if not (out / program.exe).exists():
        program.build(out)
    store = out / ".perfsleuth"
    for run, n in ((1, size), (2, size + 1)):
        cg = out / f"cachegrind.out.{run}"
        if not cg.exists():
            # the environment `record` runs the program in (docs/counts.md): mawk counted
            # 257,165 fewer instructions (0.04%) under this machine's LANG=C.UTF-8
            sh(
                f"env -i PATH=/usr/local/bin:/usr/bin:/bin LC_ALL=C valgrind --tool=cachegrind "
                f"--cachegrind-out-file={cg} {program.command(n)} > /dev/null 2>&1",
                out,
            )
        if not (store / f"recorded.{run}").exists():
            sh(
                f"{PY} -m perfsleuth.cli record --quiet --mode count -- "
                f"{program.command(n)} > /dev/null",
                out,
            )
            (store / f"recorded.{run}").touch()


def timed(cmd: str, out: Path) -> tuple[float, float]:
    """(CPU seconds of the children, wall seconds) of one shell command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        ["bash", "-c", cmd], cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def before_cases(checkout: Path, out: Path, function: str) -> dict[str, str]:
    """`top`, `annotate`, `diff` and `diff --format json` by CHECKOUT's code, on a copy
    of the store made now."""
    store = out / ".perfsleuth-before"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(out / ".perfsleuth", store, ignore=shutil.ignore_patterns("answers"))
    ps = f"PYTHONPATH={checkout / 'src'} {PY} -m perfsleuth.cli"
    return {
        "before: perfsleuth top": f"{ps} top 1 -n 40 --store {store}",
        f"before: perfsleuth annotate {function}": (
            f"{ps} annotate {function} 1 --context 8 --store {store}"
        ),
        "before: perfsleuth annotate --all": f"{ps} annotate --all 1 --context 8 --store {store}",
        "before: perfsleuth diff": f"{ps} diff 1 2 --store {store}",
        "before: perfsleuth diff json": f"{ps} diff 1 2 --format json --store {store}",
    }


def against(name: str) -> str | None:
    """The cachegrind tool a perfsleuth view is compared with."""
    if not name.removeprefix("before: ").startswith("perfsleuth"):
        return None
    return "cg_diff" if " diff" in name else "cg_annotate"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", choices=sorted(PROGRAMS), default="speedtest1")
    parser.add_argument("--size", type=int, default=5, help="the size N of run 1 (run 2: N+1)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--before",
        type=Path,
        metavar="CHECKOUT",
        help="also time this checkout's top, annotate, diff and diff --format json",
    )
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = str(ROOT / "src")
    program = PROGRAMS[args.program]
    out = ROOT / "bench" / "out" / args.program
    recorded(program, out, args.size)
    ps = f"{PY} -m perfsleuth.cli"
    function = program.function
    cases = {
        "perfsleuth top": f"{ps} top 1 -n 40",
        f"perfsleuth annotate {function}": f"{ps} annotate {function} 1 --context 8",
        "perfsleuth annotate --all": f"{ps} annotate --all 1 --context 8",
        "perfsleuth diff": f"{ps} diff 1 2",
        "perfsleuth diff json": f"{ps} diff 1 2 --format json",
        "cg_annotate": "cg_annotate --context=8 cachegrind.out.1",
        "cg_diff": "cg_diff cachegrind.out.1 cachegrind.out.2 > cg.diff",
        "cg_diff + cg_annotate": (
            "cg_diff cachegrind.out.1 cachegrind.out.2 > cg.diff && cg_annotate cg.diff"
        ),
    }
    if args.before:
        cases |= before_cases(args.before.resolve(), out, function)
    for cmd in cases.values():
        timed(cmd, out)
    load = os.getloadavg()[0]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, cmd in cases.items():
            times[name].append(timed(cmd, out))
    medians = {
        name: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
        for name, got in times.items()
    }
    print(
        f"{args.program} size {args.size} / {args.size + 1}; medians of {args.runs} interleaved "
        f"runs; load {load:.1f} to {os.getloadavg()[0]:.1f}"
    )
    print(f"  {'':38} {'CPU s':>7} {'wall s':>7}  ratio (CPU) to")
    for name, (cpu, wall) in medians.items():
        other = against(name)
        ratio = f"  {cpu / medians[other][0]:.2f}x {other}" if other else ""
        print(f"  {name:38} {cpu:7.3f} {wall:7.3f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
