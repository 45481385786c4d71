/* fkc_crc32.c — IEEE CRC-32, slicing-by-8. */
#include "fkc_crc32.h"

#include "fkc_crc32_tables.inc"

uint32_t fkc_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;
    while (len >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) | ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        c = fkc_crc32_table[7][lo & 0xFF] ^ fkc_crc32_table[6][(lo >> 8) & 0xFF] ^
            fkc_crc32_table[5][(lo >> 16) & 0xFF] ^ fkc_crc32_table[4][lo >> 24] ^
            fkc_crc32_table[3][hi & 0xFF] ^ fkc_crc32_table[2][(hi >> 8) & 0xFF] ^
            fkc_crc32_table[1][(hi >> 16) & 0xFF] ^ fkc_crc32_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) {
        c = fkc_crc32_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    }
    return ~c;
}
