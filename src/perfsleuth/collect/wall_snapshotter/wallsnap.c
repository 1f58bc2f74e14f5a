/* wallsnap: wall mode's snapshotter. Stops every thread of a process tree at one
   instant, unwinds each with elfutils' libdwfl and lets it go.

   Why not eu-stack: eu-stack attaches, unwinds and releases the threads one after
   another, milliseconds apart; a consumer stopped inside its critical section makes
   the threads stopped after it wait on its lock, so their stacks show contention
   the stop itself caused (+10 to +25 points of waiting on examples/prodcons). Here
   every thread is seized (PTRACE_SEIZE) and interrupted (PTRACE_INTERRUPT) in one
   pass, a few microseconds apart: from then on none runs its own code again until it
   has stopped and been let go, so each stack is that of the instant, however late a
   thread waiting for a CPU stops. Each is let go as soon as its registers and the
   top of its stack are copied, and unwound from that copy once all are free; a
   thread that had no CPU at the instant is made realtime until it has stopped.

   Why: a snapshot used to last until its last thread was let go, and the program
   ran partly stopped meanwhile: threads let go early ran while the others were still
   held, with fewer rivals for the lock, or waiting on a lock a held thread had. The
   program's clock counts what that does; the snapshots, taken at the instant, do
   not. Unwinding in place held each thread ~0.7 ms; and a thread without a CPU at
   the instant stops only once it gets one, tens of ms on a loaded machine, at an
   ordinary priority the snapshotter's own wait for a CPU came on top. On prodcons at
   load 23 (4 busy loops beside), the median snapshot held threads 49 ms and the
   program was partly stopped 76% of its time (wall mode read +5.5 points over its
   clock); copied, with the late threads boosted, 0.2 ms and 7% (-0.1 points).

   Nothing else is done between waking up and that pass: the processes' maps and
   threads are read after the previous snapshot, not before this one. On a busy
   2-core machine the snapshotter's own run before the pass took a CPU from the
   program, and a lock holder it displaced made the other threads wait on its lock
   exactly when they were sampled (+2 to +4 points of waiting). The threads started
   since are listed right after the pass (one read of each process's task directory)
   and interrupted at once, named only then: each name was read before any was
   interrupted, and meanwhile a thread born waiting for a CPU ran into its first wait
   (futpool's std::async workers, living ~1 ms). Listed within the pass (the holders
   keeping the CPUs meanwhile), prodcons's consumers read 1.7 points more waiting.

   The instant must be the timer's, not the one at which the snapshotter gets a CPU.
   Where the program keeps every CPU busy, an ordinary task woken by its timer runs
   when one of the program's threads blocks and gives up its CPU: the snapshot then
   catches that thread just as it began to wait (on prodcons, 38-43% of the consumers
   were waiting in such snapshots where 7-21% were at the timer's instant, and a
   quiet machine read 10-16 points over). So it asks for a realtime priority
   (SCHED_FIFO 1: root, CAP_SYS_NICE or an RLIMIT_RTPRIO), which runs it at the
   timer's instant; else the shortest fair-scheduler slice (EEVDF, Linux 6.12+: a
   waking task with a shorter slice preempts at once); else nothing.

   The instants are not on a fixed grid: each follows the one before after the
   interval times a random factor in [0.5, 1.5). A fixed 20 ms grid is locked to the
   kernel's tick (4 ms at HZ=250; every common HZ divides 20 ms), so every snapshot of
   a run fell at one phase of it (within +-5 us), and the program's state is not the
   same at every phase: prodcons's consumers waited 14.7% just after a tick and 17.8%
   just before the next in a plain run, and one run's snapshots read 2.5 points under
   its own average for that reason alone.

   The gaps between instants are exponential (a Poisson process), not the interval
   times a factor in [0.5, 1.5): an instant then never fell within half an interval
   (10 ms) of the one before, and a snapshot disturbs the program for a while after it
   (threads let go one after another, the unwinding's CPU, a waiter woken late because
   it was stopped), which the program's clock counts and no snapshot saw. Poisson
   instants are independent of everything before them, the snapshots' own aftermath
   included, so the share of them that finds a thread waiting is the share of the
   time it waited (PASTA: Poisson arrivals see time averages), and perfsleuth gives
   every snapshot the same weight. A program that waits 5 ms after each stop
   (tests/fixtures/wall/stop_reactor.c) waited 27-28% of its time and the jittered
   instants read 4-8%. An instant due while the snapshotter is still busy with the
   one before is taken as soon as it is done (dropping it instead was tried on
   memcached, where half the instants fall due during a snapshot's work at load 4-16:
   no net gain, docs/offcpu.md).

   usage: wallsnap PID RATE_HZ [JOURNAL]
          wallsnap --give-back JOURNAL
   Snapshots PID and its descendants RATE_HZ times a second on average (0: only when
   asked), and once more for each line read on stdin; ends at end of stdin or when PID
   is gone. JOURNAL is a file it keeps the boosted threads' own policies in (see
   struct boost); `--give-back JOURNAL`, run once wallsnap has ended by a signal or an
   error, gives them back where its guardian has not.
   First, on stdout, how it is woken: `WAKE realtime`, `WAKE short-slice` or
   `WAKE ordinary`; between snapshots, `HOLD yes|no <CPUs others keep busy>` where it
   starts or stops holding the other CPUs for its passes (see others_busy). Each
   snapshot, on stdout:

     SNAPSHOT <CLOCK_MONOTONIC ns of the pass> <ns until the last thread was let go>
              <ns the pass took (longer when the snapshotter lost its CPU meanwhile)>
     STATE <tid> <S: blocked in a system call, R: not> <its number or -> <name>
     OWNER <tid> <the holder's tid, for a thread in a futex call: see lock_owner>
     TIMEOUT <tid> <ms, -1 for none: a thread in a wait for events, see wait_timeout>
     NONBLOCKING <tid>  (a read that could not wait: see cannot_wait)
     PID <pid> - process
     TID <tid>:
     #0  0x<pc> - <module path>
         [<build-id>]@0x<module start>+0x<pc offset, a return address moved back>

   The thread blocks are eu-stack's `-q -b -m` layout. Exit status 0 when PID is gone
   or stdin ends, 2 for bad usage, 3 when PID cannot be traced (not permitted), 4 when
   there is no such process, 128+signal after SIGTERM, SIGINT or SIGHUP (boosted threads
   given back their own policy first; after a SIGKILL its guardian process does that). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ERESTARTSYS 512 /* the kernel's own codes, not in user headers */
