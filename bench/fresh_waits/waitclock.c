/* waitclock: an LD_PRELOAD clock of a program's own waiting, without changing the program.
 * Times every pthread_mutex_lock (`mutex`) and pthread_cond_wait/timedwait (`cond`, the
 * relock inside included) and epoll_wait/epoll_pwait (`io`: an event loop's wait for its
 * sockets) per thread with CLOCK_MONOTONIC, and each thread's life (a
 * started thread from its start routine's first instruction, the main thread from this
 * library's constructor), and prints at each thread's end, on stderr:
 *   worker tid T mutex NS cond NS lived NS run NS runq NS io NS   (a started thread)
 *   main tid T mutex NS cond NS lived NS run NS runq NS io NS     (the main thread, at exit;
 *                                                                 a forked child's from the fork)
 * run and runq are the kernel's clock of the thread (/proc/thread-self/schedstat): its
 * time on a CPU and runnable waiting for one; its life less both is its time blocked,
 * whatever the call.
 * Its own functions are named pthread_* (and __pthread_*) so that profilers take them
 * for the library they stand in for. It writes to its own copy of stderr: GNU sort
 * closes stderr before it exits (gnulib's close_stdout), and the main thread's line
 * comes after.
 *   gcc -O2 -g -shared -fPIC -o waitclock.so waitclock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct clock_of_thread {
	unsigned long long mutex, cond, io, start;
};
static __thread struct clock_of_thread mine;
static int clock_fd = 2;

static int (*real_lock)(pthread_mutex_t *);
static int (*real_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);

static inline unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* the thread's time on the CPU and waiting for one (ns), from the scheduler */
static void scheduled_ns(unsigned long long *run, unsigned long long *runnable)
{
	char text[96] = "";
	int fd = open("/proc/thread-self/schedstat", O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0 || sscanf(text, "%llu %llu", run, runnable) != 2)
		*run = *runnable = 0;
}

static inline void print_clock(const char *who)
{
	char line[200];
	unsigned long long run = 0, runnable = 0, lived = now_ns() - mine.start;
	scheduled_ns(&run, &runnable);
	int n = snprintf(line, sizeof line,
			 "%s tid %ld mutex %llu cond %llu lived %llu run %llu runq %llu io %llu\n", who,
			 (long)syscall(SYS_gettid), mine.mutex, mine.cond, lived, run, runnable, mine.io);
	if (n > 0 && write(clock_fd, line, (size_t)n) < 0)
		return;
}

/* a forked child (nginx's workers) is a new process: its life starts at the fork */
static void pthread_waitclock_forked(void)
{
	mine = (struct clock_of_thread){.start = now_ns()};
}

__attribute__((constructor)) static void pthread_waitclock_init(void)
{
	real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	/* the unversioned name is glibc's 2.2.5 compat condvar: ask for the current one */
	real_wait = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
	real_timedwait = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
	real_create = dlsym(RTLD_NEXT, "pthread_create");
	real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
	real_epoll_pwait = dlsym(RTLD_NEXT, "epoll_pwait");
	if (!real_lock || !real_wait || !real_timedwait || !real_create) {
		write(2, "waitclock: pthread functions not found\n", 39);
		_exit(99);
	}
	int fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
	if (fd >= 0)
		clock_fd = fd;
	mine.start = now_ns();
	pthread_atfork(NULL, NULL, pthread_waitclock_forked);
}

__attribute__((destructor)) static void pthread_waitclock_fini(void)
{
	print_clock("main");
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	unsigned long long t = now_ns();
	int r = real_lock(m);
	mine.mutex += now_ns() - t;
	return r;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	unsigned long long t = now_ns();
	int r = real_wait(c, m);
	mine.cond += now_ns() - t;
	return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *at)
{
	unsigned long long t = now_ns();
	int r = real_timedwait(c, m, at);
	mine.cond += now_ns() - t;
	return r;
}

int epoll_wait(int fd, struct epoll_event *events, int n, int timeout)
{
	unsigned long long t = now_ns();
	int r = real_epoll_wait(fd, events, n, timeout);
	mine.io += now_ns() - t;
	return r;
}

int epoll_pwait(int fd, struct epoll_event *events, int n, int timeout, const sigset_t *mask)
{
	unsigned long long t = now_ns();
	int r = real_epoll_pwait(fd, events, n, timeout, mask);
	mine.io += now_ns() - t;
	return r;
}

struct start {
	void *(*routine)(void *);
	void *arg;
};

static void __pthread_waitclock_end(void *unused)
{
	(void)unused;
	print_clock("worker");
}

static void *__pthread_waitclock_start(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	mine.start = now_ns();
	void *r;
	/* a thread that calls pthread_exit is printed too */
	pthread_cleanup_push(__pthread_waitclock_end, NULL);
	r = s.routine(s.arg);
	pthread_cleanup_pop(1);
	return r;
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*routine)(void *), void *arg)
{
	struct start *s = malloc(sizeof *s);
	if (!s)
		return real_create(t, attr, routine, arg);
	s->routine = routine;
	s->arg = arg;
	return real_create(t, attr, __pthread_waitclock_start, s);
}
