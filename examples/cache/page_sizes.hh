/* The TLB's share of a map's lookup latency, apart from the caches' (map_harness.hh's
 * `--tlb-sweep N1,N2,...`). The same map is built twice, each in an arena of its own: one
 * madvised for transparent huge pages (2 MiB: 3,072 of them reach 6 GiB, past any table
 * here), one forbidden them (4 KiB pages at whatever frames the kernel gives, what a
 * program's malloc'd table sits on by default: THP is `madvise` on Debian). The two are
 * timed in alternate rounds a few ms
 * long, so that both see the same neighbours' share of the shared LLC, which moves within
 * seconds; their difference is the page walks alone.
 *
 * Why: a table's TLB cliff lies 1.2-1.7x past its LLC's, where each lookup already waits
 * ~100 ns or more per line from memory and a neighbour's burst moves that by tens of ns
 * from one size to the next, while a walk costs ~12 ns. Fitted on one curve, the TLB's
 * knee was whatever the LLC's noise made it (ankerl::unordered_dense +72%, tsl::ordered_map
 * +28% and +80%).
 *
 * While an arena is open every `new` of the program is served from it (a bump pointer,
 * 16-byte aligned; `delete` of its memory is a no-op, the arena is emptied whole). */
#ifndef PAGE_SIZES_HH
#define PAGE_SIZES_HH

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>

struct Arena {
    char *base, *next, *end;
};
static Arena huge_arena, small_arena;
static Arena *open_arena;
static const size_t ARENA_BYTES = (size_t)8 << 30; // reserved, not committed
static const size_t HUGE_PAGE = (size_t)2 << 20;

static void arena_reserve(Arena &arena, bool huge) {
    void *raw = mmap(nullptr, ARENA_BYTES + HUGE_PAGE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    arena.base = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    arena.next = arena.base;
    arena.end = arena.base + ARENA_BYTES;
    madvise(arena.base, ARENA_BYTES, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/* Gives the arena's pages back and starts it again from its base. */
static void arena_empty(Arena &arena) {
    madvise(arena.base, (size_t)(arena.next - arena.base + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1),
            MADV_DONTNEED);
    arena.next = arena.base;
}

static bool in_arena(const Arena &arena, void *p) {
    return (char *)p >= arena.base && (char *)p < arena.end;
}

/* The kB of the arena's memory resident, and of those on huge pages (/proc/self/smaps). */
static void arena_pages(const Arena &arena, long *resident_kb, long *huge_kb) {
    *resident_kb = *huge_kb = 0;
    FILE *smaps = fopen("/proc/self/smaps", "r");
    char line[256];
    bool inside = false;
    while (smaps && fgets(line, sizeof line, smaps)) {
        unsigned long start, end;
        long kb;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) /* a mapping's first line */
            inside = (char *)start < arena.end && (char *)end > arena.base;
        else if (inside && sscanf(line, "Rss: %ld kB", &kb) == 1)
            *resident_kb += kb;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            *huge_kb += kb;
    }
    if (smaps)
        fclose(smaps);
}

void *operator new(size_t size) {
    if (open_arena) {
        char *at = open_arena->next;
        if (size > (size_t)(open_arena->end - at)) {
            fputs("page_sizes.hh: arena full\n", stderr);
            abort();
        }
        open_arena->next = at + ((size + 15) & ~(size_t)15);
        return at;
    }
    if (void *p = malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}
void *operator new[](size_t size) { return operator new(size); }
void operator delete(void *p) noexcept {
    if (!in_arena(huge_arena, p) && !in_arena(small_arena, p))
        free(p);
}
void operator delete[](void *p) noexcept { operator delete(p); }
void operator delete(void *p, size_t) noexcept { operator delete(p); }
void operator delete[](void *p, size_t) noexcept { operator delete(p); }

#endif