#define ERESTART_RESTARTBLOCK 516
#define MAX_THREADS 4096
#define MAX_PROCS 256
#define MAX_FRAMES 256
#define NAME_SIZE 64
#define STOP_TIMEOUT_US 250000 /* a thread in uninterruptible sleep stops late */
#define ALARM_EVERY_US 10000   /* after the first alarm, how often waitpid is woken */
#define BOOST_AFTER_US 1000    /* a thread not stopped by then is made realtime (boost) */
#define SHORTEST_SLICE_NS 100000 /* the fair scheduler's lower bound */
#define MAX_LOCKS 32               /* mutexes a holder's own lock words are read at */
#define MAX_HOLDERS 16             /* CPUs held for a pass, besides the snapshotter's */
#define HOLD_LIMIT_NS 300000       /* a holder never keeps its CPU longer */
#define LOAD_WINDOW_NS 500000000u  /* how often other processes' CPU use is read */
#define OTHERS_BUSY_CPUS 0.5       /* from this much, holders keep the CPUs for a pass */
#define MAX_HOLD_RATE_HZ 100        /* above it, holders would take too much of others' CPUs */
#define REALTIME_CPU_NS 1000000    /* CPU time a snapshot's copies may take at realtime */
#define STACK_COPY 65536           /* bytes of a thread's stack copied from its SP */
#define PAGE 4096

#ifndef __x86_64__
#error "wallsnap reads x86-64 registers; elsewhere wall mode uses eu-stack"
#endif

/* The kernel's struct sched_attr up to sched_period (SCHED_ATTR_SIZE_VER0); the
   uapi header clashes with <sched.h>, and glibc 2.36 has no wrapper. */
struct slice_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

struct thread {
    pid_t tid, pid;
    char name[NAME_SIZE];
    bool seized;  /* and not yet stopped */
    bool dead;    /* a zombie when listed (a main thread gone before the others): not seized */
};

/* The boost journal: for each slot of threads[], whether that thread is made realtime
   and its own policy, written before it is made so. A MAP_SHARED mapping (of the file
   JOURNAL when given): a SIGKILL, which cannot be caught, leaves it as it was, for the
   guardian process (see guard) and for perfsleuth (`wallsnap --give-back JOURNAL`). */
enum { FREE, BOOSTED, GIVEN_BACK };
struct boost {
    int32_t state, tid, pid, policy, priority;
};

static volatile struct boost *journal;
static const int ENDING[] = {SIGTERM, SIGINT, SIGHUP};
static pid_t guardian; /* 0: none (not started, or gone): no thread is boosted then */

struct proc {
    pid_t pid;
    unsigned long long start; /* starttime in /proc/PID/stat: a reused pid is new */
    pid_t live;               /* a live thread, whose maps are the process's */
    Dwfl *dwfl;
    bool seen;
    unsigned long long ticks; /* CPU time when others_busy last read it */
    bool ticked;              /* whether it has read it */
};

/* A stopped thread as it was at the instant: what unwinding it needs once it runs again. */
struct capture {
    pid_t tid, pid;
    char name[NAME_SIZE];
    struct user_regs_struct regs;
    pid_t owner;           /* see lock_owner */
    long timeout_ms;       /* see wait_timeout */
    uintptr_t owner_at;    /* where the owner was read: the mutex's __owner */
    uintptr_t held[MAX_LOCKS]; /* see read_held */
    int nheld;
    size_t copied;         /* bytes of stack from regs.rsp */
    unsigned char *stack;  /* STACK_COPY bytes, kept from one snapshot to the next */
};

static struct thread threads[MAX_THREADS];
static struct capture captures[MAX_THREADS];
static int ncaptures;
static const struct capture *unwinding; /* the capture whose frames are being read */
static int nthreads;
static struct proc procs[MAX_PROCS];
static int nprocs;
static pid_t late[MAX_THREADS]; /* seized threads that had not stopped in time */
static int nlate;
static _Atomic uint64_t next_due;  /* the instant of the next timed snapshot */
static _Atomic uint64_t pass_done; /* the instant whose interrupt pass is over */
static uint64_t interval;          /* mean ns between timed snapshots */
static uint64_t random_state;      /* xorshift64*, for the instants' gaps */
static pthread_mutex_t due_lock = PTHREAD_MUTEX_INITIALIZER; /* next_due set: due_set */
static pthread_cond_t due_set = PTHREAD_COND_INITIALIZER;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_alarm(int sig) { (void)sig; }

