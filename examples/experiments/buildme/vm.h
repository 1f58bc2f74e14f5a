#ifndef VM_H
#define VM_H
#include <stddef.h>
#include <stdint.h>

enum op { OP_PUSH, OP_ADD, OP_MUL, OP_XOR, OP_DUP, OP_SWAP, OP_DROP, OP_JNZ, OP_HALT };

struct insn {
  enum op op;
  int64_t arg;
};

int64_t vm_run(const struct insn *code, size_t len, int64_t iterations);
#endif
