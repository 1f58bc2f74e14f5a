/* Planted: one process per item (as `xargs -n 1` or a shell loop runs a tool), each paying
   for exec, the dynamic loader and exit. Fix (-DFIXED): the items in this one process. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

static unsigned item_checksum(unsigned n) {
    unsigned h = 2166136261u;
    for (unsigned i = 0; i < 2000; i++)
        h = (h ^ (n + i)) * 16777619u;
    return h & 0x7f;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "item") == 0)
        return (int)item_checksum((unsigned)atoi(argv[2]));
    unsigned sum = 0;
    for (unsigned n = 0; n < 1000; n++) {
#ifdef FIXED
        sum += item_checksum(n);
#else
        char arg[16];
        char *args[] = {argv[0], "item", arg, NULL};
        pid_t pid;
        int status;
        snprintf(arg, sizeof arg, "%u", n);
        if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0)
            return 1;
        waitpid(pid, &status, 0);
        sum += (unsigned)WEXITSTATUS(status);
#endif
    }
    printf("%u\n", sum);
    return 0;
}
