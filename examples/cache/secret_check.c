/* Checks a token against a built-in key, as an authentication step would.
 *
 * Planted problem: check_token() returns at the first byte that differs, so the
 * instructions it runs (and its branches) depend on how much of the secret the
 * guess got right: its timing leaks the key. check_token_ct() compares every byte
 * and folds the differences with OR, the same work for any input.
 *
 * usage: secret_check [--ct] GUESS   (prints "ok" or "denied")
 */
#include <stdio.h>
#include <string.h>

static const char key[] = "s3cr3t-k3y-2026";

__attribute__((noinline)) int check_token(const char *guess, size_t length) {
    if (length != sizeof key - 1)
        return 0;
    for (size_t i = 0; i < length; i++)
        if (guess[i] != key[i])
            return 0;
    return 1;
}

__attribute__((noinline)) int check_token_ct(const char *guess, size_t length) {
    unsigned char difference = length != sizeof key - 1;
    for (size_t i = 0; i < sizeof key - 1; i++)
        difference |= (unsigned char)(guess[i < length ? i : 0] ^ key[i]);
    return difference == 0;
}

int main(int argc, char **argv) {
    int constant = argc > 2 && strcmp(argv[1], "--ct") == 0;
    const char *guess = argv[argc - 1];
    if (argc < 2 || (argc > 2 && !constant)) {
        fprintf(stderr, "usage: %s [--ct] GUESS\n", argv[0]);
        return 2;
    }
    int ok = 0;
    for (int round = 0; round < 100; round++)
        ok = constant ? check_token_ct(guess, strlen(guess)) : check_token(guess, strlen(guess));
    puts(ok ? "ok" : "denied");
    return 0;
}
