// Labelled set: members, ranges, pure calls. Each function's label is in manifest.toml.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// positive: toupper writes no memory; the char write still forces s.size() reloads
void upper(std::string& s) {
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(std::toupper(s[i]));
}

struct Fixed {
    std::size_t len;
    unsigned char data[256];
};

// negative: data is an array inside the struct, an address, not a load; n is a value
void clear_array_member(Fixed* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) b->data[i] = 0;
}

// positive: b->len is reloaded after every byte written into the same struct
void clear_to_len(Fixed* b) {
    for (std::size_t i = 0; i < b->len; ++i) b->data[i] = 0;
}

class Canvas {
  public:
    // positive: this->size_ and this->pixels_ are re-read after each byte
    void clear() {
        for (int i = 0; i < size_; ++i) pixels_[i] = 0;
    }
    // negative: both copied into locals first
    void clear_fast() {
        const int size = size_;
        uint8_t* pixels = pixels_;
        for (int i = 0; i < size; ++i) pixels[i] = 0;
    }

  private:
    int size_ = 0;
    uint8_t* pixels_ = nullptr;
};

struct Span {
    unsigned char* start;
    unsigned char* end;
};

// positive: the end pointer lives in memory the byte stores might change
void fill_span(Span* s) {
    for (unsigned char* p = s->start; p < s->end; ++p) *p = 0;
}

// negative: the same with the end pointer in a local
void fill_span_local(Span* s) {
    unsigned char* const end = s->end;
    for (unsigned char* p = s->start; p < end; ++p) *p = 0;
}

// positive: the data pointer is hoisted but size() is still read every time
void ones(std::vector<uint8_t>& v) {
    uint8_t* p = v.data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = 1;
}

// positive: straight-line, s->start is loaded again after the first byte store
void put_two(Span* s, unsigned char c) {
    s->start[0] = c;
    s->start[1] = c;
}

// negative: a string_view passed by value lives in registers
void copy_view(std::string_view in, char* out) {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i];
}

// negative: the loop writes ints through a pointer member
struct Ints {
    int* data;
    std::size_t len;
};
void zero_ints(Ints* v) {
    for (std::size_t i = 0; i < v->len; ++i) v->data[i] = 0;
}

// positive: size() on this, from a class derived from a byte vector
struct Packet : std::vector<uint8_t> {
    void zero() {
        for (std::size_t i = 0; i < size(); ++i) (*this)[i] = 0;
    }
};

// negative: the same with the size taken once
struct Frame : std::vector<uint8_t> {
    void zero() {
        const std::size_t n = size();
        uint8_t* bytes = data();
        for (std::size_t i = 0; i < n; ++i) bytes[i] = 0;
    }
};

// positive: the byte is written through a reference, which may point anywhere
void checksum(const std::vector<uint32_t>& v, uint8_t& out) {
    for (std::size_t i = 0; i < v.size(); ++i) out ^= static_cast<uint8_t>(v[i]);
}

// negative: the same byte kept in a local
uint8_t checksum_local(const std::vector<uint32_t>& v) {
    uint8_t out = 0;
    for (std::size_t i = 0; i < v.size(); ++i) out ^= static_cast<uint8_t>(v[i]);
    return out;
}

// positive: a destructor's loop; this->bytes_ is re-read after every byte
struct Scratch {
    std::vector<uint8_t> bytes_;
    ~Scratch() {
        for (std::size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = 0;
    }
};