static bool read_file(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

/* Field n (1-based, n > 3) of a stat line, given the ") " that ends its field 2. */
static unsigned long long stat_field(const char *close, int n) {
    const char *q = close + 2; /* field 3, the state */
    for (int field = 3; field < n && q; field++) q = strchr(q + 1, ' ');
    return q ? strtoull(q + 1, NULL, 10) : 0;
}

/* State letter, and optionally the name and starttime, from a stat file: the name
   is between the first '(' and the last ')', the other fields after it. */
static bool parse_stat(const char *path, char *state, char *name, unsigned long long *start) {
    char buf[1024];
    if (!read_file(path, buf, sizeof buf)) return false;
    char *close = strrchr(buf, ')');
    char *open = strchr(buf, '(');
    if (!close || !open || close[1] != ' ') return false;
    *state = close[2];
    if (name) snprintf(name, NAME_SIZE, "%.*s", (int)(close - open - 1), open + 1);
    if (start) *start = stat_field(close, 22);
    return true;
}

/* A process's CPU time so far in clock ticks (utime + stime, its threads' included). */
static unsigned long long process_ticks(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (!read_file(path, buf, sizeof buf)) return 0;
    char *close = strrchr(buf, ')');
    return close && close[1] == ' ' ? stat_field(close, 14) + stat_field(close, 15) : 0;
}

static bool dead(char state) { return state == 'Z' || state == 'X'; }

/* A live thread of pid: pid itself, or another thread once its main thread has
   exited (pthread_exit) and the others go on; 0 when none. */
static pid_t live_thread(pid_t pid) {
    char path[64], state;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (!parse_stat(path, &state, NULL, NULL)) return 0;
    if (!dead(state)) return pid;
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (!dir) return 0;
    pid_t live = 0;
    struct dirent *d;
    while (!live && (d = readdir(dir))) {
        pid_t tid = (pid_t)atoi(d->d_name);
        char file[96];
        snprintf(file, sizeof file, "/proc/%d/task/%d/stat", pid, tid);
        if (tid > 0 && parse_stat(file, &state, NULL, NULL) && !dead(state)) live = tid;
    }
    closedir(dir);
    return live;
}

static struct proc *proc_of(pid_t pid) {
    char path[64], state;
    unsigned long long start = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    pid_t live = live_thread(pid);
    if (!live || !parse_stat(path, &state, NULL, &start)) return NULL;
    struct proc *p = NULL;
    for (int i = 0; i < nprocs && !p; i++)
        if (procs[i].pid == pid && procs[i].start == start) p = &procs[i];
    if (!p && nprocs < MAX_PROCS) {
        p = &procs[nprocs++];
        *p = (struct proc){.pid = pid, .start = start};
    }
    if (p) p->live = live;
    return p;
}

/* The process and every descendant, through /proc/PID/task/TID/children. */
static void collect_procs(pid_t pid) {
    struct proc *p = proc_of(pid);
    if (!p || p->seen) return;
    p->seen = true;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *d;
    while ((d = readdir(dir))) {
        if (d->d_name[0] == '.') continue;
        char children[4096], file[96], *rest;
        snprintf(file, sizeof file, "/proc/%d/task/%d/children", pid, atoi(d->d_name));
        if (!read_file(file, children, sizeof children)) continue;
        for (char *s = strtok_r(children, " \n", &rest); s; s = strtok_r(NULL, " \n", &rest))
            collect_procs((pid_t)atoi(s));
    }
    closedir(dir);
}

/* Reads a new module's .eh_frame now, not while a thread is held. Its .debug_frame,
   which libdwfl reads only where .eh_frame cannot unwind a frame, is left for then:
   it comes from the separate debug file (libc6-dbg's: 37 ms for libc.so.6), and
   reading it before the first snapshot took 0.3-0.9 s on a machine at load 13, a
   second's program half gone before the first snapshot. */
static int warm(Dwfl_Module *mod, void **seen, const char *name, Dwarf_Addr start, void *arg) {
    (void)name, (void)start, (void)arg;
    if (*seen) return DWARF_CB_OK;
    *seen = mod;
    Dwarf_Addr bias;
    dwfl_module_getelf(mod, &bias);
    dwfl_module_eh_cfi(mod, &bias);
    return DWARF_CB_OK;
}

/* libdwfl's view of a captured thread: registers and stack from the copy, anything
   outside the copy from the live process (deeper frames rarely change meanwhile). */
static const struct capture *capture_of(pid_t pid, pid_t tid) {
    for (int i = 0; i < ncaptures; i++)
        if (captures[i].tid == tid && captures[i].pid == pid) return &captures[i];
    return NULL;
}

static pid_t next_capture(Dwfl *dwfl, void *arg, void **thread_arg) {
    (void)arg;
    pid_t pid = dwfl_pid(dwfl);
    const struct capture *c = *thread_arg ? (const struct capture *)*thread_arg + 1 : captures;
    for (; c < captures + ncaptures; c++)
        if (c->pid == pid) {
            *thread_arg = (void *)c;
            return c->tid;
        }
    return 0;
}

static bool get_capture(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg) {
    (void)arg;
    const struct capture *c = capture_of(dwfl_pid(dwfl), tid);
    *thread_arg = (void *)c;
    return c != NULL;
}

static bool read_word(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
    (void)arg;
    const struct capture *c = unwinding;
    if (c && addr >= c->regs.rsp && addr - c->regs.rsp + sizeof *result <= c->copied) {
        memcpy(result, c->stack + (addr - c->regs.rsp), sizeof *result);
        return true;
    }
    struct iovec local = {.iov_base = result, .iov_len = sizeof *result};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof *result};
    return process_vm_readv(dwfl_pid(dwfl), &local, 1, &remote, 1, 0) == sizeof *result;
}

/* x86-64's DWARF register numbers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
static bool initial_registers(Dwfl_Thread *thread, void *arg) {
    const struct user_regs_struct *r = &((const struct capture *)arg)->regs;
    Dwarf_Word regs[17] = {r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi,
                           r->rbp, r->rsp, r->r8,  r->r9,  r->r10, r->r11,
                           r->r12, r->r13, r->r14, r->r15, r->rip};
    dwfl_thread_state_register_pc(thread, r->rip);
    return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks from_captures = {
    .next_thread = next_capture,
    .get_thread = get_capture,
    .memory_read = read_word,
    .set_initial_registers = initial_registers,
};

/* A process's modules, reported again each time (libraries come and go); the Dwfl
   is kept, so each module's CFI is read once. Returns 0 or an errno value. */
static int report(struct proc *p) {
    if (!p->dwfl) {
        p->dwfl = dwfl_begin(&callbacks);
        if (!p->dwfl) return ENOMEM;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/maps", p->pid, p->live);
    FILE *maps = fopen(path, "r");
    if (!maps) return errno;
    dwfl_report_begin(p->dwfl);
    int err = dwfl_linux_proc_maps_report(p->dwfl, maps);
    dwfl_report_end(p->dwfl, NULL, NULL);
    fclose(maps);
    if (err != 0) return err < 0 ? ESRCH : err;
    dwfl_getmodules(p->dwfl, warm, NULL, 0);
    if (dwfl_pid(p->dwfl) > 0) return 0;
    return dwfl_attach_state(p->dwfl, NULL, p->pid, &from_captures, NULL) ? 0 : ESRCH;
}

static struct thread *thread_of(pid_t tid) {
    for (int i = 0; i < nthreads; i++)
        if (threads[i].tid == tid) return &threads[i];
    return NULL;
}

/* A thread's name and whether it is alive, from its stat file. */
static bool name_thread(struct thread *t) {
    char file[96], state;
    snprintf(file, sizeof file, "/proc/%d/task/%d/stat", t->pid, t->tid);
    return parse_stat(file, &state, t->name, NULL) && !dead(state);
}

/* Adds the threads of pid not listed yet, named (a zombie marked dead) when named
   is set, else as the directory lists them (nothing more read: see snapshot). */
static void list_threads(pid_t pid, bool named) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *d;
    while ((d = readdir(dir)) && nthreads < MAX_THREADS) {
        pid_t tid = (pid_t)atoi(d->d_name);
        if (tid <= 0 || thread_of(tid)) continue;
        struct thread *t = &threads[nthreads];
        *t = (struct thread){.tid = tid, .pid = pid};
        t->dead = named && !name_thread(t);
        nthreads++;
    }
    closedir(dir);
}

enum prepared { READY, GONE, DENIED };

/* What the next snapshot will stop: the processes (their modules reported) and their
   threads. A process whose maps cannot be read this time (exec under way, exiting)
   is left out of this snapshot; DENIED when the root's cannot for lack of permission. */
static enum prepared prepare(pid_t root) {
    for (int i = 0; i < nprocs; i++) procs[i].seen = false;
    collect_procs(root);
    enum prepared found = GONE;
    int kept = 0;
    for (int i = 0; i < nprocs; i++) {
        int err = procs[i].seen ? report(&procs[i]) : ESRCH;
        if (procs[i].pid == root && procs[i].seen)
            found = err == EACCES || err == EPERM ? DENIED : READY;
        if (err == 0)
            procs[kept++] = procs[i];
        else if (procs[i].dwfl)
            dwfl_end(procs[i].dwfl);
    }
    nprocs = kept;
    nthreads = 0;
    for (int i = 0; i < nprocs; i++) list_threads(procs[i].pid, true);
    return found;
}

static bool is_late(pid_t tid) {
    for (int i = 0; i < nlate; i++)
        if (late[i] == tid) return true;
    return false;
}

