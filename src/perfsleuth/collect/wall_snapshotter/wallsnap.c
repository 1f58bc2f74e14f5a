/* wallsnap: wall mode's snapshotter. Stops every thread of a process tree at one
   instant, unwinds each with elfutils' libdwfl and lets it go.

   Why not eu-stack: eu-stack attaches, unwinds and releases the threads one after
   another, milliseconds apart; a consumer stopped inside its critical section makes
   the threads stopped after it wait on its lock, so their stacks show contention
   the stop itself caused (+10 to +25 points of waiting on examples/prodcons). Here
   every thread is seized (PTRACE_SEIZE) and interrupted (PTRACE_INTERRUPT) in one
   pass, a few microseconds apart: from then on none runs its own code again until it
   has stopped and been let go, so each stack is that of the instant, however late a
   thread waiting for a CPU stops. Each is unwound and let go as soon as it stops.

   Nothing else is done between waking up and that pass: the processes' maps and
   threads are read after the previous snapshot, not before this one. On a busy
   2-core machine the snapshotter's own run before the pass took a CPU from the
   program, and a lock holder it displaced made the other threads wait on its lock
   exactly when they were sampled (+2 to +4 points of waiting).

   The instant must be the timer's, not the one at which the snapshotter gets a CPU.
   Where the program keeps every CPU busy, an ordinary task woken by its timer runs
   when one of the program's threads blocks and gives up its CPU: the snapshot then
   catches that thread just as it began to wait (on prodcons, 38-43% of the consumers
   were waiting in such snapshots where 7-21% were at the timer's instant, and a
   quiet machine read 10-16 points over). So it asks for a realtime priority
   (SCHED_FIFO 1: root, CAP_SYS_NICE or an RLIMIT_RTPRIO), which runs it at the
   timer's instant; else the shortest fair-scheduler slice (EEVDF, Linux 6.12+: a
   waking task with a shorter slice preempts at once); else nothing.

   usage: wallsnap PID RATE_HZ
   Snapshots PID and its descendants RATE_HZ times a second (0: only when asked), and
   once more for each line read on stdin; ends at end of stdin or when PID is gone.
   First, on stdout, how it is woken: `WAKE realtime`, `WAKE short-slice` or
   `WAKE ordinary`. Each snapshot, on stdout:

     SNAPSHOT <CLOCK_MONOTONIC ns of the pass> <ns until the last thread was let go>
              <ns the pass took (longer when the snapshotter lost its CPU meanwhile)>
     STATE <tid> <S: blocked in a system call, R: not> <its number or -> <name>
     PID <pid> - process
     TID <tid>:
     #0  0x<pc> - <module path>
         [<build-id>]@0x<module start>+0x<pc offset, a return address moved back>

   The thread blocks are eu-stack's `-q -b -m` layout. Exit status 0 when PID is gone
   or stdin ends, 2 for bad usage, 3 when PID cannot be traced (not permitted), 4 when
   there is no such process. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
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
#include <sys/syscall.h>
#include <sys/time.h>
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
#define ALARM_EVERY_US 10000   /* past the time limit, how often waitpid is woken */
#define SHORTEST_SLICE_NS 100000 /* the fair scheduler's lower bound */
#define MAX_HOLDERS 16             /* CPUs held for a pass, besides the snapshotter's */
#define HOLD_LIMIT_NS 300000       /* a holder never keeps its CPU longer */
#define MAX_HOLD_RATE_HZ 100        /* above it, holders would take too much of others' CPUs */

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
    bool seized; /* and not yet stopped */
};

struct proc {
    pid_t pid;
    unsigned long long start; /* starttime in /proc/PID/stat: a reused pid is new */
    pid_t live;               /* a live thread, whose maps are the process's */
    Dwfl *dwfl;
    bool seen;
};

static struct thread threads[MAX_THREADS];
static int nthreads;
static struct proc procs[MAX_PROCS];
static int nprocs;
static pid_t late[MAX_THREADS]; /* seized threads that had not stopped in time */
static int nlate;
static FILE *out; /* a snapshot's body, written out once its threads are let go */
static _Atomic uint64_t next_due;  /* the instant of the next timed snapshot */
static _Atomic uint64_t pass_done; /* the instant whose interrupt pass is over */
static uint64_t interval;          /* ns between timed snapshots */

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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
    if (start) { /* field 3 is the state, starttime field 22 */
        char *q = close + 2;
        for (int field = 3; field < 22 && q; field++) q = strchr(q + 1, ' ');
        *start = q ? strtoull(q + 1, NULL, 10) : 0;
    }
    return true;
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
    return dwfl_linux_proc_attach(p->dwfl, p->pid, true) == 0 ? 0 : ESRCH;
}

