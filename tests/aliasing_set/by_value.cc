// Labelled set, look-alike class "by value": the char is a field of a local object or
// of an object passed by value, written directly, not through a pointer that could
// alias what the loop reads. Labels in manifest.toml.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

struct Rgb {
    uint8_t r, g, b;
};

struct Line {
    char text[16];
    std::size_t used;
};

struct Header {
    uint8_t flags;
    uint8_t kind;
};

struct Message {
    Header head;
    uint32_t size;
};

struct Buf {
    unsigned char* data;
    std::size_t len;
};

// negative: a local struct's byte field, kept in a register
uint8_t last_red(const Buf* b) {
    Rgb px{};
    for (std::size_t i = 0; i < b->len; i++) px.r = b->data[i];
    return px.r;
}

// negative: a field of a struct passed by value
uint8_t count_zeros(Rgb acc, const Buf* b) {
    for (std::size_t i = 0; i < b->len; i++) acc.g += b->data[i] == 0;
    return acc.g;
}

// negative: a small struct returned by value comes back in registers
Rgb average(const std::vector<uint8_t>& v) {
    Rgb out{};
    for (std::size_t i = 0; i < v.size(); i++) out.b ^= v[i];
    return out;
}

// negative: a char array inside a local struct lives on the stack, which no pointer
// parameter can reach
std::size_t copy_line(const Buf* b) {
    Line line{};
    for (std::size_t i = 0; i < b->len && i < 16; i++) line.text[i] = static_cast<char>(b->data[i]);
    return line.text[0] + line.text[15];
}

// negative: the same line built in place for the caller (returned by value)
Line make_line(const Buf* b) {
    Line line{};
    for (std::size_t i = 0; i < b->len && i < 16; i++) line.text[i] = static_cast<char>(b->data[i]);
    return line;
}

// negative: a nested member of a local object
uint8_t collect_flags(const std::vector<uint8_t>& v) {
    Message m{};
    for (std::size_t i = 0; i < v.size(); i++) m.head.flags |= v[i];
    return m.head.flags;
}

struct Block {
    std::array<uint8_t, 16> bytes;
};

// negative: a std::array inside a local struct, indexed through its inline operator[]
int copy_block(const Buf* b) {
    Block k{};
    for (std::size_t i = 0; i < b->len && i < 16; i++) k.bytes[i] = b->data[i];
    return k.bytes[0] + k.bytes[15];
}

// negative: the same field written through a pointer: a store to a struct's own char
// field is typed by its struct (struct-path TBAA in clang, access paths in GCC), so it
// cannot change Buf's fields and both compilers keep b->len and b->data in registers
void last_red_into(Rgb* px, const Buf* b) {
    for (std::size_t i = 0; i < b->len; i++) px->r ^= b->data[i];
}

// negative: a char field of an object passed by reference, likewise
void average_into(Rgb& out, const std::vector<uint8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) out.b ^= v[i];
}

// negative: char fields of elements behind a pointer, likewise
void to_gray(Rgb* pixels, const Buf* b) {
    for (std::size_t i = 0; i < b->len; i++) pixels[i].g = b->data[i];
}

struct Record {
    std::size_t len;
    unsigned char name[32];
};

struct Sink {
    Buf* out;
    std::size_t limit;
};

// positive: elements of a char array member behind a pointer alias anything
void copy_name(Record* r, const Buf* b) {
    for (std::size_t i = 0; i < b->len; i++) r->name[i] = b->data[i];
}

// positive: a struct passed by value holds a pointer; the bytes go through it
void clear_sink(Sink s) {
    for (std::size_t i = 0; i < s.out->len; i++) s.out->data[i] = 0;
}

// positive: the struct is written as raw bytes through a char pointer
void scrub(Rgb* pixels, const Buf* b) {
    unsigned char* raw = reinterpret_cast<unsigned char*>(pixels);
    for (std::size_t i = 0; i < b->len; i++) raw[i] = 0;
}

// positive: a local struct's pointer field leads to the caller's bytes
void fill_through_copy(const Buf* b) {
    Buf view = *b;
    for (std::size_t i = 0; i < b->len; i++) view.data[i] = 7;
}