/* Threads that stopped after a previous snapshot gave up on them: let them go. */
static void release_late(void) {
    int kept = 0;
    for (int i = 0; i < nlate; i++) {
        int status;
        pid_t got = waitpid(late[i], &status, __WALL | WNOHANG);
        if (got == 0) {
            late[kept++] = late[i];
        } else if (got > 0 && WIFSTOPPED(status)) {
            int sig = (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
            ptrace(PTRACE_DETACH, late[i], NULL, (void *)(long)sig);
        }
    }
    nlate = kept;
}

/* Seizes and interrupts threads[from..], each at once (a thread seized is frozen a
   few microseconds later than if all were seized first); returns the number refused
   for lack of permission, and adds the interrupted ones to *pending. */
static int interrupt(int from, int *pending) {
    int refused = 0;
    for (int i = from; i < nthreads; i++) {
        struct thread *t = &threads[i];
        if (t->dead || is_late(t->tid)) continue;
        if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) != 0) {
            refused += errno == EPERM;
            continue;
        }
        t->seized = true;
        if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) == 0) ++*pending;
    }
    return refused;
}

struct unwind {
    Dwfl *dwfl;
    unsigned depth;
};

static int print_frame(Dwfl_Frame *frame, void *arg) {
    struct unwind *u = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
    Dwarf_Addr adjusted = pc - (activation ? 0 : 1);
    Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, adjusted);
    Dwarf_Addr start = 0;
    const char *name = mod ? dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
    printf("#%-2u 0x%016" PRIx64, u->depth, (uint64_t)pc);
    if (name && *name) printf(" - %s", name);
    if (mod) {
        Dwarf_Addr bias;
        dwfl_module_getelf(mod, &bias); /* the build-id is known once the ELF is */
        const unsigned char *id;
        GElf_Addr id_vaddr;
        int len = dwfl_module_build_id(mod, &id, &id_vaddr);
        printf("\n    [");
        for (int i = 0; i < len; i++) printf("%02x", id[i]);
        printf("]@0x%" PRIx64 "+0x%" PRIx64, (uint64_t)start, (uint64_t)(adjusted - start));
    }
    putchar('\n');
    return ++u->depth < MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* The system call the stopped thread was in (-1: none), and whether it was blocked
   there: a sleep the interrupt broke leaves -ERESTART* in rax (the kernel restarts
   the call when the thread goes on), where a call doing work, or woken and waiting
   for a CPU, completed first. */
static long syscall_of(const struct user_regs_struct *regs, bool *blocked) {
    long ret = (long)regs->rax;
    *blocked = (long)regs->orig_rax >= 0 && ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK;
    return (long)regs->orig_rax;
}

/* For a thread in a futex call: the int 8 bytes past the futex word, which in a glibc
   mutex (the futex word is its first field) is __owner, the holder's tid, set by every
   lock; the futex word of a condition variable or anything else gives noise there,
   which perfsleuth keeps only for a thread in a mutex lock whose holder is one of the
   snapshot's threads. Read as the waiter stops, so the holder is the one at the
   instant unless the lock changed hands since. 0 when none. */
static pid_t owner_word(pid_t tid, uintptr_t at) {
    int owner = 0;
    struct iovec local = {.iov_base = &owner, .iov_len = sizeof owner};
    struct iovec remote = {.iov_base = (void *)at, .iov_len = sizeof owner};
    if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != sizeof owner) return 0;
    return owner > 0 ? owner : 0;
}

static pid_t lock_owner(const struct thread *t, const struct user_regs_struct *regs) {
    if ((long)regs->orig_rax != SYS_futex) return 0;
    return owner_word(t->tid, (uintptr_t)regs->rdi + 8);
}

/* For a thread in a wait for events (poll, ppoll, select, pselect6, epoll_wait,
   epoll_pwait, epoll_pwait2): the timeout it passed, in ms (-1: none, it blocks until
   an event; a timespec or timeval is read from the thread, rounded down); -2 for any
   other call or a timeout that cannot be read. A loop polling with a short timeout
   and a blocking wait have the same stack: this tells them apart. Printed whether the
   call was blocked or not at the stop: epoll_wait, which the kernel does not restart,
   returns -EINTR there instead of -ERESTART*. */
static long timeval_ms(pid_t tid, uintptr_t at, bool nanoseconds) {
    if (!at) return -1;
    long tv[2];
    struct iovec local = {.iov_base = tv, .iov_len = sizeof tv};
    struct iovec remote = {.iov_base = (void *)at, .iov_len = sizeof tv};
    if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != sizeof tv) return -2;
    return tv[0] * 1000 + tv[1] / (nanoseconds ? 1000000 : 1000);
}

static long wait_timeout(pid_t tid, const struct user_regs_struct *r) {
    switch ((long)r->orig_rax) {
    case SYS_poll: return (int)r->rdx < 0 ? -1 : (int)r->rdx;
    case SYS_epoll_wait:
    case SYS_epoll_pwait: return (int)r->r10 < 0 ? -1 : (int)r->r10;
    case SYS_ppoll: return timeval_ms(tid, (uintptr_t)r->rdx, true);
    case SYS_epoll_pwait2: return timeval_ms(tid, (uintptr_t)r->r10, true);
    case SYS_pselect6: return timeval_ms(tid, (uintptr_t)r->r8, true);
    case SYS_select: return timeval_ms(tid, (uintptr_t)r->r8, false);
    default: return -2;
    }
}

/* Whether a thread stopped in a read (read, readv, recvfrom, recvmsg...) that it was not
   blocked in was reading a non-blocking socket, pipe or other file that is no disk's:
   such a read cannot wait, so it was doing the call's work (copying) or was preempted
   there. Where the file is a disk's, or blocking, it may have been woken from a wait
   and not yet back on a CPU, or in the disk, which a stop cannot interrupt, and stays
   an I/O wait. memcached's workers read their non-blocking sockets after each
   epoll_wait: wall mode read their `io` 5-10 points over a clock around epoll_wait. */
static bool cannot_wait(pid_t pid, const struct user_regs_struct *r) {
    long nr = (long)r->orig_rax;
    if (nr != SYS_read && nr != SYS_readv && nr != SYS_recvfrom && nr != SYS_recvmsg &&
        nr != SYS_recvmmsg)
        return false;
    char path[64], target[32] = "", line[64];
    int fd = (int)r->rdi;
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    if (readlink(path, target, sizeof target - 1) <= 0 || target[0] == '/') return false;
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, fd);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    unsigned long flags = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "flags: %lo", &flags) == 1;
    fclose(f);
    return found && (flags & O_NONBLOCK);
}

/* The owner word a waiter names its holder by is read as the waiter stops; its
   holder may stop before or after that, and was let go at once in between, free to
   let the lock go and run on outside it (a clean-clone CI run on a quiet machine
   counted 21% of the holders' instants in code outside the lock). So as each thread
   stops, the owner words of the mutexes waited on lately (this snapshot's waiters
   before it, and earlier snapshots') are read too: a waiter's holder is named only
   where the holder was seen holding that very mutex at its own stop (is_held). */
