// CRC32C (Castagnoli). Hardware path: SSE4.2 `crc32` on x86-64 or the ARMv8 CRC
// extension on arm64, chosen at run time. Portable path: slicing-by-8 tables.
#include "strata_crc32c.h"
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];

#if defined(__x86_64__)
static void build_advance_tables(void);
#endif

// Built once when the library is loaded, before any thread can checksum.
__attribute__((constructor))
static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
#if defined(__x86_64__)
    build_advance_tables();
#endif
}

uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // Slicing-by-8 reads 8 bytes as a little-endian word.
    while (length >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint32_t lo = (uint32_t)w ^ c;
        uint32_t hi = (uint32_t)(w >> 32);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        length -= 8;
    }
#endif
    while (length--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

// The crc32 instruction takes 3 cycles and depends on the previous one, so one stream
// uses a third of the unit. Three streams over three adjacent stripes run at once; their
// registers are then combined. A CRC register is linear over GF(2): the register after
// A||B equals the register after A advanced over |B| zero bytes, xor the register of B
// started from 0. Advancing over a fixed number of zeros is a linear map of the 32-bit
// register, applied with four 256-entry tables (one per register byte).
#define STRIPE 256

static uint32_t advance_one_stripe[4][256];   // over STRIPE zero bytes
static uint32_t advance_two_stripes[4][256];  // over 2 * STRIPE zero bytes

// The register after `length` bytes, without the initial and final inversions.
static uint32_t raw_portable(uint32_t c, const unsigned char *p, size_t length) {
    while (length--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

static void build_advance(uint32_t advance[4][256], size_t zeros) {
    static const unsigned char zero[2 * STRIPE];
    uint32_t column[32];
    for (int bit = 0; bit < 32; bit++) column[bit] = raw_portable(1u << bit, zero, zeros);
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int bit = 0; bit < 8; bit++) if ((b >> bit) & 1) v ^= column[8 * k + bit];
            advance[k][b] = v;
        }
    }
}

// Called by `build_tables`, once the byte tables exist.
static void build_advance_tables(void) {
    build_advance(advance_one_stripe, STRIPE);
    build_advance(advance_two_stripes, 2 * STRIPE);
}

static inline uint32_t advanced(uint32_t advance[4][256], uint32_t c) {
    return advance[0][c & 0xff] ^ advance[1][(c >> 8) & 0xff] ^ advance[2][(c >> 16) & 0xff] ^ advance[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t c = ~crc;
    while (length >= 3 * STRIPE) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < STRIPE; i += 8) {
            uint64_t w0, w1, w2;
            memcpy(&w0, p + i, 8);
            memcpy(&w1, p + STRIPE + i, 8);
            memcpy(&w2, p + 2 * STRIPE + i, 8);
            c = _mm_crc32_u64(c, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
        }
        c = advanced(advance_two_stripes, (uint32_t)c) ^ advanced(advance_one_stripe, (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * STRIPE;
        length -= 3 * STRIPE;
    }
    while (length >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length--) c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}

static int hw_checked = 0;
static int hw_available = 0;

static int detect(void) {
    if (!__atomic_load_n(&hw_checked, __ATOMIC_ACQUIRE)) {
        __builtin_cpu_init();
        __atomic_store_n(&hw_available, __builtin_cpu_supports("sse4.2") ? 1 : 0, __ATOMIC_RELAXED);
        __atomic_store_n(&hw_checked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&hw_available, __ATOMIC_RELAXED);
}

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    return detect() ? crc32c_hw(crc, data, length) : strata_crc32c_portable(crc, data, length);
}

int strata_crc32c_is_hardware(void) { return detect(); }

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __crc32cd(c, w);
        p += 8;
        length -= 8;
    }
    while (length--) c = __crc32cb(c, *p++);
    return ~c;
}

int strata_crc32c_is_hardware(void) { return 1; }

#else

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    return strata_crc32c_portable(crc, data, length);
}

int strata_crc32c_is_hardware(void) { return 0; }

#endif
