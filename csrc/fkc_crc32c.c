/* fkc_crc32c.c — CRC-32C, hardware (SSE4.2, three interleaved chains) and software (slicing-by-8). */
#include "fkc_crc32c.h"

#include "fkc_crc32c_tables.inc"

#if defined(__x86_64__) || defined(__i386__)
#define FKC_HAVE_X86 1
#include <nmmintrin.h>
#endif

uint32_t fkc_crc32c_software(uint32_t crc, const uint8_t *p, size_t len)
{
    uint32_t c = ~crc;
    /* Bytewise until 8 more can be taken as one little-endian word. */
    while (len >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) | ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        c = fkc_crc32c_table[7][lo & 0xFF] ^ fkc_crc32c_table[6][(lo >> 8) & 0xFF] ^
            fkc_crc32c_table[5][(lo >> 16) & 0xFF] ^ fkc_crc32c_table[4][lo >> 24] ^
            fkc_crc32c_table[3][hi & 0xFF] ^ fkc_crc32c_table[2][(hi >> 8) & 0xFF] ^
            fkc_crc32c_table[1][(hi >> 16) & 0xFF] ^ fkc_crc32c_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) {
        c = fkc_crc32c_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    }
    return ~c;
}

#ifdef FKC_HAVE_X86
#if defined(__x86_64__)
#include "fkc_crc32c_shift.inc"

/* Block sizes of the three-chain rounds (the shift tables are generated for
 * exactly these: scripts/gen_crc32c_shift.py). A long round covers 12 KiB, a
 * short one 768 bytes; what is left (< 768 bytes) runs as one chain. */
#define FKC_CRC32C_LONG 4096
#define FKC_CRC32C_SHORT 256

/* The raw register after appending the table's block of zero bytes. */
static inline uint64_t fkc_crc32c_shift(const uint32_t table[4][256], uint64_t crc)
{
    return (uint64_t)(table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^
                      table[3][(crc >> 24) & 0xFF]);
}

/* One round: three independent crc32 chains over three consecutive blocks,
 * interleaved so the instruction's 3-cycle latency is hidden (one chain
 * waits on itself; three keep the unit busy every cycle), then joined:
 * run(s, A||B||C) = shift(shift(run(s, A)) ^ run(0, B)) ^ run(0, C). */
__attribute__((target("sse4.2"))) static inline uint64_t fkc_crc32c_round(uint64_t c0, const uint8_t *p, size_t block,
                                                                       const uint32_t table[4][256])
{
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + block;
    while (p < end) {
        uint64_t w0, w1, w2;
        __builtin_memcpy(&w0, p, 8); /* unaligned-safe; x86 is little-endian as the instruction expects */
        __builtin_memcpy(&w1, p + block, 8);
        __builtin_memcpy(&w2, p + 2 * block, 8);
        c0 = _mm_crc32_u64(c0, w0);
        c1 = _mm_crc32_u64(c1, w1);
        c2 = _mm_crc32_u64(c2, w2);
        p += 8;
    }
    c0 = fkc_crc32c_shift(table, c0) ^ c1;
    return fkc_crc32c_shift(table, c0) ^ c2;
}
#endif

__attribute__((target("sse4.2"))) uint32_t fkc_crc32c_hardware(uint32_t crc, const uint8_t *p, size_t len)
{
#if defined(__x86_64__)
    uint64_t c = (uint32_t)~crc;
    while (len >= 3 * FKC_CRC32C_LONG) {
        c = fkc_crc32c_round(c, p, FKC_CRC32C_LONG, fkc_crc32c_shift_long);
        p += 3 * FKC_CRC32C_LONG;
        len -= 3 * FKC_CRC32C_LONG;
    }
    while (len >= 3 * FKC_CRC32C_SHORT) {
        c = fkc_crc32c_round(c, p, FKC_CRC32C_SHORT, fkc_crc32c_shift_short);
        p += 3 * FKC_CRC32C_SHORT;
        len -= 3 * FKC_CRC32C_SHORT;
    }
    while (len >= 8) {
        uint64_t word;
        __builtin_memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
#else
    uint32_t c32 = ~crc;
#endif
    while (len--) {
        c32 = _mm_crc32_u8(c32, *p++);
    }
    return ~c32;
}

int fkc_crc32c_hardware_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#else
uint32_t fkc_crc32c_hardware(uint32_t crc, const uint8_t *p, size_t len)
{
    (void)crc;
    (void)p;
    (void)len;
    return 0;
}

int fkc_crc32c_hardware_available(void)
{
    return 0;
}
#endif

/* Decided on first use. The states only ever move from "unknown" to a
 * definite choice computed the same way by every thread, so a race between
 * two first calls writes the same value twice. */
static volatile int fkc_crc32c_choice = -1; /* -1 unknown, 0 software, 1 hardware */
static volatile int fkc_crc32c_forced_software = 0;

static int fkc_crc32c_use_hardware(void)
{
    int choice = fkc_crc32c_choice;
    if (choice < 0) {
        choice = fkc_crc32c_hardware_available();
        fkc_crc32c_choice = choice;
    }
    return choice && !fkc_crc32c_forced_software;
}

uint32_t fkc_crc32c(uint32_t crc, const uint8_t *data, size_t len)
{
    if (fkc_crc32c_use_hardware())
        return fkc_crc32c_hardware(crc, data, len);
    return fkc_crc32c_software(crc, data, len);
}

const char *fkc_crc32c_implementation(void)
{
    return fkc_crc32c_use_hardware() ? "sse4.2" : "software";
}

void fkc_crc32c_force_software(int force)
{
    fkc_crc32c_forced_software = force ? 1 : 0;
}