static struct {
    pid_t pid;
    uintptr_t at;
} locks[MAX_LOCKS];
static int nlocks, next_lock;

static void remember_lock(pid_t pid, uintptr_t at) {
    for (int i = 0; i < nlocks; i++)
        if (locks[i].pid == pid && locks[i].at == at) return;
    locks[next_lock] = (typeof(locks[0])){.pid = pid, .at = at};
    next_lock = (next_lock + 1) % MAX_LOCKS;
    if (nlocks < MAX_LOCKS) nlocks++;
}

/* One read for all of them (a thread's stop waits on the threads captured before
   it); a word that cannot be read ends the read there, and its lock is forgotten. */
static void read_held(struct capture *c) {
    int words[MAX_LOCKS], which[MAX_LOCKS], n = 0;
    struct iovec local[MAX_LOCKS], remote[MAX_LOCKS];
    for (int i = 0; i < nlocks; i++) {
        if (locks[i].pid != c->pid) continue;
        local[n] = (struct iovec){.iov_base = &words[n], .iov_len = sizeof words[n]};
        remote[n] = (struct iovec){.iov_base = (void *)locks[i].at, .iov_len = sizeof words[n]};
        which[n++] = i;
    }
    ssize_t got = n ? process_vm_readv(c->tid, local, (unsigned long)n, remote, (unsigned long)n, 0) : 0;
    int read = got > 0 ? (int)(got / (ssize_t)sizeof words[0]) : 0;
    c->nheld = 0;
    for (int k = 0; k < read; k++)
        if (words[k] == c->tid) c->held[c->nheld++] = locks[which[k]].at;
    if (read < n && (got >= 0 || errno == EFAULT))
        locks[which[read]].pid = 0; /* unmapped since: never read again */
}

static bool is_held(const struct capture *waiter) {
    for (int i = 0; i < ncaptures; i++) {
        const struct capture *h = &captures[i];
        if (h->tid != waiter->owner || h->pid != waiter->pid) continue;
        for (int j = 0; j < h->nheld; j++)
            if (h->held[j] == waiter->owner_at) return true;
    }
    return false;
}

/* Whether a stopped thread is still on the child's side of the clone that made it
   (the call returned 0 there, and it has entered the kernel for nothing since): a
   thread (or process) waiting for its first CPU, none of its own code run yet. The
   program's clock cannot count that wait, nor do offcpu and all modes, whose accounts
   of a thread begin at its first run; on futpool (bench/fresh_waits: std::async
   workers living ~1 ms, rounds of 3 on 2 CPUs) a third of the workers' snapshots
   caught them there, read as running, and wall mode read their waiting 8-28 points
   under their clock (15-18 at 3000 rounds). Such a thread is left out of the snapshot. */
static bool not_started(const struct user_regs_struct *regs) {
    long nr = (long)regs->orig_rax;
    bool clone = nr == SYS_clone || nr == SYS_clone3 || nr == SYS_fork || nr == SYS_vfork;
    return clone && regs->rax == 0;
}

/* Copies a stopped thread's registers and the top of its stack (up to its mapping's
   end: a page at a time, since a read stops at the first page it cannot read); false
   for a thread not started (not_started), which is not copied. */
static bool capture(const struct thread *t) {
    struct capture *c = &captures[ncaptures];
    if (!c->stack && !(c->stack = malloc(STACK_COPY))) return false;
    if (ptrace(PTRACE_GETREGS, t->tid, NULL, &c->regs) != 0) return false;
    if (not_started(&c->regs)) return false;
    struct iovec local = {.iov_base = c->stack, .iov_len = STACK_COPY};
    struct iovec remote[STACK_COPY / PAGE + 1];
    uintptr_t at = (uintptr_t)c->regs.rsp, end = at + STACK_COPY;
    int n = 0;
    while (at < end) {
        uintptr_t next = (at / PAGE + 1) * PAGE;
        if (next > end) next = end;
        remote[n++] = (struct iovec){.iov_base = (void *)at, .iov_len = next - at};
        at = next;
    }
    ssize_t got = process_vm_readv(t->tid, &local, 1, remote, (unsigned long)n, 0);
    c->copied = got > 0 ? (size_t)got : 0;
    c->owner = lock_owner(t, &c->regs);
    c->owner_at = (uintptr_t)c->regs.rdi + 8;
    c->timeout_ms = wait_timeout(t->tid, &c->regs);
    c->tid = t->tid;
    c->pid = t->pid;
    if (c->owner) remember_lock(c->pid, c->owner_at);
    read_held(c);
    memcpy(c->name, t->name, NAME_SIZE);
    ncaptures++;
    return true;
}

static void unwind(const struct capture *c) {
    struct proc *p = NULL;
    for (int i = 0; i < nprocs && !p; i++)
        if (procs[i].pid == c->pid) p = &procs[i];
    if (!p) return;
    bool blocked;
    long nr = syscall_of(&c->regs, &blocked);
    printf("STATE %d %c ", c->tid, blocked ? 'S' : 'R');
    if (nr >= 0)
        printf("%ld %s\n", nr, c->name);
    else
        printf("- %s\n", c->name);
    if (c->owner && is_held(c)) printf("OWNER %d %d\n", c->tid, c->owner);
    if (c->timeout_ms >= -1) printf("TIMEOUT %d %ld\n", c->tid, c->timeout_ms);
    if (!blocked && cannot_wait(c->pid, &c->regs)) printf("NONBLOCKING %d\n", c->tid);
    printf("PID %d - process\nTID %d:\n", c->pid, c->tid);
    struct unwind u = {.dwfl = p->dwfl};
    unwinding = c;
    dwfl_getthread_frames(p->dwfl, c->tid, print_frame, &u);
    unwinding = NULL;
}

/* A thread without a CPU at the instant stops only once it gets one: tens of ms on a
   loaded machine, while the threads already let go run without it; it loses a turn
   it would have had, and the program's clock counts what that does to the others
   (less contention when it was a consumer at work, a lock held longer when it held
   it). Made realtime until it has stopped, it stops at once; its own policy (nice
   value and custom slice kept) is given back before it is let go. A realtime thread
   needs no boost, and a thread that cannot be boosted stops in its own time.
   Only a thread not stopped BOOST_AFTER_US after the pass is boosted: boosting every
   thread at every snapshot (a blocked one too, which stops within microseconds once
   a CPU is free) changed the program itself. On an emulated quiet machine
   prodcons's consumers waited 26-27% of their time under wall mode at 50 snapshots/s
   where they waited 37% alone, and 36-39% with no boost at all (the class changes to
   realtime and back at each snapshot reset each thread's place in the fair
   scheduler; wall mode read the disturbed program right). */
/* Maps the journal: the file path (created when create is set), else anonymous
   memory, shared with the guardian all the same. */