static struct thread *thread_of(pid_t tid) {
    for (int i = 0; i < nthreads; i++)
        if (threads[i].tid == tid) return &threads[i];
    return NULL;
}

/* Adds the live threads of pid not listed yet; returns how many. */
static int list_threads(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (!dir) return 0;
    int added = 0;
    struct dirent *d;
    while ((d = readdir(dir)) && nthreads < MAX_THREADS) {
        pid_t tid = (pid_t)atoi(d->d_name);
        if (tid <= 0 || thread_of(tid)) continue;
        struct thread *t = &threads[nthreads];
        *t = (struct thread){.tid = tid, .pid = pid};
        char file[96], state;
        snprintf(file, sizeof file, "/proc/%d/task/%d/stat", pid, tid);
        if (!parse_stat(file, &state, t->name, NULL) || dead(state)) continue;
        nthreads++;
        added++;
    }
    closedir(dir);
    return added;
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
    for (int i = 0; i < nprocs; i++) list_threads(procs[i].pid);
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
        if (is_late(t->tid)) continue;
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
    fprintf(out, "#%-2u 0x%016" PRIx64, u->depth, (uint64_t)pc);
    if (name && *name) fprintf(out, " - %s", name);
    if (mod) {
        Dwarf_Addr bias;
        dwfl_module_getelf(mod, &bias); /* the build-id is known once the ELF is */
        const unsigned char *id;
        GElf_Addr id_vaddr;
        int len = dwfl_module_build_id(mod, &id, &id_vaddr);
        fprintf(out, "\n    [");
        for (int i = 0; i < len; i++) fprintf(out, "%02x", id[i]);
        fprintf(out, "]@0x%" PRIx64 "+0x%" PRIx64, (uint64_t)start, (uint64_t)(adjusted - start));
    }
    fputc('\n', out);
    return ++u->depth < MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* The system call the stopped thread was in (-1: none), and whether it was blocked
   there: a sleep the interrupt broke leaves -ERESTART* in rax (the kernel restarts
   the call when the thread goes on), where a call doing work, or woken and waiting
   for a CPU, completed first. */
static long syscall_of(pid_t tid, bool *blocked) {
    *blocked = false;
#ifdef __x86_64__
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) != 0) return -1;
    long ret = (long)regs.rax;
    *blocked = (long)regs.orig_rax >= 0 && ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK;
    return (long)regs.orig_rax;
#else
    (void)tid;
    return -1;
#endif
}

static void unwind(struct thread *t) {
    struct proc *p = NULL;
    for (int i = 0; i < nprocs && !p; i++)
        if (procs[i].pid == t->pid) p = &procs[i];
    if (!p) return;
    bool blocked;
    long nr = syscall_of(t->tid, &blocked);
    fprintf(out, "STATE %d %c ", t->tid, blocked ? 'S' : 'R');
    if (nr >= 0)
        fprintf(out, "%ld %s\n", nr, t->name);
    else
        fprintf(out, "- %s\n", t->name);
    fprintf(out, "PID %d - process\nTID %d:\n", t->pid, t->tid);
    struct unwind u = {.dwfl = p->dwfl};
    dwfl_getthread_frames(p->dwfl, t->tid, print_frame, &u);
}

/* Unwinds and lets go each thread interrupted (pending of them) as it stops, after
   interrupting those started since the pass. Returns the threads refused for lack of
   permission; *taken is the threads unwound. */
static int collect(int pending, int *taken) {
    int listed = nthreads;
    for (int i = 0; i < nprocs; i++) list_threads(procs[i].pid); /* started since */
    int refused = interrupt(listed, &pending);
    /* The timer repeats: one SIGALRM spent while unwinding would leave waitpid
       waiting for a thread in uninterruptible sleep with no limit. */
    uint64_t deadline = now_ns() + STOP_TIMEOUT_US * 1000ull;
    struct itimerval limit = {.it_interval = {.tv_sec = 0, .tv_usec = ALARM_EVERY_US},
                              .it_value = {.tv_sec = 0, .tv_usec = STOP_TIMEOUT_US}};
    setitimer(ITIMER_REAL, &limit, NULL);
    *taken = 0;
    while (pending > 0 && now_ns() < deadline) {
        int status;
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0 && errno == EINTR) continue; /* the deadline is checked again */
        if (tid < 0) break;                      /* no tracee left */
        struct thread *t = thread_of(tid);
        if (!t || !t->seized) { /* one a previous snapshot gave up on */
            if (WIFSTOPPED(status)) ptrace(PTRACE_DETACH, tid, NULL, NULL);
            continue;
        }
        pending--;
        t->seized = false;
        if (!WIFSTOPPED(status)) continue; /* exited */
        int sig = (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
        unwind(t);
        ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig); /* a signal it was getting */
        ++*taken;
    }
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
    for (int i = 0; i < nthreads; i++) /* still running: let go once it stops */
        if (threads[i].seized && nlate < MAX_THREADS) late[nlate++] = threads[i].tid;
    return refused;
}

