"""bpftrace JSON output (`bpftrace -f json`) of perfsleuth's off-CPU script -> records.

The script (collect/offcpu.py) prints three maps when bpftrace stops, four in
--mode offcpu:

    {"type": "map", "data": {"@offcpu": {"<tgid>,<tid>,<state>,<length>,<weight>,<futex>,
                                         <ret>,<ks>,<us>": ns}}}   (one key)
    {"type": "map", "data": {"@blocked": {"<tgid>,<tid>,<state>,<length>": ns}}}
    {"type": "map", "data": {"@long": {"<tgid>,<tid>,<state>,<length>,<futex>,<ret>,<leaf>": ns}}}
    {"type": "map", "data": {"@names": {"<tid>": "<comm>"}}}
    {"type": "map", "data": {"@oncpu": {"<tgid>,<tid>,<futex>,<user address>": count}}}

(<ks>, <us>: kernel and user stack)

@offcpu holds the blocks whose stacks were sampled: the kernel stack one
`symbol+offset` per line, the user stack one hex address per line
(BPFTRACE_NO_USER_SYMBOLS=1; perfsleuth symbolizes them itself, after the
process may have exited), both leaf first and each line followed by a newline.
Their weight is 1 for a block whose stacks were always going to be taken, or N
for one drawn at random one time in N; <futex> is 0 (not known, or no futex wait),
1 (a shared futex's wait) or 2 (a private one's), absent from the output of scripts
before it; <ret> the word at the user stack pointer of a block in sched_yield or a
futex call (a leaf wrapper's return address; 0 otherwise), absent before it.
@blocked holds the time of every other block, per thread and scheduler state, so
together the maps give the exact blocked time; `records` spreads @blocked over the
randomly drawn stacks of the same thread, state and length class (0: under 16 us,
then by powers of 16).
@long holds the long blocks (over the script's LONG_NS) whose stacks were not drawn,
with the user address the thread entered the kernel from: each is read as a sampled
block of weight 1 whose user stack is that leaf (absent from the output of scripts
before it).
@oncpu counts the timer's samples of the target's threads on the CPU by the user
address they run or entered the kernel from (and futex kind, for one inside a futex
call): `oncpu_records` makes the ones inside
a lock or condition-variable call the lock calls' own CPU time (collect/offcpu.py).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from ...errors import UserError

SAMPLED_MAP, UNSAMPLED_MAP, NAMES_MAP, ONCPU_MAP = "@offcpu", "@blocked", "@names", "@oncpu"
LONG_MAP = "@long"
RAN_MAP = "@ran"  # --mode all's: each thread's time on the CPU, ns
STACK_BLOCK = r"(?:\n(?:[^\n]*\n)*?)?"
SAMPLED_KEY = re.compile(
    rf"^(?P<tgid>\d+),(?P<tid>\d+),(?P<state>\d+),(?P<length>\d+),(?P<weight>\d+),"
    rf"(?:(?P<futex>\d+),(?:(?P<ret>\d+),)?)?(?P<kstack>{STACK_BLOCK}),(?P<ustack>{STACK_BLOCK})$",
    re.S,
)
ONCPU_KEY = re.compile(r"^(?P<tgid>\d+),(?P<tid>\d+),(?P<futex>\d+),(?P<ip>\d+)$")
LONG_KEY = re.compile(
    r"^(?P<tgid>\d+),(?P<tid>\d+),(?P<state>\d+),(?P<length>\d+),"
    r"(?P<futex>\d+),(?P<ret>\d+),(?P<leaf>\d+)$"
)
UNSAMPLED_KEY = re.compile(r"^(?P<tgid>\d+),(?P<tid>\d+),(?P<state>\d+),(?P<length>\d+)$")
THREAD_KEY = re.compile(r"^(?P<tgid>\d+),(?P<tid>\d+)$")
# prev_state of sched_switch: 0 runnable (preempted); the TASK_REPORT_MAX bit
# (0x100 on current kernels) marks a preemption as well.
PREEMPTED_BIT = 0x100
STATE_LETTERS = {0: "R", 1: "S", 2: "D", 4: "T", 8: "t", 16: "X", 32: "Z", 64: "P", 128: "I"}

# (tgid, tid, prev_state, length class): blocks of one thread in one scheduler
# state, of about the same length
BlockClass = tuple[int, int, int, int]


@dataclass(frozen=True)
class OffCpuRecord:
    tgid: int
    tid: int
    kernel_state: str  # /proc stat letter: R (preempted), S, D, ...
    kernel_stack: tuple[str, ...]  # function names, leaf first
    user_stack: tuple[int, ...]  # addresses, leaf first
    comm: str
    ns: float
    futex: int = 0  # see SampledBlocks
    on_cpu: bool = False  # timer samples on the CPU (oncpu_records), not a block
    ret: int = 0  # see SampledBlocks


@dataclass(frozen=True)
class OnCpuSamples:
    """The timer's samples of one thread on the CPU at one user address (the leaf
    of a user stack; empty when not known)."""

    tgid: int
    tid: int
    futex: int  # as SampledBlocks's: for a thread inside a futex call
    user_stack: tuple[int, ...]
    count: int


@dataclass(frozen=True)
class SampledBlocks:
    """Blocks of one thread and state whose stacks were taken, with their time."""

    block_class: BlockClass
    weight: int  # 1: every such block was taken; N: one in N, drawn at random
    kernel_stack: tuple[str, ...]
    user_stack: tuple[int, ...]
    ns: int
    futex: int = 0  # 0 not known or no futex wait, 1 a shared futex's, 2 a private one's
    # the word at the user stack pointer in sched_yield or futex: a leaf wrapper's
    # return address (0: not read; absent from the output of scripts before it)
    ret: int = 0


@dataclass
class Capture:
    sampled: list[SampledBlocks] = field(default_factory=list)
    unsampled: dict[BlockClass, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    oncpu: list[OnCpuSamples] = field(default_factory=list)
    ran: dict[tuple[int, int], int] = field(default_factory=dict)  # (tgid, tid): ns on the CPU

    @property
    def total_ns(self) -> int:
        return sum(s.ns for s in self.sampled) + sum(self.unsampled.values())

    @property
    def sampled_ns(self) -> int:
        return sum(s.ns for s in self.sampled)


def parse(text: str) -> Capture:
    """The maps of the script's output."""
    capture = Capture()
    for line in text.splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"bpftrace printed unreadable JSON: {line[:80]!r}") from e
        if doc.get("type") != "map":
            continue
        data = doc.get("data", {})
        for key, ns in data.get(SAMPLED_MAP, {}).items():
            sampled = parse_sampled_key(key, int(ns))
            if sampled is not None:
                capture.sampled.append(sampled)
        for key, ns in data.get(LONG_MAP, {}).items():
            long_block = parse_long_key(key, int(ns))
            if long_block is not None:
                capture.sampled.append(long_block)
        for key, ns in data.get(UNSAMPLED_MAP, {}).items():
            m = UNSAMPLED_KEY.match(key)
            if m is not None:
                block_class = (int(m["tgid"]), int(m["tid"]), int(m["state"]), int(m["length"]))
                capture.unsampled[block_class] = int(ns)
        capture.names.update({int(tid): name for tid, name in data.get(NAMES_MAP, {}).items()})
        for key, count in data.get(ONCPU_MAP, {}).items():
            m = ONCPU_KEY.match(key)
            if m is not None:
                stack = (int(m["ip"]),) if int(m["ip"]) else ()
                ids = (int(m["tgid"]), int(m["tid"]), int(m["futex"]))
                capture.oncpu.append(OnCpuSamples(*ids, stack, int(count)))
        for key, ns in data.get(RAN_MAP, {}).items():
            if m := THREAD_KEY.match(key):
                capture.ran[(int(m["tgid"]), int(m["tid"]))] = int(ns)
    return capture


