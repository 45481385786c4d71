/*
 * libFuzzer target: the C lz4 path (csrc/fkc_lz4.c) on arbitrary frames,
 * through the system's liblz4. Input: byte 0 picks the cap (1 MiB, 0, 64,
 * 4096 bytes, or the frame's own length x4), the rest is the frame.
 * Checks beyond the sanitizers (trap on a violation): the result is one of
 * the kinds the contract names; on success the output holds at most `cap`
 * bytes in a malloc block the blob owns (written in full: ASan sees every
 * byte read back); a failure leaves *out untouched. The same input decoded
 * twice gives the same answer (the per-thread context must not carry
 * state from one frame to the next, whatever the first one did).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_lz4.h"

static int available;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    available = fkc_lz4_load();
    return 0;
}

static int run(const uint8_t *in, size_t len, size_t cap, uint32_t *sum, size_t *out_len)
{
    fkc_blob out;
    memset(&out, 0xAB, sizeof out);
    fkc_blob before = out;
    char errbuf[256];
    int rc = fkc_lz4_decompress(in, len, cap, &out, errbuf, sizeof errbuf);
    *sum = 0;
    *out_len = 0;
    if (rc == FKC_OK) {
        if (out.len > cap || !out.owner_is_malloc || out.owner != (void *)out.data)
            __builtin_trap();
        for (size_t i = 0; i < out.len; i++)
            *sum = *sum * 31u + out.data[i];
        *out_len = out.len;
        free(out.owner);
    } else {
        if (rc != FKC_ERR_DECOMPRESS && rc != FKC_ERR_SIZE_LIMIT && rc != FKC_ERR_NOMEM)
            __builtin_trap();
        if (memcmp(&before, &out, sizeof out) != 0)
            __builtin_trap();
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!available || size < 1)
        return 0;
    static const size_t caps[] = {1u << 20, 0, 64, 4096};
    size_t len = size - 1;
    size_t cap = (data[0] & 4) ? len * 4 : caps[data[0] & 3];
    uint32_t s1, s2;
    size_t n1, n2;
    int rc1 = run(data + 1, len, cap, &s1, &n1);
    int rc2 = run(data + 1, len, cap, &s2, &n2);
    if (rc1 != rc2 || s1 != s2 || n1 != n2)
        __builtin_trap();
    return 0;
}
