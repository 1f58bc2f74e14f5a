// Planted problem: none in the code; what matters is how it is built. A switch-
// dispatched interpreter loop: -O0 keeps every value in memory (several times
// slower than -O2), and PGO learns which opcodes and branches are hot.
#include "vm.h"

int64_t vm_run(const struct insn *code, size_t len, int64_t iterations) {
  int64_t stack[64];
  int64_t result = 0;
  for (int64_t it = 0; it < iterations; ++it) {
    size_t sp = 0, pc = 0;
    stack[sp++] = it;
    while (pc < len) {
      const struct insn *i = &code[pc++];
      switch (i->op) {
        case OP_PUSH: stack[sp++] = i->arg; break;
        case OP_ADD: sp--; stack[sp - 1] += stack[sp]; break;
        case OP_MUL: sp--; stack[sp - 1] *= stack[sp]; break;
        case OP_XOR: sp--; stack[sp - 1] ^= stack[sp]; break;
        case OP_DUP: stack[sp] = stack[sp - 1]; sp++; break;
        case OP_SWAP: { int64_t t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; } break;
        case OP_DROP: sp--; break;
        case OP_JNZ: if (stack[sp - 1] & i->arg) pc = (pc + 1) % len; break;
        case OP_HALT: pc = len; break;
      }
    }
    result += stack[sp - 1];
  }
  return result;
}
