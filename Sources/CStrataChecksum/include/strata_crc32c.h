#ifndef STRATA_CRC32C_H
#define STRATA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Extends a CRC32C (Castagnoli, reflected polynomial 0x82F63B78) over `length` bytes.
/// Start with `crc = 0`; the result of one call can be passed as `crc` to the next to
/// checksum discontiguous bytes. Pre- and post-inversion are applied inside, so
/// `strata_crc32c(strata_crc32c(0, a, n), b, m) == strata_crc32c(0, a‖b, n+m)`.
uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length);

/// 1 when the hardware instruction path is in use on this CPU, 0 for the portable table path.
int strata_crc32c_is_hardware(void);

/// The portable path, exposed so tests can check that both paths agree.
uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length);

/// Asks the CPU to start loading the cache lines of `length` bytes at `data` (at most the
/// first 16 KiB) without waiting for them: a hint, with no effect on results. Reading a
/// frame at a random place (a point lookup) then waits for one memory round trip instead
/// of one per line as the checksum walks it.
static inline void strata_prefetch(const void *data, size_t length) {
    const char *p = (const char *)data;
    size_t n = length < 16384 ? length : 16384;
    for (size_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, 3);
}

#ifdef __cplusplus
}
#endif

#endif
