/* Labelled set: C pointers and structs. Each function's label is in manifest.toml. */
#include <stddef.h>
#include <stdint.h>

struct Buf {
    unsigned char *data;
    size_t len;
    size_t cap;
};

struct Words {
    uint32_t *data;
    size_t len;
};

struct GString {
    char *str;
    size_t len;
    size_t allocated_len;
};

struct Templates {
    unsigned num_classes;
};

void g_string_insert_c(struct GString *s, long pos, char c);

int g_count;
char *g_buffer;

/* positive: a struct field in the condition, bytes written through another field */
void buf_fill(struct Buf *b) {
    for (size_t i = 0; i < b->len; i++) b->data[i] = 0x20;
}

/* positive: a write through a char** row; rows[r] is reloaded after every byte */
void clear_row(char **rows, int r, int width) {
    for (int j = 0; j < width; j++) rows[r][j] = ' ';
}

/* positive: the byte write sits next to a struct field updated in the loop */
void buf_append(struct Buf *b, const unsigned char *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        b->data[b->len] = src[i];
        b->len++;
    }
}

/* positive: glib's g_string_append_c, straight-line */
struct GString *append_c(struct GString *s, char c) {
    if (s->len + 1 < s->allocated_len) {
        s->str[s->len++] = c;
        s->str[s->len] = 0;
    } else {
        g_string_insert_c(s, -1, c);
    }
    return s;
}

/* positive: globals are memory too */
void zero_global(void) {
    for (int i = 0; i < g_count; i++) g_buffer[i] = 0;
}

/* positive: the bound is behind a pointer */
void fill_to(unsigned char *out, const size_t *n) {
    for (size_t i = 0; i < *n; i++) out[i] = 1;
}

/* positive: tesseract's pruner loop shape */
void prune(const struct Templates *t, uint8_t *pruner, const uint8_t *norm) {
    for (unsigned id = 0; id < t->num_classes; ++id) pruner[id] = norm[id] + 1;
}

/* negative: the same loop over uint32_t */
void words_fill(struct Words *w) {
    for (size_t i = 0; i < w->len; i++) w->data[i] = 0x20;
}

/* negative: bound and pointer hoisted into locals */
void buf_fill_hoisted(struct Buf *b) {
    size_t n = b->len;
    unsigned char *d = b->data;
    for (size_t i = 0; i < n; i++) d[i] = 0x20;
}

/* negative: a restrict-qualified destination */
void fill_restrict(unsigned char *restrict out, const size_t *n) {
    for (size_t i = 0; i < *n; i++) out[i] = 1;
}

/* negative: the bound is a plain parameter and the destination a plain pointer */
void fill_plain(unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (unsigned char)i;
}

/* negative: writes go to a stack buffer */
int local_hist(const struct Buf *b) {
    unsigned char seen[256] = {0};
    for (size_t i = 0; i < b->len; i++) seen[b->data[i]] = 1;
    return seen[0] + seen[255];
}

/* negative: straight-line, everything in locals first */
void append_c_hoisted(struct GString *s, char c) {
    size_t len = s->len;
    char *str = s->str;
    str[len] = c;
    str[len + 1] = 0;
    s->len = len + 1;
}

/* negative: the base pointer changes between the two reads */
size_t walk_two(struct Buf *a, struct Buf *b) {
    size_t first = a->len;
    a->data[0] = 1;
    a = b;
    return first + a->len;
}

/* negative: bool does not alias */
void flags_set(struct Buf *b, _Bool *flags) {
    for (size_t i = 0; i < b->len; i++) flags[i] = 1;
}

static inline size_t buf_len(const struct Buf *b) { return b->len; }
static inline size_t doubled(size_t n) { return 2 * n; }

/* positive: an inline accessor function in the condition reads b->len */
void buf_clear(struct Buf *b) {
    for (size_t i = 0; i < buf_len(b); ++i) b->data[i] = 0;
}

/* negative: an inline function of a value reads no memory */
void fill_doubled(unsigned char *out, size_t n) {
    for (size_t i = 0; i < doubled(n); ++i) out[i] = 0;
}
