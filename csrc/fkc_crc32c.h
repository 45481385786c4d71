/*
 * fkc_crc32c.h — CRC-32C (Castagnoli), the checksum of record batches v2.
 *
 * Two implementations with identical results:
 *   - "sse4.2": the x86 CRC32 instruction, 8 bytes per step. Chosen at run
 *     time (cpuid via __builtin_cpu_supports), never assumed at compile time,
 *     so one binary runs on any x86-64.
 *   - "software": portable slicing-by-8 over constant tables.
 * fkc_crc32c_implementation() names the one in use, so a slow path is never
 * silent. fkc_crc32c_force_software(1) pins the software path (tests use it
 * to check both paths against the same vectors).
 *
 * `crc` is the running value of a previous call (0 to start): the functions
 * take and return the finalised CRC, so crc32c(ab) == crc32c(b, crc32c(a)).
 */
#ifndef FKC_CRC32C_H
#define FKC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t fkc_crc32c(uint32_t crc, const uint8_t *data, size_t len);
uint32_t fkc_crc32c_software(uint32_t crc, const uint8_t *data, size_t len);
/* Returns 0 when the CPU has no SSE4.2 CRC32 instruction (nothing computed). */
int fkc_crc32c_hardware_available(void);
uint32_t fkc_crc32c_hardware(uint32_t crc, const uint8_t *data, size_t len);

/* "sse4.2" or "software". */
const char *fkc_crc32c_implementation(void);
/* Nonzero: always use the software path; zero: use hardware when present. */
void fkc_crc32c_force_software(int force);

#ifdef __cplusplus
}
#endif

#endif /* FKC_CRC32C_H */
