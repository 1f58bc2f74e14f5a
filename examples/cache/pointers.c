/* Structs a function reaches through neither a parameter nor a global: a local
 * pointer derived from array indexing, and a heap pointer held in another struct.
 *
 * Planted problems, one per function:
 * - account(t, key, now): `struct flow *f = &t->flows[key % t->n]` (a local from
 *   array indexing into a heap table): it touches line 0 of struct flow (packets,
 *   bytes) and `last_ns`, alone among cold fields on line 2;
 * - bump(t, key, now): account without the local, `t->flows[key % t->n].packets`:
 *   the element's address is t->flows plus the index (GCC -O2 and -O0: `add`, clang
 *   -O2: `disp(base,index)`), laid out as `t->flows[]`;
 * - touch(flows, i, now): `struct flow *f = flows + i` (a local from pointer
 *   arithmetic on a parameter): packets on line 0, `last_ns` alone on line 2;
 * - deliver(s, len, now): `s->peer->...` (a heap pointer held in struct sock): it
 *   touches line 0 of struct peer (rx_bytes, rx_packets) and `rtt_ns`, alone among
 *   cold fields on line 1;
 * - relay(s, len, now): the same as deliver with a call to audit(s) in between:
 *   `s->peer` is kept across the call (GCC -O2: in rax, which it knows the void
 *   audit() leaves alone; clang -O2: reloaded through s, kept in r14; -O0: reloaded
 *   from the stack).
 * Two cache lines per object where one would do, in both.
 *
 * usage: pointers N [OPS]    N flows and N peers, OPS random packets (default 4*N)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct flow {
    /* line 0: what every packet updates */
    uint64_t key;
    uint64_t packets;
    uint64_t bytes;
    char label[40];
    /* line 1: set up once */
    char src[32];
    char dst[32];
    /* line 2: rare events, and the one hot field */
    uint64_t created_ns;
    uint64_t errors;
    uint64_t last_ns;
    char note[40];
};

struct table {
    size_t n;
    struct flow *flows;
};

struct peer {
    /* line 0 */
    uint64_t rx_bytes;
    uint64_t rx_packets;
    char name[48];
    /* line 1 */
    char cert[40];
    uint64_t handshakes;
    uint64_t rtt_ns;
    uint64_t closed_ns;
};

struct sock {
    int fd;
    uint32_t flags;
    struct peer *peer;
};

static uint64_t rng_state = 88172645463325252ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) uint64_t account(struct table *t, uint64_t key, uint64_t now) {
    struct flow *f = &t->flows[key % t->n];
    f->packets += 1;
    f->bytes += key & 0x3ff;
    f->last_ns = now;
    return f->packets;
}

__attribute__((noinline)) uint64_t bump(struct table *t, uint64_t key, uint64_t now) {
    t->flows[key % t->n].packets += 1;
    t->flows[key % t->n].last_ns = now;
    return t->flows[key % t->n].packets;
}

__attribute__((noinline)) uint64_t touch(struct flow *flows, size_t i, uint64_t now) {
    struct flow *f = flows + i;
    f->packets += 1;
    f->last_ns = now;
    return f->packets;
}

__attribute__((noinline)) uint64_t deliver(struct sock *s, uint32_t len, uint64_t now) {
    s->peer->rx_bytes += len;
    s->peer->rx_packets += 1;
    s->peer->rtt_ns = now - s->peer->rtt_ns / 2;
    return s->peer->rx_packets;
}

__attribute__((noinline)) void audit(struct sock *s, uint64_t now) {
    if (now % 1024 == 0)
        s->flags++;
}

__attribute__((noinline)) uint64_t relay(struct sock *s, uint32_t len, uint64_t now) {
    s->peer->rx_bytes += len;
    audit(s, now);
    s->peer->rx_packets += 1;
    s->peer->rtt_ns = now - s->peer->rtt_ns / 2;
    return s->peer->rx_packets;
}

static void *zeroed(size_t n, size_t size) {
    void *p = aligned_alloc(64, n * size);
    if (!p) {
        perror("aligned_alloc");
        exit(1);
    }
    for (size_t i = 0; i < n * size; i++)
        ((char *)p)[i] = 0;
    return p;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [OPS]\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)atol(argv[1]);
    size_t ops = argc > 2 ? (size_t)atol(argv[2]) : 4 * n;
    if (n == 0) {
        fprintf(stderr, "N must be at least 1\n");
        return 2;
    }
    struct table t = {n, zeroed(n, sizeof(struct flow))};
    struct peer *peers = zeroed(n, sizeof(struct peer));
    struct sock *socks = zeroed(n, sizeof(struct sock));
    for (size_t i = 0; i < n; i++) {
        t.flows[i].key = i;
        socks[i].fd = (int)i;
        socks[i].peer = &peers[(i * 7) % n];
    }
    uint64_t check = 0;
    for (size_t i = 0; i < ops; i++) {
        uint64_t r = next_random() ^ check;
        check += account(&t, r, i);
        check += touch(t.flows, (r >> 20) % n, i);
        check += bump(&t, r >> 12, i);

        check += deliver(&socks[r % n], (uint32_t)(r >> 40), i);
        check += relay(&socks[(r >> 8) % n], (uint32_t)(r >> 44), i);

    }
    printf("%zu flows, %zu packets, checksum %llu\n", n, ops, (unsigned long long)check);
    return 0;
}
