/* Planted problem: glib's g_string_append_c (gstring.h's inline
 * g_string_append_c_inline) in a hot loop. Its `gstring->str[gstring->len++] = c;
 * gstring->str[gstring->len] = 0;` stores a char, after which the compiler must load
 * gstring->str and gstring->len again (the shape of the study's glib instance).
 * Built against glib 2.74.6's headers as the project's own (bench/aliasing_fixes.py
 * copies them next to it), `advise --verify --build` keeps both in locals and writes
 * the length back (docs/aliasing.md). */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static GString* repeat(GString* s, const char* text, gsize n) {
    for (gsize i = 0; i < n; i++)
        g_string_append_c(s, text[i]);
    return s;
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    char text[4096];
    for (int i = 0; i < 4096; i++) text[i] = 'a' + i % 26;
    unsigned long h = 0;
    for (int r = 0; r < rounds; r++) {
        GString* s = g_string_sized_new(8192);
        repeat(s, text, sizeof text);
        h = h * 31 + (unsigned char)s->str[r % s->len];
        g_string_free(s, TRUE);
    }
    printf("%lx\n", h);
    return 0;
}
