/*
 * fkc_arrow.h — phase 2b: fill Arrow column buffers from decoded records.
 *
 * The fuzz target's oracle only (tests/fuzz/fuzz_records.c): the compiled
 * core builds its columns with csrc/fkc_arrow_builder.c, and this
 * descriptor-form filler, kept apart from the library, checks them row for
 * row.
 *
 * Contract
 *   The caller allocates every buffer with the exact sizes fkc_arrow_sizes()
 *   reports (known after phase 1), then fkc_arrow_fill() writes offsets, data
 *   and validity bitmaps in one pass over the descriptors: no per-record
 *   allocation, no Python objects. Layouts are Arrow's columnar format:
 *   validity bitmaps LSB-first, int32 offsets (n + 1 entries), values packed.
 *   Columns follow fastkc.records.arrow_schema(): key binary, value binary,
 *   topic string, partition int32, offset int64, timestamp (µs = ms * 1000),
 *   timestampType int32 (-1 when the record has none), headers
 *   list<struct<key string, value binary>> (null when a record has none).
 */
#ifndef FKC_ARROW_H
#define FKC_ARROW_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_arrow_abi.h"
#include "fkc_records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fkc_arrow_columns {
    uint8_t *key_validity;     /* bitmap(n) */
    int32_t *key_offsets;      /* n + 1 */
    uint8_t *key_data;         /* key_bytes */
    uint8_t *value_validity;
    int32_t *value_offsets;
    uint8_t *value_data;
    int32_t *topic_offsets;    /* n + 1 */
    uint8_t *topic_data;       /* n * topic_len */
    int32_t *partition;        /* n */
    int64_t *offset;           /* n */
    uint8_t *timestamp_validity;
    int64_t *timestamp;        /* n, microseconds */
    int32_t *timestamp_type;   /* n */
    uint8_t *headers_validity; /* bitmap(n) */
    int32_t *headers_offsets;  /* n + 1, into the struct child */
    int32_t *hkey_offsets;     /* header_count + 1 */
    uint8_t *hkey_data;        /* header_key_bytes */
    uint8_t *hvalue_validity;  /* bitmap(header_count) */
    int32_t *hvalue_offsets;   /* header_count + 1 */
    uint8_t *hvalue_data;      /* header_value_bytes */

    /* out: null counts, for pyarrow.Array.from_buffers */
    int64_t key_nulls;
    int64_t value_nulls;
    int64_t timestamp_nulls;
    int64_t headers_nulls;
    int64_t hvalue_nulls;
} fkc_arrow_columns;

/* 1 when every offset fits Arrow's int32 offsets (binary/string/list). */
int fkc_arrow_fits(const fkc_decode_result *r, size_t topic_len);

void fkc_arrow_fill(const fkc_decode_result *r, const uint8_t *topic, size_t topic_len, int32_t partition,
                    fkc_arrow_columns *cols);

/* Fill every column (as fkc_arrow_fill) into one freshly allocated arena
 * and describe it as a C-data-interface struct array whose children follow
 * fastkc.records.arrow_schema() field for field, so the bridge imports the
 * whole batch with one pyarrow call (RecordBatch._import_from_c with the
 * cached schema) instead of ~30 buffer and array constructor calls.
 *
 * The caller must have checked fkc_arrow_fits(). Returns 1 with *out owning
 * the memory (freed by out->release, or by the consumer that moved it), or
 * 0 when memory ran out (*out untouched). Every node of the tree holds a
 * reference to the arena, so a consumer that moves a child out and releases
 * it after the parent (allowed by the interface) never sees freed memory. */
int fkc_arrow_export(const fkc_decode_result *r, const uint8_t *topic, size_t topic_len, int32_t partition,
                     struct ArrowArray *out);

#ifdef __cplusplus
}
#endif

#endif /* FKC_ARROW_H */
