/* A connection table in the spirit of a TCP stack's control blocks.
 *
 * Planted problem: struct conn is five cache lines long and the packet fast path,
 * handle_packet(), touches line 0 (state, seq, window) and one field, `last_ack`,
 * that sits alone among cold fields on line 4 (it reads it, to spot a duplicate
 * acknowledgement, and writes it). Every packet therefore pulls two
 * cache lines per connection where one would do. Built with -DREORDERED (the
 * conntable-reordered binary), `last_ack` moves into the hot first line.
 * With -DCOMPACT as well (conntable-compact), the cold tail is cut so that the
 * struct is 256 bytes: the same one hot line per connection, but every line 0 now
 * sits at one of 16 places in its page (and the prefetched line 1 at 16 more), so
 * the connections' lines fill only half of each cache's sets.
 *
 * usage: conntable N [OPS]          N connections, OPS random packets (default 4*N)
 *        conntable --sweep N1,N2,.. per-packet latency (ns) for each N, one line each
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct conn {
    /* line 0: what every packet reads and writes */
    uint32_t state;
    uint32_t flags;
    uint64_t seq;
    uint64_t window;
#ifdef REORDERED
    uint64_t last_ack;
#endif
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint32_t local_port;
    uint32_t remote_port;
    uint8_t peer_addr[16];
    /* lines 1-3: set up once, read on rare events */
    char peer_name[64];
    uint64_t retransmit_timer[8];
    uint64_t keepalive_timer;
    uint64_t created_ns;
    uint32_t options;
    uint32_t mss;
#ifdef COMPACT
    uint64_t congestion_stats[4];
#else
    uint64_t congestion_stats[5];
    /* line 4 */
    uint64_t errors;
#ifndef REORDERED
    uint64_t last_ack;
#endif
    uint64_t closed_ns;
    uint64_t owner;
    uint8_t reserved[32];
#endif
} __attribute__((aligned(64)));

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The fast path: acknowledge one packet on connection c; returns the new sequence
 * number, plus one for a duplicate acknowledgement. Both fields come from memory,
 * so a caller that picks its next connection with the result waits for both of
 * this one's cache lines (a constant, e.g. the state the branch already checked,
 * would let the CPU overlap the next packet's misses with this one's). */
__attribute__((noinline)) uint32_t handle_packet(struct conn *c, uint64_t ack) {
    if (c->state != 1)
        return c->state;
    uint64_t duplicate = c->last_ack == ack;
    c->seq += 1;
    c->window = (c->window + ack) & 0xffff;
    c->last_ack = ack;
    return (uint32_t)(c->seq + duplicate);
}

static struct conn *open_connections(size_t n) {
    /* Ordinary heap memory (no huge-page advice), like most servers' tables: the
     * TLB is part of what the latency sweep measures, as it is for them. */
    struct conn *table = aligned_alloc(64, n * sizeof(struct conn));
    if (!table) {
        perror("aligned_alloc");
        exit(1);
    }
    memset(table, 0, n * sizeof *table);
    for (size_t i = 0; i < n; i++) {
        table[i].state = 1;
        table[i].local_port = (uint32_t)i;
        snprintf(table[i].peer_name, sizeof table[i].peer_name, "peer-%zu", i);
    }
    return table;
}

/* OPS packets on random connections; each choice depends on the previous packet's
 * result, so the loads cannot overlap and the time per packet is a latency. */
static uint64_t run_packets(struct conn *table, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        size_t index = (size_t)((next_random() ^ previous) % n);
        previous = handle_packet(&table[index], i);
        check += previous;
    }
    return check;
}

#include "latency_sweep.h"

static uint64_t packets_round(void *table, size_t ops) {
    return run_packets(table, sweep_n, ops);
}

/* Not inlined, so that a plain run never calls it: the "never called" case. */
__attribute__((noinline)) static double latency_ns(size_t n) {
    struct conn *table = open_connections(n);
    run_packets(table, n, n < 2000000 ? 2 * n : n);
    sweep_n = n;
    double best = fastest_round(packets_round, table);
    free(table);
    return best;
}

int main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "struct conn", sizeof(struct conn), "packet", latency_ns))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "connections", &ops);
    struct conn *table = open_connections(n);
    uint64_t check = run_packets(table, n, ops);
    printf("%zu connections, %zu packets, checksum %llu\n", n, ops, (unsigned long long)check);
    free(table);
    return 0;
}
