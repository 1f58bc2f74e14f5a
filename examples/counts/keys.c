/* Planted problem (issue 8, prologue overhead): keys_equal() returns early on
 * most calls (the two keys are the same object), yet every call pays for pushing
 * and popping four callee-saved registers, which only the rare path that calls
 * strlen/memcmp needs. Built with -DSPLIT, the rare path moves into a NOINLINE
 * function reached by a tail call and the common path saves nothing.
 * The workload is deterministic: a fixed LCG, no threads, no clock.
 * Usage: keys [ITERATIONS]   (default 1000000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER) && _MSC_VER >= 1310
#define NOINLINE __declspec(noinline)
#else
#define NOINLINE
#endif

#define NKEYS 64

struct key {
    const char *text;
    unsigned hash;
};

#ifndef SPLIT
NOINLINE int keys_equal(const struct key *a, const struct key *b)
{
    if (a == b)
        return 1;
    if (a->hash != b->hash)
        return 0;
    size_t la = strlen(a->text);
    size_t lb = strlen(b->text);
    return la == lb && memcmp(a->text, b->text, la) == 0;
}
#else
static NOINLINE int distinct_keys_equal(const struct key *a, const struct key *b)
{
    if (a->hash != b->hash)
        return 0;
    size_t la = strlen(a->text);
    size_t lb = strlen(b->text);
    return la == lb && memcmp(a->text, b->text, la) == 0;
}

NOINLINE int keys_equal(const struct key *a, const struct key *b)
{
    if (a == b)
        return 1;
    return distinct_keys_equal(a, b);
}
#endif

int main(int argc, char **argv)
{
    static struct key keys[NKEYS];
    static char names[NKEYS][16];
    long iterations = argc > 1 ? atol(argv[1]) : 1000000;
    unsigned state = 12345, hits = 0;

    for (int i = 0; i < NKEYS; i++) {
        snprintf(names[i], sizeof names[i], "key%d", i % (NKEYS / 2));
        keys[i].text = names[i];
        keys[i].hash = i % (NKEYS / 2);
    }
    for (long i = 0; i < iterations; i++) {
        state = state * 1103515245u + 12345u;
        const struct key *a = &keys[(state >> 16) % NKEYS];
        /* one lookup in 16 compares two different keys */
        const struct key *b = ((state >> 8) & 15) == 0 ? &keys[(state >> 24) % NKEYS] : a;
        hits += keys_equal(a, b);
    }
    printf("%u equal of %ld\n", hits, iterations);
    return 0;
}
