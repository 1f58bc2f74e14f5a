"""Python calling into a native extension: zlib compression from one caller only.

pack_logs() compresses the log batches at level 9 (the native hot spot: deflate in
libz), checksum_blocks() runs zlib.crc32 (cheap native work) and tokenize() is
plain Python. perfsleuth should put libz's deflate frames under pack_logs().

Usage: python3 zlib_mixed.py [ROUNDS]   (default 40, about 2 s)
"""

import random
import sys
import zlib


def make_logs(n, seed=7):
    rng = random.Random(seed)
    words = ["GET", "POST", "/api/orders", "/api/users", "200", "404", "500", "ms", "user"]
    return [
        " ".join(rng.choice(words) for _ in range(12)) + f" {rng.randint(0, 10**6)}"
        for _ in range(n)
    ]


def pack_logs(lines):
    return zlib.compress("\n".join(lines).encode(), 9)


def checksum_blocks(lines):
    return sum(zlib.crc32(line.encode()) for line in lines[:200])


def tokenize(lines):
    counts = {}
    for line in lines[:1000]:
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    return counts


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    lines = make_logs(4000)
    size = 0
    for _ in range(rounds):
        size += len(pack_logs(lines))
        checksum_blocks(lines)
        tokenize(lines)
    print(f"zlib_mixed: {rounds} rounds, {size} bytes compressed")


if __name__ == "__main__":
    main()
