/* fntrace: a Valgrind tool that records the memory accesses of one function's calls.

   Why a tool of our own: lackey (--trace-mem=yes) prints every instruction and
   access of the whole program as text, one system call per line, and the caller
   had to parse it all to find the function's calls: on a connection table that runs
   0.14 s natively that was ~1,250x native, nearly all of it outside the function
   (set-up code). Here, outside the function each instruction costs one call of a
   helper that returns at once; inside, each access is one 16-byte record in a
   buffer, written in large blocks.

   Built from the headers and static libraries Debian's `valgrind` package ships
   (collect/fntrace.py compiles it on first use, about a second).

   Extent of a call, as collect/memtrace.py's lackey cutter defines it: a call starts
   when the entry instruction runs (the return address is the word at the stack
   pointer then, pushed by the call), and ends when its return address runs;
   recursion nests. A function entered by a jump ends with its caller.

   Records (little endian): u64 address, u32 size, u32 kind, where kind is
   'I' (instruction), 'L', 'S', 'M' (load, store, modify), 'C' (a call starts;
   address: its return address; size: the k of "1 in k calls" in force) and 'R'
   (the call returned); when calls are sampled, 'N' before each 'C' (address: the
   call's number, from 0) and 'E' at the end (address: the calls seen). With
   --max-calls=N the buffer is written at the end of each of the first N calls, so
   the reader sees them at once and can stop the program.

   Sampling (--sample-every=K): only the calls whose number is a multiple of K are
   recorded; the others cost what code outside the function does. K=0 chooses k
   itself so that a long run stays bounded without knowing its length: every call
   until 2N are recorded (N: --max-calls), then k doubles each time the run reaches
   2N·k calls, so the reader, keeping the multiples of the last k, holds N to 2N
   calls spread evenly over the whole run.

   Instructions in brief (--detail-calls=N, every call recorded): past the first N
   recorded calls an instruction is written only when its 64-byte code line is new
   to the run, and the 'R' record's size holds how many of the call's instructions
   were not written; the reader keeps the first N calls' accesses whole and only the
   totals and the distinct code lines of the others, so `--scale` runs (every call
   of every run) read about a fifth of the records (kh_lookup: 30.5 M of its 37 M
   records were instructions).

   Spatial sample (with sampling): in the calls not recorded, the data accesses to
   1 in k of the 64-byte lines (line_selected), and to the line below each of
   those, are recorded all the same, as 'l', 's', 'm': the misses of the large
   caches come from that sample (cpu_cache_projections/spatial_sample.py). */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "libvex_guest_offsets.h"

#define MAX_DEPTH 4096
#define BUFFER_RECORDS 65536

typedef struct {
    ULong address;
    UInt size;
    UInt kind;
} Record;

static Addr entry = 0;
static Long out_fd = -1;
static Long max_calls = 0;
static Long sample_every = 1; /* 0: doubling, see above */
static Long detail_calls = -1; /* -1: every instruction of every recorded call */

static Addr returns[MAX_DEPTH];
static Int depth = 0;
static Long calls_done = 0;   /* recorded */
static ULong calls_seen = 0;  /* outermost calls started */
static ULong every = 1;       /* the k in force */
static Bool recording = False;
static Record buffer[BUFFER_RECORDS];
static Int used = 0;

#define LINE_SHIFT 6

#define GOLDEN 0x9E3779B97F4A7C15ull /* 2^64 / the golden ratio */

/* The line's number times the golden ratio falls in the first 1/k of [0, 1)
   (spatial_sample.py's `selected`) */
static inline Bool line_selected(ULong line) {
    return line * GOLDEN <= ~0ull / every;
}

/* The code lines written so far (open addressing, 0 empty: no code at line 0); past
   half full, instructions are written whole again */
#define CODE_SLOTS (1 << 16)
static ULong code_lines[CODE_SLOTS];
static Int code_lines_used = 0;
static UInt unwritten = 0; /* instructions of the current call not written */

/* True when the instruction's code line was not seen before (and is noted now), or
   the table is too full to tell */
static Bool new_code_line(Addr address) {
    ULong line = address >> LINE_SHIFT;
    if (code_lines_used >= CODE_SLOTS / 2)
        return True;
    UInt slot = (UInt)((line * GOLDEN) >> 48);
    while (code_lines[slot] != 0) {
        if (code_lines[slot] == line)
            return False;
        slot = (slot + 1) & (CODE_SLOTS - 1);
    }
    code_lines[slot] = line;
    code_lines_used++;
    return True;
}

static void flush(void) {
    if (used > 0)
        VG_(write)((Int)out_fd, buffer, used * (Int)sizeof(Record));
    used = 0;
}

static inline void put(Addr address, UWord size, UInt kind) {
    if (used == BUFFER_RECORDS)
        flush();
    buffer[used].address = address;
    buffer[used].size = (UInt)size;
    buffer[used].kind = kind;
    used++;
}

/* An access of a call not recorded: kept if it touches a chosen line or the line
   below one. */
