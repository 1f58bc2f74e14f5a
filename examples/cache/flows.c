/* A flow table whose struct has what real ones have: bitfield flags, a union, a
 * nested anonymous struct and an array, so that perfsleuth's layout can be checked
 * against pahole's member by member.
 *
 * Planted problem: account() reads the `active` and `retries` bitfields on line 0
 * and `last_seen`, alone among cold fields on line 1: two cache lines per flow
 * where one would do (line 0 has a cold 16-byte union to trade for it).
 *
 * usage: flows N [OPS]   N flows, OPS random packets (default 4*N)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct flow {
    uint32_t id;
    unsigned int active : 1;
    unsigned int retries : 3;
    unsigned int priority : 4;
    uint16_t port;
    union {
        uint32_t v4;
        uint8_t v6[16];
    } addr;
    struct {
        uint64_t sent, received;
    } stats;
    char name[20];
    uint64_t last_seen;
};

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) uint64_t account(struct flow *f, uint64_t now) {
    if (!f->active || f->retries > 5)
        return 0;
    uint64_t idle = now - f->last_seen;
    f->last_seen = now;
    return idle;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1000;
    size_t ops = argc > 2 ? (size_t)atol(argv[2]) : 4 * n;
    if (n == 0) {
        fprintf(stderr, "usage: %s N [OPS]\n", argv[0]);
        return 2;
    }
    struct flow *flows = calloc(n, sizeof *flows);
    if (!flows) {
        perror("calloc");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        flows[i].id = (uint32_t)i;
        flows[i].active = 1;
        snprintf(flows[i].name, sizeof flows[i].name, "flow-%zu", i);
    }
    uint64_t idle = 0;
    for (size_t i = 0; i < ops; i++)
        idle += account(&flows[next_random() % n], i);
    printf("%zu flows, %zu packets, idle %llu\n", n, ops, (unsigned long long)idle);
    free(flows);
    return 0;
}
