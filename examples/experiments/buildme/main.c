// Runs a fixed little bytecode program many times. Usage: vm [THOUSANDS] (default 3000)
#include <stdio.h>
#include <stdlib.h>

#include "vm.h"

static const struct insn program[] = {
    {OP_DUP, 0}, {OP_PUSH, 31}, {OP_MUL, 0}, {OP_PUSH, 7}, {OP_ADD, 0},
    {OP_DUP, 0}, {OP_PUSH, 0x55}, {OP_XOR, 0}, {OP_JNZ, 4}, {OP_SWAP, 0},
    {OP_DROP, 0}, {OP_DUP, 0}, {OP_PUSH, 3}, {OP_MUL, 0}, {OP_ADD, 0},
    {OP_DUP, 0}, {OP_PUSH, 1}, {OP_XOR, 0}, {OP_ADD, 0}, {OP_HALT, 0},
};

int main(int argc, char **argv) {
  long thousands = argc > 1 ? atol(argv[1]) : 3000;
  long long r = vm_run(program, sizeof program / sizeof program[0], thousands * 1000);
  printf("%lld\n", r);
  return 0;
}