static bool realtime_wake; /* woken at a realtime priority, dropped after each pass */

static void set_realtime(bool on) {
    if (!realtime_wake) return;
    struct sched_param param = {.sched_priority = on ? 1 : 0};
    sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK, &param);
}

/* The pass comes first, before anything else costs time: until the last thread is
   interrupted, a thread the snapshotter took its CPU from is held up, and others
   run on into its lock. */
static void snapshot(pid_t root, bool first) {
    uint64_t started = now_ns();
    int pending = 0;
    int refused = interrupt(0, &pending);
    uint64_t passed = now_ns() - started;
    atomic_store(&pass_done, atomic_load(&next_due)); /* the holders let their CPUs go */
    /* only the wake-up and the pass run at realtime: unwinding may take long (many
       threads, a first .debug_frame read) and must not keep a CPU from everyone else */
    set_realtime(false);
    char *body = NULL;
    size_t size = 0;
    out = open_memstream(&body, &size);
    int taken;
    refused += collect(pending, &taken);
    uint64_t held = now_ns() - started;
    fclose(out);
    if (first && refused > 0 && taken == 0) {
        fprintf(stderr, "wallsnap: cannot trace process %d: not permitted\n", root);
        exit(3);
    }
    printf("SNAPSHOT %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", started, held, passed);
    fwrite(body, 1, size, stdout);
    fflush(stdout);
    free(body);
    release_late();
}

/* Asks to run at the timer's instant (see the top): a realtime priority, else the
   shortest fair slice, read back since kernels before 6.12 accept and ignore it.
   Returns how it will be woken. */
static const char *wake_promptly(void) {
    struct sched_param realtime = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &realtime) == 0) {
        realtime_wake = true;
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
    uint64_t done = atomic_load(&next_due) - interval;
    for (;;) {
        uint64_t due = atomic_load(&next_due);
        if (due <= done) due = done + interval; /* not set yet: the grid's next */
        struct timespec at = {.tv_sec = (time_t)(due / 1000000000u),
                              .tv_nsec = (long)(due % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        if (atomic_load(&next_due) > due) { /* a snapshot skipped: the next one */
            done = due;
            continue;
        }
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
    int cpus[CPU_SETSIZE], n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &target)) cpus[n++] = cpu;
    if (n < 2) return 0;
    cpu_set_t own;
    CPU_ZERO(&own);
    CPU_SET(cpus[0], &own);
    if (sched_setaffinity(0, sizeof own, &own) != 0) return 0;
    /* holders start at an ordinary priority (not the snapshotter's), and with SIGALRM
       blocked: waitpid's deadline needs it to reach the main thread */
    pthread_attr_t ordinary;
    struct sched_param none = {.sched_priority = 0};
    pthread_attr_init(&ordinary);
    pthread_attr_setinheritsched(&ordinary, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&ordinary, SCHED_OTHER);
    pthread_attr_setschedparam(&ordinary, &none);
    sigset_t alarm, before;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
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
    if (argc != 3) {
        fprintf(stderr, "usage: wallsnap PID RATE_HZ\n");
        return 2;
    }
    pid_t root = (pid_t)atoi(argv[1]);
    double rate = atof(argv[2]);
    if (root <= 0 || rate < 0) {
        fprintf(stderr, "wallsnap: bad PID or rate\n");
        return 2;
    }
    unsetenv("DEBUGINFOD_URLS"); /* no download while a thread is held */
    struct sigaction alarm = {.sa_handler = on_alarm}; /* no SA_RESTART: waitpid ends */
    sigaction(SIGALRM, &alarm, NULL);
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
    uint64_t due = now_ns();
    bool holding = false;
    for (bool first = true;; first = false) {
        snapshot(root, first);
        if (prepare(root) == GONE) return 0;
        if (interval) {
            uint64_t now = now_ns();
            due += interval;
            if (due < now) due = now + interval - (now - due) % interval; /* skip, no burst */
            if (due - now < interval / 2) due += interval; /* a long snapshot: leave room */
            atomic_store(&next_due, due);
        }
        if (interval && !holding && realtime_wake && rate <= MAX_HOLD_RATE_HZ) {
            hold_cpus(root);
            holding = true;
        }
        set_realtime(true);
        if (!wait_turn(due, interval > 0)) return 0;
    }
}