static bool open_journal(const char *path, bool create) {
    size_t size = MAX_THREADS * sizeof *journal;
    int fd = -1;
    if (path) {
        fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || (create && ftruncate(fd, (off_t)size) != 0)) return false;
        struct stat st;
        if (fstat(fd, &st) != 0 || (size_t)st.st_size < size) return false;
    }
    void *at = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);
    if (fd >= 0) close(fd);
    if (at == MAP_FAILED) return false;
    journal = at;
    return true;
}

static void boost(struct thread *t) {
    volatile struct boost *b = &journal[t - threads];
    int policy = sched_getscheduler(t->tid);
    int base = policy & ~SCHED_RESET_ON_FORK;
    struct sched_param own;
    if (!guardian || policy < 0 || (base != SCHED_OTHER && base != SCHED_BATCH && base != SCHED_IDLE))
        return;
    if (sched_getparam(t->tid, &own) != 0) return;
    *b = (struct boost){.state = FREE, .tid = t->tid, .pid = t->pid, .policy = policy,
                        .priority = own.sched_priority};
    /* marked before it is made realtime: an end in between restores what it has */
    atomic_signal_fence(memory_order_seq_cst);
    b->state = BOOSTED;
    atomic_signal_fence(memory_order_seq_cst);
    struct sched_param realtime = {.sched_priority = 1};
    if (sched_setscheduler(t->tid, SCHED_FIFO, &realtime) != 0) b->state = FREE;
}

static void unboost(struct thread *t) {
    volatile struct boost *b = &journal[t - threads];
    struct sched_param own = {.sched_priority = b->priority};
    if (b->state == BOOSTED) sched_setscheduler(t->tid, b->policy, &own);
    atomic_signal_fence(memory_order_seq_cst);
    b->state = FREE;
}

/* A journal's boosted thread given its own policy back, if it still is what the boost
   made it (SCHED_FIFO 1: no policy a thread is boosted from) and still a thread of its
   process; false if that failed. Plain system calls only: async-signal-safe. */
static bool give_back(volatile struct boost *b) {
    struct sched_param now, own = {.sched_priority = b->priority};
    if (syscall(SYS_tgkill, b->pid, b->tid, 0) != 0) return true; /* gone */
    if (sched_getscheduler(b->tid) != SCHED_FIFO || sched_getparam(b->tid, &now) != 0 ||
        now.sched_priority != 1)
        return true;
    return sched_setscheduler(b->tid, b->policy, &own) == 0;
}

/* Every boosted thread of the journal given back (marked so when mark is set);
   returns how many could not be. */
static int give_back_all(bool mark) {
    int failed = 0;
    for (int i = 0; i < MAX_THREADS; i++) {
        if (journal[i].state != BOOSTED) continue;
        failed += !give_back(&journal[i]);
        if (mark) journal[i].state = GIVEN_BACK;
    }
    return failed;
}

/* SIGTERM, SIGINT, SIGHUP (perfsleuth's stop, or its death: PR_SET_PDEATHSIG): a
   thread left realtime would keep a busy program's CPUs from everything else. Each
   boosted thread gets its own policy back (sched_setscheduler is a plain system call,
   async-signal-safe); exiting detaches the traced ones. Runs on the main thread only
   (the holders block these signals), so no boost is under way elsewhere meanwhile.
   SIGKILL cannot be caught: the guardian does it then. */
static void on_end(int sig) {
    give_back_all(false);
    _exit(128 + sig);
}

/* The guardian: a process of its own session (a signal to wallsnap's group spares it)
   that waits for wallsnap's end, however it ends (a SIGKILL included: the kernel
   closes the pipe), and gives every thread the journal says is boosted its own policy
   back. It ignores the ending signals and exits when wallsnap does. Without it no
   thread is boosted. Returns its pid, 0 if it could not be started. */
static pid_t guard(void) {
    int ends[2];
    if (pipe(ends) != 0) return 0;
    pid_t pid = fork();
    if (pid != 0) {
        close(ends[0]);
        return pid > 0 ? pid : 0; /* the write end stays open until wallsnap is gone */
    }
    close(ends[1]);
    setsid();
    prctl(PR_SET_NAME, "wallsnap-guard");
    for (size_t i = 0; i < sizeof ENDING / sizeof *ENDING; i++) signal(ENDING[i], SIG_IGN);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO); /* whoever reads wallsnap's output is not kept waiting */
    dup2(devnull, STDOUT_FILENO);
    char byte;
    ssize_t got;
    do got = read(ends[0], &byte, 1);
    while (got > 0 || (got < 0 && errno == EINTR));
    int failed = give_back_all(true);
    if (failed) fprintf(stderr, "wallsnap-guard: %d threads could not be given their policy back\n", failed);
    _exit(failed ? 1 : 0);
}

/* `wallsnap --give-back JOURNAL`, once wallsnap has ended by a signal or an error:
   each thread it had boosted at its end, given its own policy back (if the guardian
   has not), one line each: `TID restored` or `TID failed`. */
static int give_back_journal(const char *path) {
    if (!open_journal(path, false)) {
        fprintf(stderr, "wallsnap: cannot read the journal %s\n", path);
        return 2;
    }
    for (int i = 0; i < MAX_THREADS; i++) {
        if (journal[i].state == FREE) continue;
        bool done = journal[i].state == GIVEN_BACK || give_back(&journal[i]);
        printf("%d %s\n", journal[i].tid, done ? "restored" : "failed");
    }
    return 0;
}

static bool realtime_wake; /* woken at a realtime priority, dropped after each pass's copies */
static bool realtime_now;

static void set_realtime(bool on) {
    if (!realtime_wake || on == realtime_now) return;
    realtime_now = on;
    struct sched_param param = {.sched_priority = on ? 1 : 0};
    sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK, &param);
}

/* Copies and lets go each thread interrupted (pending of them) as it stops. Returns
   the threads refused for lack of permission; ncaptures is the threads copied. */
static int collect(int pending) {
    int refused = 0;
    /* The timer wakes waitpid when the boost is due, then repeats: one SIGALRM spent
       in a copy would leave waitpid waiting for a thread in uninterruptible sleep with
       no limit. */
    uint64_t started = now_ns();
    uint64_t deadline = started + STOP_TIMEOUT_US * 1000ull;
    uint64_t boost_at = started + BOOST_AFTER_US * 1000ull;
    struct itimerval limit = {.it_interval = {.tv_sec = 0, .tv_usec = ALARM_EVERY_US},
                              .it_value = {.tv_sec = 0, .tv_usec = BOOST_AFTER_US}};
    setitimer(ITIMER_REAL, &limit, NULL);
    ncaptures = 0;
    bool boosted = !realtime_wake;
    uint64_t cpu_from = cpu_ns();
    while (pending > 0 && now_ns() < deadline) {
        if (cpu_ns() - cpu_from > REALTIME_CPU_NS) set_realtime(false);
        if (!boosted && now_ns() >= boost_at) { /* see boost: only the late ones */
            for (int i = 0; i < nthreads; i++)
                if (threads[i].seized) boost(&threads[i]);
            boosted = true;
        }
        int status;
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0 && errno == EINTR) continue; /* the deadline is checked again */
        if (tid < 0) break;                      /* no tracee left */
        if (tid == guardian) { /* gone: no more boosts */
            guardian = 0;
            continue;
        }
        struct thread *t = thread_of(tid);
        if (!t || !t->seized) { /* one a previous snapshot gave up on */
            if (WIFSTOPPED(status)) ptrace(PTRACE_DETACH, tid, NULL, NULL);
            continue;
        }
        pending--;
        t->seized = false;
        if (!WIFSTOPPED(status)) { /* exited: its tid may be another's soon */
            journal[t - threads].state = FREE;
            continue;
        }
        int sig = (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
        capture(t);
        unboost(t);
        ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig); /* a signal it was getting */
    }
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
    for (int i = 0; i < nthreads; i++) { /* still running: let go once it stops */
        unboost(&threads[i]);
        if (threads[i].seized && nlate < MAX_THREADS) late[nlate++] = threads[i].tid;
    }
    return refused;
}