def parse_sampled_key(key: str, ns: int) -> SampledBlocks | None:
    m = SAMPLED_KEY.match(key)
    if m is None:
        return None
    return SampledBlocks(
        block_class=(int(m["tgid"]), int(m["tid"]), int(m["state"]), int(m["length"])),
        weight=int(m["weight"]),
        kernel_stack=tuple(_kernel_names(m["kstack"])),
        user_stack=tuple(_addresses(m["ustack"])),
        ns=ns,
        futex=int(m["futex"] or 0),
        ret=int(m["ret"] or 0),
    )


def parse_long_key(key: str, ns: int) -> SampledBlocks | None:
    """A long block not drawn, as a block taken with its leaf for a stack."""
    m = LONG_KEY.match(key)
    if m is None:
        return None
    block_class = (int(m["tgid"]), int(m["tid"]), int(m["state"]), int(m["length"]))
    futex, ret = int(m["futex"]), int(m["ret"])
    return SampledBlocks(block_class, 1, (), (int(m["leaf"]),), ns, futex, ret)


def records(capture: Capture, names: dict[int, str] | None = None) -> Iterator[OffCpuRecord]:
    """One record per sampled stack, carrying its share of the unsampled time of
    its block class too, so each thread's time per state is exact. The unsampled
    time goes to the stacks drawn at random (an unbiased sample of those blocks),
    else to the ones always taken, else to a record without stacks: a block is
    only ever spread over blocks of about its length."""
    names = {**(names or {}), **capture.names}
    groups: dict[BlockClass, list[SampledBlocks]] = defaultdict(list)
    for sampled in capture.sampled:
        groups[sampled.block_class].append(sampled)
    for block_class in capture.unsampled.keys() - groups.keys():
        groups[block_class] = []
    for (tgid, tid, state, length), blocks in groups.items():
        unsampled = capture.unsampled.get((tgid, tid, state, length), 0)
        random = any(b.weight > 1 for b in blocks)
        drawn_ns = sum(b.ns for b in blocks if b.weight > 1 or not random)
        letter, comm = state_letter(state), names.get(tid, "")
        for b in blocks:
            drawn = b.weight > 1 or not random
            share = unsampled * b.ns / drawn_ns if drawn and drawn_ns else 0.0
            stacks = (b.kernel_stack, b.user_stack)
            yield OffCpuRecord(tgid, tid, letter, *stacks, comm, b.ns + share, b.futex, ret=b.ret)
        if unsampled and not drawn_ns:
            yield OffCpuRecord(tgid, tid, letter, (), (), comm, float(unsampled))


def oncpu_records(
    capture: Capture, ns_per_sample: float, names: dict[int, str] | None = None
) -> Iterator[OffCpuRecord]:
    """The on-CPU samples as records of ns_per_sample each (state letter R), to be
    kept only where their stack is inside a lock or wait call."""
    names = {**(names or {}), **capture.names}
    for s in capture.oncpu:
        comm = names.get(s.tid, "")
        ns = s.count * ns_per_sample
        yield OffCpuRecord(s.tgid, s.tid, "R", (), s.user_stack, comm, ns, s.futex, on_cpu=True)


def state_letter(prev_state: int) -> str:
    if prev_state & PREEMPTED_BIT:
        return "R"
    return STATE_LETTERS.get(prev_state & 0xFF, "S")


def _kernel_names(block: str) -> Iterator[str]:
    for line in block.split("\n"):
        name = line.strip()
        if name:
            yield name.split(" ", 1)[0].rsplit("+", 1)[0]


def _addresses(block: str) -> Iterator[int]:
    for line in block.split("\n"):
        word = line.strip()
        if word:
            yield int(word.split("+", 1)[0], 16) if word.startswith("0x") else 0
