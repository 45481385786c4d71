/*
 * fkc_crc32.h — IEEE CRC-32 (zlib's), the checksum of legacy messages
 * (magic 0 and 1), computed over magic..end of each message.
 * Portable slicing-by-8; legacy formats are rare enough that a hardware
 * path (PCLMUL folding) is not worth its code. Same chaining convention as
 * fkc_crc32c: pass the previous result (0 to start).
 */
#ifndef FKC_CRC32_H
#define FKC_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t fkc_crc32(uint32_t crc, const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* FKC_CRC32_H */