/* The pass comes first, before anything else costs time: until the last thread is
   interrupted, a thread the snapshotter took its CPU from is held up, and others
   run on into its lock. The threads are unwound once all are let go. */
static void snapshot(pid_t root, bool first) {
    uint64_t started = now_ns();
    int pending = 0;
    int refused = interrupt(0, &pending);
    uint64_t passed = now_ns() - started;
    atomic_store(&pass_done, atomic_load(&next_due)); /* the holders let their CPUs go */
    int listed = nthreads;
    for (int i = 0; i < nprocs; i++) list_threads(procs[i].pid, false); /* started since */
    refused += interrupt(listed, &pending);
    for (int i = listed; i < nthreads; i++) name_thread(&threads[i]);
    /* The copies at realtime too (waiting for a thread to stop costs no CPU, and the
       copies at most REALTIME_CPU_NS of it): a thread without a CPU at the instant
       stops only once it gets one, up to tens of ms later on a loaded machine; at an
       ordinary priority it then stayed stopped until the snapshotter got a CPU in
       turn, and a lock holder stopped so made the others wait, waits the program
       counted and no snapshot saw. Unwinding may take long: ordinary priority. */
    refused += collect(pending);
    set_realtime(false);
    uint64_t held = now_ns() - started;
    if (first && refused > 0 && ncaptures == 0) {
        fprintf(stderr, "wallsnap: cannot trace process %d: not permitted\n", root);
        exit(3);
    }
    printf("SNAPSHOT %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", started, held, passed);
    for (int i = 0; i < ncaptures; i++) unwind(&captures[i]);
    fflush(stdout);
    release_late();
}

/* Asks to run at the timer's instant (see the top): a realtime priority, else the
   shortest fair slice, read back since kernels before 6.12 accept and ignore it.
   Returns how it will be woken. */
static const char *wake_promptly(void) {
    struct sched_param realtime = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &realtime) == 0) {
        realtime_wake = realtime_now = true;
        return "realtime";
    }
    struct slice_attr short_slice = {
        .size = sizeof short_slice, .policy = SCHED_OTHER, .runtime = SHORTEST_SLICE_NS};
    struct slice_attr now = {0};
    if (syscall(SYS_sched_setattr, 0, &short_slice, 0) == 0 &&
        syscall(SYS_sched_getattr, 0, &now, sizeof now, 0) == 0 && now.runtime == SHORTEST_SLICE_NS)
        return "short-slice";
    return "ordinary";
}

/* A uniform number in [0, 1). */
static double random_unit(void) {
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return (double)((random_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

/* The next snapshot's instant (see the top): an exponential gap of mean interval
   after the one before, or now if that has passed meanwhile. */
static uint64_t next_instant(uint64_t due, uint64_t now) {
    uint64_t step = (uint64_t)(-log1p(-random_unit()) * (double)interval);
    return due + step > now ? due + step : now;
}

static atomic_bool hold_wanted; /* see others_busy */

static void publish_due(uint64_t due, bool hold) {
    pthread_mutex_lock(&due_lock);
    atomic_store(&next_due, due);
    atomic_store(&hold_wanted, hold);
    pthread_cond_broadcast(&due_set);
    pthread_mutex_unlock(&due_lock);
}

/* The first instant set after done for which the CPUs are to be held. A holder not
   wanted must not even wake at the instant: one that woke and slept again at once
   read prodcons's consumers 7 and 4.8 points under its clock on a quiet machine. */
static uint64_t due_after(uint64_t done) {
    pthread_mutex_lock(&due_lock);
    while (atomic_load(&next_due) <= done || !atomic_load(&hold_wanted))
        pthread_cond_wait(&due_set, &due_lock);
    uint64_t due = atomic_load(&next_due);
    pthread_mutex_unlock(&due_lock);
    return due;
}

static cpu_set_t target_cpus, holding_cpu; /* the snapshotter's, unpinned and pinned */

/* Clock ticks the CPUs of set have been busy so far (/proc/stat's cpuN lines); 0 when
   unreadable. */
static unsigned long long cpus_busy(const cpu_set_t *set) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[512];
    unsigned long long sum = 0, user, nice, sys, idle, iowait, irq, softirq, steal;
    int cpu;
    while (fgets(line, sizeof line, f) && strncmp(line, "cpu", 3) == 0)
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys,
                   &idle, &iowait, &irq, &softirq, &steal) == 9 &&
            cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, set))
            sum += user + nice + sys + irq + softirq + steal;
    fclose(f);
    return sum;
}

/* How many of the target's CPUs processes other than the target and the snapshotter
   kept busy since the last reading (LOAD_WINDOW_NS ago at least); -1 until then. Holding the CPUs for a
   pass pays only where others compete for them: on a quiet 2-core machine, prodcons's
   consumers read 5.0 points under their clock with holders (5 runs, -1.9 to -7.6) and
   3.6 over without (+0.8 to +6.8); beside 4 busy loops holders kept it within -5.7 to
   +6.6 where the snapshotter alone read -2.3 to +9.3 (docs/offcpu.md). */
