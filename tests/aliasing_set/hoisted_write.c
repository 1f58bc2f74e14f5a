/* Labelled set, look-alike class "write outside the loop": the char-typed write has
   been moved out of the loop (before it, after it, or out of the inner loop into the
   outer one), so nothing is re-read per iteration. Labels in manifest.toml. */
#include <stddef.h>
#include <stdint.h>

struct Buf {
    unsigned char *data;
    size_t len;
};

struct Grid {
    const uint32_t *cells;
    size_t rows;
    size_t cols;
};

/* negative: the byte is stored once, after the loop */
void xor_then_store(const struct Buf *b, unsigned char *out) {
    unsigned char acc = 0;
    for (size_t i = 0; i < b->len; i++) acc ^= b->data[i];
    *out = acc;
}

/* negative: the byte is stored once, before the loop reads the buffer */
size_t clear_first_then_count(struct Buf *b) {
    size_t zeros = 0;
    b->data[0] = 0;
    for (size_t i = 1; i < b->len; i++) zeros += b->data[i] == 0;
    return zeros;
}

/* negative: the byte is stored once per row, after the inner loop that does the work */
void mark_rows(const struct Grid *g, unsigned char *marks) {
    for (size_t r = 0; r < g->rows; r++) {
        uint32_t sum = 0;
        for (size_t c = 0; c < g->cols; c++) sum += g->cells[r * g->cols + c];
        marks[r] = sum != 0;
    }
}

struct Samples {
    const float *values;
    size_t rows;
    size_t cols;
};

/* negative: the same after an inner loop clang keeps scalar (an ordered float sum) */
void mark_rows_float(const struct Samples *s, unsigned char *marks) {
    for (size_t r = 0; r < s->rows; r++) {
        float sum = 0;
        for (size_t c = 0; c < s->cols; c++) sum += s->values[r * s->cols + c];
        marks[r] = sum > 0;
    }
}

/* negative: a terminator written after the copy loop, which writes words */
void widen_then_terminate(const struct Buf *b, uint32_t *out, unsigned char *end) {
    for (size_t i = 0; i < b->len; i++) out[i] = b->data[i];
    *end = 0;
}

/* negative: the flag byte is set before the loop, which only reads */
size_t flag_then_sum(struct Buf *b, unsigned char *busy) {
    size_t total = 0;
    *busy = 1;
    for (size_t i = 0; i < b->len; i++) total += b->data[i];
    return total;
}

/* positive: the same accumulation, but stored through the pointer on every iteration */
void xor_into(const struct Buf *b, unsigned char *out) {
    for (size_t i = 0; i < b->len; i++) *out ^= b->data[i];
}

/* positive: the byte store is inside the inner loop, which re-reads g->cols */
void threshold_rows(const struct Grid *g, unsigned char *out) {
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t c = 0; c < g->cols; c++) out[r * g->cols + c] = g->cells[c] > 9;
    }
}

/* positive: a byte stored before the loop and in it; the loop's stores force the reloads */
void clear_all(struct Buf *b) {
    b->data[0] = 0;
    for (size_t i = 1; i < b->len; i++) b->data[i] = 0;
}
