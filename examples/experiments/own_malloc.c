// Planted problem: the program brings its own allocator (a bump allocator that
// defines malloc/free itself), so LD_PRELOAD of mimalloc or jemalloc cannot replace
// it; `perfsleuth try allocator` must refuse rather than measure a no-op swap.
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static char arena[1 << 24];
static size_t used;

void *malloc(size_t n) {
  size_t at = (used + 15) & ~(size_t)15;
  if (at + n > sizeof arena) return NULL;
  used = at + n;
  return arena + at;
}
void free(void *p) { (void)p; }
void *calloc(size_t count, size_t size) {
  void *p = malloc(count * size);
  if (p) memset(p, 0, count * size);
  return p;
}
void *realloc(void *old, size_t n) {
  void *p = malloc(n);
  if (p && old) memcpy(p, old, n);  // may over-read within the arena; fine for a demo
  return p;
}

int main(void) {
  size_t total = 0;
  for (int i = 0; i < 100000; ++i) {
    char *s = malloc(32);
    total += (size_t)snprintf(s, 32, "item-%d", i);
    free(s);
  }
  printf("%zu\n", total);
  return 0;
}