static void spatial(Addr address, UWord size, UInt kind) {
    ULong first = address >> LINE_SHIFT, last = (address + size - 1) >> LINE_SHIFT;
    for (ULong line = first; line <= last + 1; line++) {
        if (line_selected(line)) {
            put(address, size, kind);
            return;
        }
    }
}

/* The entry instruction is about to run: the call's return address is on top of
   the stack. */
static void start_call(Addr ret) {
    if (sample_every == 0 && calls_seen == 2 * (ULong)max_calls * every)
        every *= 2;
    recording = calls_seen % every == 0;
    if (recording) {
        if (sample_every != 1)
            put(calls_seen, 0, 'N');
        put(ret, (UWord)every, 'C');
    }
    calls_seen++;
}

static VG_REGPARM(1) void on_entry(Addr sp) {
    Addr ret = *(Addr *)sp;
    if (depth == 0)
        start_call(ret);
    if (depth < MAX_DEPTH)
        returns[depth] = ret;
    depth++;
}

/* Sampled calls are far apart: each is written as it ends, like the first N. */
static void end_call(Addr address) {
    put(address, unwritten, 'R');
    unwritten = 0;
    calls_done++;
    if (calls_done <= max_calls || sample_every != 1)
        flush();
}

static VG_REGPARM(2) void on_instruction(Addr address, UWord size) {
    if (depth == 0)
        return;
    if (depth <= MAX_DEPTH && address == returns[depth - 1]) {
        depth--;
        if (depth == 0) {
            if (recording)
                end_call(address);
            recording = False;
            return;
        }
    }
    if (!recording)
        return;
    if (detail_calls >= 0 && calls_done >= detail_calls && !new_code_line(address))
        unwritten++;
    else
        put(address, size, 'I');
}

static VG_REGPARM(2) void on_load(Addr address, UWord size) {
    if (recording)
        put(address, size, 'L');
    else if (depth > 0 && sample_every != 1)
        spatial(address, size, 'l');
}

static VG_REGPARM(2) void on_store(Addr address, UWord size) {
    if (recording)
        put(address, size, 'S');
    else if (depth > 0 && sample_every != 1)
        spatial(address, size, 's');
}

static VG_REGPARM(2) void on_modify(Addr address, UWord size) {
    if (recording)
        put(address, size, 'M');
    else if (depth > 0 && sample_every != 1)
        spatial(address, size, 'm');
}

/* Data accesses of the current instruction, held back so that a load and a store
   of the same address and size become one modify, as lackey reports them. */
typedef struct {
    IRExpr *address;
    Int size;
    Char kind;
} Pending;

#define MAX_PENDING 16
static Pending pending[MAX_PENDING];
static Int n_pending = 0;

