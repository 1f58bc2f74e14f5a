// Labelled set: C++ containers. Each function's label is in manifest.toml.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

void log_progress(std::size_t done);

// positive: size() in the condition, uint8_t written through the same vector
void vec_inc(std::vector<uint8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i]++;
}

// positive: bitcoin's ExpandHRP shape; the returned vector lives in the caller
std::vector<uint8_t> expand_hrp(const std::string& hrp) {
    std::vector<uint8_t> ret;
    ret.resize(hrp.size() * 2 + 1);
    for (std::size_t i = 0; i < hrp.size(); ++i) {
        unsigned char c = hrp[i];
        ret[i] = c >> 5;
        ret[i + hrp.size() + 1] = c & 0x1f;
    }
    return ret;
}

// positive: SwapBase64 shape, branches in the body
std::string swap_base64(const std::string& from) {
    std::string to;
    to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
        switch (from[i]) {
        case '-': to[i] = '+'; break;
        case '~': to[i] = '/'; break;
        default: to[i] = from[i]; break;
        }
    }
    return to;
}

// positive: length() in the condition of a std::string loop
void mask(std::string& s) {
    for (std::size_t i = 0; i < s.length(); i++) s[i] = '*';
}

// positive: end() re-read on every iteration
void xor_all(std::vector<uint8_t>& v, uint8_t key) {
    for (auto it = v.begin(); it != v.end(); ++it) *it ^= key;
}

// positive: std::byte aliases like char
void zero_bytes(std::vector<std::byte>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] = std::byte{1};
}

// positive: int8_t is a char type too
void negate(std::vector<int8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] = -v[i];
}

// positive: bound hoisted, but operator[] re-reads the data pointer every time
void add_n(std::vector<uint8_t>& v, std::size_t n, uint8_t k) {
    for (std::size_t i = 0; i < n; i++) v[i] += k;
}

struct Key {
    unsigned char bytes[8];
};

// positive: Monero's bulletproof_PROVE shape, byte fields of a vector element
void to_keys(const std::vector<uint64_t>& v, std::vector<Key>& sv) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        sv[i].bytes[0] = v[i] & 255;
        sv[i].bytes[1] = (v[i] >> 8) & 255;
        sv[i].bytes[2] = (v[i] >> 16) & 255;
        sv[i].bytes[3] = (v[i] >> 24) & 255;
    }
}

class Image {
  public:
    uint32_t get_height() const { return height_; }
    std::vector<uint8_t> pixels;

  private:
    uint32_t height_ = 0;
};

// positive: a custom inline accessor in the condition
void clear_column(Image& img) {
    for (uint32_t y = 0; y < img.get_height(); y++) img.pixels[y] = 0;
}

struct Bitmap {
    std::vector<uint8_t> bits;
    std::size_t count = 0;
    // positive: implicit this->count and this->bits in a member function
    void clear() {
        for (std::size_t i = 0; i < count; i++) bits[i] = 0;
    }
};

// negative: uint32_t elements do not alias the vector's size
void vec_inc32(std::vector<uint32_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i]++;
}

// negative: char8_t does not alias
void vec_inc8(std::vector<char8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i]++;
}

// negative: size and data pointer hoisted into locals
void vec_inc_hoisted(std::vector<uint8_t>& v) {
    const std::size_t n = v.size();
    uint8_t* d = v.data();
    for (std::size_t i = 0; i < n; i++) d[i]++;
}

// negative: range-for reads begin and end once
void xor_range(std::vector<uint8_t>& v, uint8_t key) {
    for (auto& b : v) b ^= key;
}

// negative: the bytes go to a stack array the compiler knows is private
uint32_t pack_local(const std::vector<uint32_t>& v) {
    std::array<uint8_t, 64> local{};
    for (std::size_t i = 0; i < v.size(); i++) local[i & 63] = static_cast<uint8_t>(v[i]);
    return local[0] + local[63];
}

// negative: an opaque call in the body forces the reloads anyway
void vec_zero_logged(std::vector<uint8_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) {
        v[i] = 0;
        log_progress(i);
    }
}

// negative: no write at all
std::size_t count_zero(const std::vector<uint8_t>& v) {
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < v.size(); i++) zeros += v[i] == 0;
    return zeros;
}

// negative: bytes are read, ints are written
void widen(const std::vector<uint8_t>& in, std::vector<int>& out) {
    for (std::size_t i = 0; i < in.size(); i++) out[i] = in[i];
}

// negative: uint16_t elements
void vec_inc16(std::vector<uint16_t>& v) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] += 3;
}

// negative: a local vector whose address never escapes; clang keeps its size in a register
uint32_t local_vec(const uint32_t* in, std::size_t n) {
    std::vector<uint8_t> buf(n);
    for (std::size_t i = 0; i < buf.size(); i++) buf[i] = in[i] & 0xff;
    return buf.empty() ? 0 : buf[0];
}

// positive: resize() is not inline, so the local vector escapes and must be re-read
uint32_t local_vec_resized(const uint32_t* in, std::size_t n) {
    std::vector<uint8_t> buf;
    buf.resize(n);
    for (std::size_t i = 0; i < buf.size(); i++) buf[i] = in[i] & 0xff;
    return buf.empty() ? 0 : buf[0];
}

// positive: a copied std::string escapes into its constructor
std::size_t flip_case(const std::string& in) {
    std::string out = in;
    for (std::size_t i = 0; i < out.size(); i++) out[i] = out[i] ^ 32;
    return out.size() + out[0];
}

// positive: the bound is read through a reference, which the byte stores may change
void fill_to_ref(uint8_t* out, const std::size_t& n) {
    for (std::size_t i = 0; i < n; i++) out[i] = 1;
}

// negative: the same bound passed by value
void fill_to_value(uint8_t* out, std::size_t n) {
    for (std::size_t i = 0; i < n; i++) out[i] = 1;
}
