/* Labelled set, look-alike class "another reason": loops that cannot be vectorised
   whatever the types (a call the compiler cannot see through, a volatile access, an
   early exit); they are missed vectorisation, not aliasing. Labels in manifest.toml. */
#include <stddef.h>
#include <stdint.h>

struct Buf {
    unsigned char *data;
    size_t len;
};

typedef void (*progress_fn)(size_t done);

__attribute__((noinline)) static void count_step(size_t *steps) { *steps += 1; }

__attribute__((const)) static unsigned char mix(unsigned char c) { return (unsigned char)(c * 7u + 3u); }

static inline unsigned char half(unsigned char c) { return c >> 1; }

/* negative: a call through a function pointer in the loop */
void fill_reporting(struct Buf *b, progress_fn report) {
    for (size_t i = 0; i < b->len; i++) {
        b->data[i] = 0;
        report(i);
    }
}

/* negative: a function kept out of line (noinline) is called in the loop */
void fill_counted(struct Buf *b, size_t *steps) {
    for (size_t i = 0; i < b->len; i++) {
        b->data[i] = 1;
        count_step(steps);
    }
}

/* negative: each byte goes to a volatile device register */
void send_all(const struct Buf *b, volatile unsigned char *port) {
    for (size_t i = 0; i < b->len; i++) *port = b->data[i];
}

/* negative: a volatile status is read on every iteration */
void sample_status(struct Buf *b, const volatile uint8_t *status) {
    for (size_t i = 0; i < b->len; i++) b->data[i] = *status;
}

/* negative: an early exit (break) at the first zero */
size_t copy_until_zero(struct Buf *b, const unsigned char *src) {
    size_t i;
    for (i = 0; i < b->len; i++) {
        if (src[i] == 0) break;
        b->data[i] = src[i];
    }
    return i;
}

/* negative: an early exit (return) from inside the loop */
int fill_checked(struct Buf *b, const unsigned char *src) {
    for (size_t i = 0; i < b->len; i++) {
        if (src[i] > 127) return -1;
        b->data[i] = src[i];
    }
    return 0;
}

/* negative: an early exit (goto) out of the loop */
int fill_or_fail(struct Buf *b, const unsigned char *src) {
    for (size_t i = 0; i < b->len; i++) {
        if (src[i] == 0xff) goto fail;
        b->data[i] = src[i];
    }
    return 0;
fail:
    return -1;
}

/* negative: an atomic counter is updated on every iteration */
void fill_counting(struct Buf *b, _Atomic size_t *done) {
    for (size_t i = 0; i < b->len; i++) {
        b->data[i] = 0;
        *done += 1;
    }
}

/* negative: inline assembly (here a compiler barrier) in the loop */
void fill_fenced(struct Buf *b) {
    for (size_t i = 0; i < b->len; i++) {
        b->data[i] = 0;
        __asm__ __volatile__("" ::: "memory");
    }
}

/* positive: continue skips an element, the loop still runs to b->len */
void copy_nonzero(struct Buf *b, const unsigned char *src) {
    for (size_t i = 0; i < b->len; i++) {
        if (src[i] == 0) continue;
        b->data[i] = src[i];
    }
}

/* positive: break leaves the switch, not the loop */
void map_codes(struct Buf *b, const unsigned char *src) {
    for (size_t i = 0; i < b->len; i++) {
        switch (src[i]) {
        case 1: b->data[i] = 'a'; break;
        case 2: b->data[i] = 'b'; break;
        default: b->data[i] = '?'; break;
        }
    }
}

/* positive: a const function writes no memory; b->len is still re-read */
void scramble(struct Buf *b) {
    for (size_t i = 0; i < b->len; i++) b->data[i] = mix(b->data[i]);
}

/* positive: an inline helper of values only */
void halve(struct Buf *b) {
    for (size_t i = 0; i < b->len; i++) b->data[i] = half(b->data[i]);
}

/* positive: the volatile access and the call are outside the loop */
void fill_after_start(struct Buf *b, volatile unsigned char *ctrl, progress_fn report) {
    *ctrl = 1;
    for (size_t i = 0; i < b->len; i++) b->data[i] = 0x55;
    report(b->len);
}