static double others_busy(void) {
    static unsigned long long last_busy;
    static uint64_t last_at, last_self_us;
    unsigned long long busy = cpus_busy(&target_cpus), target = 0;
    if (!busy) return -1;
    for (int i = 0; i < nprocs; i++) {
        unsigned long long ticks = process_ticks(procs[i].pid);
        if (procs[i].ticked && ticks > procs[i].ticks) target += ticks - procs[i].ticks;
        procs[i].ticks = ticks;
        procs[i].ticked = true;
    }
    struct rusage self;
    getrusage(RUSAGE_SELF, &self); /* the holders' spinning included */
    uint64_t self_us = (uint64_t)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000u +
                       (uint64_t)(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
    uint64_t now = now_ns();
    double result = -1, tick_s = 1.0 / (double)sysconf(_SC_CLK_TCK);
    if (last_at) {
        double others = ((double)(busy - last_busy) - (double)target) * tick_s -
                        (double)(self_us - last_self_us) * 1e-6;
        result = others / ((double)(now - last_at) * 1e-9);
    }
    last_busy = busy;
    last_at = now;
    last_self_us = self_us;
    return result;
}

/* One CPU's holder (see hold_cpus): wakes at each snapshot's instant and keeps its CPU
   until the pass is over. */
static void *hold_cpu(void *arg) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET((int)(intptr_t)arg, &one);
    /* started at an ordinary priority: a holder that cannot be pinned never spins */
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return NULL;
    struct sched_param realtime = {.sched_priority = 1};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &realtime) != 0) return NULL;
    for (uint64_t done = 0;;) {
        uint64_t due = due_after(done);
        struct timespec at = {.tv_sec = (time_t)(due / 1000000000u),
                              .tv_nsec = (long)(due % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        uint64_t limit = now_ns() + HOLD_LIMIT_NS;
        while (atomic_load(&pass_done) < due && now_ns() < limit) {
        }
        done = due;
    }
    return NULL;
}

/* Waking takes a CPU from the program: the thread it displaces, holding a lock, makes
   the others block on it before the pass (a no-op waker alone saw prodcons's consumers
   +3 to +11 points more waiting at its wake-up than at its timer's due time; with a
   waker holding each of the 2 CPUs, 0). So with a realtime priority the snapshotter
   stays on one CPU of the target's, and a holder on each other one (up to MAX_HOLDERS)
   wakes at the same instants and keeps its CPU until the pass is over: nothing of the
   program runs meanwhile. Returns how many. */
static int hold_cpus(pid_t root) {
    cpu_set_t target;
    if (sched_getaffinity(root, sizeof target, &target) != 0) return 0;
    target_cpus = target;
    int cpus[CPU_SETSIZE], n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &target)) cpus[n++] = cpu;
    if (n < 2) return 0;
    cpu_set_t own;
    CPU_ZERO(&own);
    CPU_SET(cpus[0], &own);
    holding_cpu = own;
    /* holders start at an ordinary priority (not the snapshotter's), and with SIGALRM
       and the ending signals blocked: waitpid's deadline and on_end need the main thread */
    pthread_attr_t ordinary;
    struct sched_param none = {.sched_priority = 0};
    pthread_attr_init(&ordinary);
    pthread_attr_setinheritsched(&ordinary, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&ordinary, SCHED_OTHER);
    pthread_attr_setschedparam(&ordinary, &none);
    sigset_t alarm, before;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    for (size_t i = 0; i < sizeof ENDING / sizeof *ENDING; i++) sigaddset(&alarm, ENDING[i]);
    pthread_sigmask(SIG_BLOCK, &alarm, &before);
    int started = 0;
    for (int i = 1; i < n && started < MAX_HOLDERS; i++) {
        pthread_t holder;
        started += pthread_create(&holder, &ordinary, hold_cpu, (void *)(intptr_t)cpus[i]) == 0;
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    pthread_attr_destroy(&ordinary);
    return started;
}

/* Whether the next passes hold the CPUs, given others' load (see others_busy): the
   snapshotter is pinned to its CPU while they do (a holder on each other one), and
   may run on any of the target's otherwise. Says each change (HOLD). */
static bool decide_hold(bool holding, double busy) {
    bool want = busy >= OTHERS_BUSY_CPUS;
    if (busy < 0 || want == holding) return holding;
    if (sched_setaffinity(0, sizeof(cpu_set_t), want ? &holding_cpu : &target_cpus) != 0)
        return holding;
    printf("HOLD %s %.2f\n", want ? "yes" : "no", busy);
    return want;
}

/* Waits until the next snapshot is due or a line asks for one; false at end of input. */
static bool wait_turn(uint64_t due, bool timed) {
    for (;;) {
        uint64_t now = now_ns();
        if (timed && now >= due) return true;
        struct timespec left = {.tv_sec = (time_t)((due - now) / 1000000000u),
                                .tv_nsec = (long)((due - now) % 1000000000u)};
        struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
        int ready = ppoll(&in, 1, timed ? &left : NULL, NULL);
        if (ready <= 0) continue;
        char line[64];
        return read(STDIN_FILENO, line, sizeof line) > 0;
    }
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--give-back") == 0) return give_back_journal(argv[2]);
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: wallsnap PID RATE_HZ [JOURNAL] | wallsnap --give-back JOURNAL\n");
        return 2;
    }
    pid_t root = (pid_t)atoi(argv[1]);
    double rate = atof(argv[2]);
    if (root <= 0 || rate < 0) {
        fprintf(stderr, "wallsnap: bad PID or rate\n");
        return 2;
    }
    if (!open_journal(argc == 4 ? argv[3] : NULL, true)) {
        fprintf(stderr, "wallsnap: cannot create the journal %s\n", argc == 4 ? argv[3] : "");
        return 2;
    }
    guardian = guard();
    unsetenv("DEBUGINFOD_URLS"); /* no download while a thread is held */
    struct sigaction alarm = {.sa_handler = on_alarm}; /* no SA_RESTART: waitpid ends */
    sigaction(SIGALRM, &alarm, NULL);
    struct sigaction end = {.sa_handler = on_end};
    sigfillset(&end.sa_mask);
    for (size_t i = 0; i < sizeof ENDING / sizeof *ENDING; i++) sigaction(ENDING[i], &end, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* before the first reading of the process, which then gets its CPU promptly too */
    const char *wake = wake_promptly();
    switch (prepare(root)) {
    case GONE:
        fprintf(stderr, "wallsnap: no process %d\n", root);
        return 4;
    case DENIED:
        fprintf(stderr, "wallsnap: cannot trace process %d: not permitted\n", root);
        return 3;
    case READY:
        break;
    }
    printf("WAKE %s\n", wake);
    prctl(PR_SET_TIMERSLACK, 1UL); /* a fair task's timer may otherwise fire 50 us late */
    interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
    if (getrandom(&random_state, sizeof random_state, 0) != sizeof random_state || !random_state)
        random_state = now_ns() | 1;
    uint64_t due = now_ns(), load_read = 0;
    int holders = -1; /* not started yet */
    bool hold = false;
    for (bool first = true;; first = false) {
        snapshot(root, first);
        if (prepare(root) == GONE) return 0;
        if (interval && holders < 0 && realtime_wake && rate <= MAX_HOLD_RATE_HZ)
            holders = hold_cpus(root);
        if (holders > 0 && now_ns() - load_read >= LOAD_WINDOW_NS) {
            load_read = now_ns();
            hold = decide_hold(hold, others_busy());
        }
        if (interval) {
            due = next_instant(due, now_ns());
            publish_due(due, hold);
        }
        set_realtime(true);
        if (!wait_turn(due, interval > 0)) return 0;
    }
}
