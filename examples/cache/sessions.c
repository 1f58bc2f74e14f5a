/* A server's session table: a global array of structs, the common
 * `static struct session sessions[N]` of C servers.
 *
 * Planted problem: struct session is two cache lines long and the request fast
 * path, serve(), touches line 0 (state, hits, bytes) and one field, `last_seen`,
 * that sits alone among cold fields on line 1. Every request therefore pulls two
 * cache lines per session where one would do. serve() also counts requests in the
 * global `stats` and reads its request through a pointer parameter, so one call
 * touches a parameter struct, a global struct and an element of a global array.
 *
 * usage: sessions N [OPS]    N open sessions (at most 4096), OPS random requests
 *                            (default 4*N)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SESSIONS 4096
#define OPEN 1

struct session {
    /* line 0: what every request reads and writes */
    uint32_t state;
    uint32_t flags;
    uint64_t hits;
    uint64_t bytes;
    char user[24];
    uint64_t created_ns;
    uint64_t expires_ns;
    /* line 1: set up once, read on rare events */
    char peer[32];
    uint64_t auth_token[2];
    uint64_t last_seen;
    uint64_t closed_ns;
} __attribute__((aligned(64)));

struct server_stats {
    uint64_t requests;
    uint64_t rejected;
    uint64_t started_ns;
};

struct request {
    uint32_t session;
    uint32_t bytes;
    uint64_t time;
};

static struct session sessions[MAX_SESSIONS];
struct server_stats stats;

/* The fast path: account one request to its session; returns its hit count. */
__attribute__((noinline)) uint64_t serve(const struct request *req) {
    struct session *s = &sessions[req->session];
    stats.requests += 1;
    if (s->state != OPEN) {
        stats.rejected += 1;
        return 0;
    }
    s->hits += 1;
    s->bytes += req->bytes;
    s->last_seen = req->time;
    return s->hits;
}

static void open_sessions(size_t n) {
    for (size_t i = 0; i < n; i++) {
        sessions[i].state = OPEN;
        snprintf(sessions[i].user, sizeof sessions[i].user, "user-%zu", i);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [OPS]\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)atol(argv[1]);
    size_t ops = argc > 2 ? (size_t)atol(argv[2]) : 4 * n;
    if (n == 0 || n > MAX_SESSIONS) {
        fprintf(stderr, "N must be between 1 and %d sessions\n", MAX_SESSIONS);
        return 2;
    }
    open_sessions(n);
    struct request *requests = calloc(ops, sizeof *requests);
    if (!requests) {
        perror("calloc");
        return 1;
    }
    uint64_t random = 0x9E3779B97F4A7C15ull, check = 0;
    for (size_t i = 0; i < ops; i++) {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        requests[i] = (struct request){(uint32_t)(random % n), (uint32_t)(random >> 40) % 1500, i};
    }
    for (size_t i = 0; i < ops; i++)
        check += serve(&requests[i]);
    printf("%zu sessions, %zu requests, checksum %llu\n", n, ops, (unsigned long long)check);
    free(requests);
    return 0;
}