static void call2(IRSB *sb, const HChar *name, void *fn, IRExpr *a, IRExpr *b) {
    IRExpr **args = b ? mkIRExprVec_2(a, b) : mkIRExprVec_1(a);
    IRDirty *di = unsafeIRDirty_0_N(b ? 2 : 1, name, VG_(fnptr_to_fnentry)(fn), args);
    addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static void flush_pending(IRSB *sb) {
    for (Int i = 0; i < n_pending; i++) {
        IRExpr *size = mkIRExpr_HWord(pending[i].size);
        if (pending[i].kind == 'L')
            call2(sb, "on_load", on_load, pending[i].address, size);
        else if (pending[i].kind == 'S')
            call2(sb, "on_store", on_store, pending[i].address, size);
        else
            call2(sb, "on_modify", on_modify, pending[i].address, size);
    }
    n_pending = 0;
}

static void add_access(IRSB *sb, IRExpr *address, Int size, Char kind) {
    if (kind == 'S' && n_pending > 0) {
        Pending *last = &pending[n_pending - 1];
        if (last->kind == 'L' && last->size == size && eqIRAtom(last->address, address)) {
            last->kind = 'M';
            return;
        }
    }
    if (n_pending == MAX_PENDING)
        flush_pending(sb);
    pending[n_pending].address = address;
    pending[n_pending].size = size;
    pending[n_pending].kind = kind;
    n_pending++;
}

static void add_dirty_accesses(IRSB *sb, IRDirty *d) {
    if (d->mFx == Ifx_None)
        return;
    Int size = d->mSize;
    if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
        add_access(sb, d->mAddr, size, 'L');
    if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
        add_access(sb, d->mAddr, size, 'S');
}

static void add_instruction(IRSB *sb, IRStmt *st) {
    Addr address = st->Ist.IMark.addr + st->Ist.IMark.delta;
    if (address == entry) {
        IRTemp sp = newIRTemp(sb->tyenv, Ity_I64);
        addStmtToIRSB(sb, IRStmt_WrTmp(sp, IRExpr_Get(OFFSET_amd64_RSP, Ity_I64)));
        call2(sb, "on_entry", on_entry, IRExpr_RdTmp(sp), NULL);
    }
    call2(sb, "on_instruction", on_instruction, mkIRExpr_HWord(address),
          mkIRExpr_HWord(st->Ist.IMark.len));
}

static IRSB *fn_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy) {
    IRSB *out = deepCopyIRSBExceptStmts(in);
    Int i = 0;
    n_pending = 0;
    for (; i < in->stmts_used && in->stmts[i]->tag != Ist_IMark; i++)
        addStmtToIRSB(out, in->stmts[i]);
    for (; i < in->stmts_used; i++) {
        IRStmt *st = in->stmts[i];
        if (!st || st->tag == Ist_NoOp)
            continue;
        switch (st->tag) {
        case Ist_IMark:
            flush_pending(out);
            add_instruction(out, st);
            break;
        case Ist_WrTmp:
            if (st->Ist.WrTmp.data->tag == Iex_Load) {
                IRExpr *load = st->Ist.WrTmp.data;
                add_access(out, load->Iex.Load.addr, sizeofIRType(load->Iex.Load.ty), 'L');
            }
            break;
        case Ist_Store: {
            IRExpr *data = st->Ist.Store.data;
            add_access(out, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(in->tyenv, data)), 'S');
            break;
        }
        case Ist_StoreG: {
            IRStoreG *sg = st->Ist.StoreG.details;
            add_access(out, sg->addr, sizeofIRType(typeOfIRExpr(in->tyenv, sg->data)), 'S');
            break;
        }
        case Ist_LoadG: {
            IRLoadG *lg = st->Ist.LoadG.details;
            IRType type = Ity_INVALID, widened = Ity_INVALID;
            typeOfIRLoadGOp(lg->cvt, &widened, &type);
            add_access(out, lg->addr, sizeofIRType(type), 'L');
            break;
        }
        case Ist_Dirty:
            add_dirty_accesses(out, st->Ist.Dirty.details);
            break;
        case Ist_CAS: {
            IRCAS *cas = st->Ist.CAS.details;
            Int size = sizeofIRType(typeOfIRExpr(in->tyenv, cas->dataLo));
            if (cas->dataHi != NULL)
                size *= 2;
            add_access(out, cas->addr, size, 'L');
            add_access(out, cas->addr, size, 'S');
            break;
        }
        case Ist_LLSC: {
            IRType type = typeOfIRTemp(in->tyenv, st->Ist.LLSC.result);
            if (st->Ist.LLSC.storedata == NULL)
                add_access(out, st->Ist.LLSC.addr, sizeofIRType(type), 'L');
            else
                add_access(out, st->Ist.LLSC.addr,
                           sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)), 'S');
            break;
        }
        case Ist_Exit:
            flush_pending(out);
            break;
        default:
            break;
        }
        addStmtToIRSB(out, st);
    }
    flush_pending(out);
    return out;
}

static Bool fn_option(const HChar *arg) {
    if VG_BHEX_CLO (arg, "--entry", entry, 0, ~(Addr)0) {
    } else if VG_INT_CLO (arg, "--out-fd", out_fd) {
    } else if VG_INT_CLO (arg, "--max-calls", max_calls) {
    } else if VG_INT_CLO (arg, "--sample-every", sample_every) {
    } else if VG_INT_CLO (arg, "--detail-calls", detail_calls) {
    } else
        return False;
    return True;
}

static void fn_usage(void) {
    VG_(printf)("    --entry=0xADDR      runtime address of the function's first instruction\n"
                "    --out-fd=FD         where the binary records go\n"
                "    --max-calls=N       write at the end of each of the first N calls\n"
                "    --sample-every=K    record 1 in K calls (0: K doubles, see the source)\n"
                "    --detail-calls=N    past N calls, instructions in brief (see the source)\n");
}

static void fn_debug_usage(void) {}

static void fn_post_clo_init(void) {
    if (entry == 0 || out_fd < 0)
        VG_(fmsg_bad_option)("fntrace", "--entry and --out-fd are required\n");
    if (sample_every < 0 || (sample_every == 0 && max_calls < 1))
        VG_(fmsg_bad_option)("fntrace", "--sample-every=0 needs --max-calls=N, N >= 1\n");
    if (sample_every > 1)
        every = (ULong)sample_every;
    if (detail_calls >= 0 && sample_every != 1)
        VG_(fmsg_bad_option)("fntrace", "--detail-calls needs --sample-every=1\n");
}

static void fn_fini(Int exitcode) {
    if (sample_every != 1)
        put(calls_seen, 0, 'E');
    flush();
}

static void fn_pre_clo_init(void) {
    VG_(details_name)("fntrace");
    VG_(details_version)(NULL);
    VG_(details_description)("the memory accesses of one function's calls (perfsleuth)");
    VG_(details_copyright_author)("perfsleuth");
    VG_(details_bug_reports_to)("perfsleuth");
    VG_(details_avg_translation_sizeB)(275);
    VG_(basic_tool_funcs)(fn_post_clo_init, fn_instrument, fn_fini);
    VG_(needs_command_line_options)(fn_option, fn_usage, fn_debug_usage);
}

VG_DETERMINE_INTERFACE_VERSION(fn_pre_clo_init)
