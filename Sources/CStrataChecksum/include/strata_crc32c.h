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

#ifdef __cplusplus
}
#endif

#endif
