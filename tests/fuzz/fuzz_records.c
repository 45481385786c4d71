/*
 * libFuzzer target: phase 1 of record decoding (csrc/fkc_records.c,
 * fkc_decode_records) with the codec dispatch (csrc/fkc_codec.c) behind it,
 * and phase 2b (tests/fuzz/fkc_arrow.c, the oracle) on what it decoded.
 *
 * Input: byte 0 = option flags, byte 1 = fetch_offset, byte 2 = stop_offset
 * (0: no bound), then the records blob (record batches v2 / legacy message
 * sets) exactly as a Fetch response's partition would carry it.
 *   flags bit 0     check_crcs (off most of the time in practice: the fuzzer
 *                   cannot forge CRCs, and with them on it stops at the CRC)
 *         bit 1     read_committed, with a fixed aborted-transaction list
 *         bit 2     arrow_timestamps, and then phase 2b (fkc_arrow_fill) too
 *         bit 3     the codec host fails every call (RecordDecompressionError path)
 *         bits 4-5  the decompression cap: 1 MiB, 64, 600 or 4096 bytes
 *         bit 6     a per-batch record budget of 3 (FKC_ERR_BUDGET)
 *         bit 7     the resumable decoder's hold bound is 1 byte (a step ends after
 *                   every compressed batch it finished)
 * With bit 0 set and a CRC mismatch, the input is decoded again with CRC
 * checks off, so every mutation also reaches the structural checks.
 *
 * A step with marks (fkc_stream_marks, the decode worker's prepared step) is
 * checked against fresh steps ending at each of its batch boundaries.
 *
 * Every input is also decoded by the resumable decoder (fkc_stream_*), in
 * steps of 1, 2, 7 or 1024 records (input size % 4): the steps must hand out
 * exactly the records of the one-shot decode (same offsets, bytes, headers),
 * end with the same error kind and offset, never more than asked per step,
 * and hold only decompressed buffers within the cap. fkc_scan_blob must
 * agree with the decoder about where the complete entries end, and
 * fkc_check_blob (the benchmark ceiling's walk) with the scan.
 *
 * The codec host is a pass-through: a "compressed" payload decompresses to
 * itself (truncated to cap+1 bytes, as the host contract asks; a raw snappy
 * block loses its leading length varint). Real codecs
 * would hide the inner records behind a checksum the fuzzer cannot satisfy;
 * pass-through lets it mutate records inside "compressed" batches and reach
 * every framing check of fkc_codec (xerial chunks, raw snappy length varint,
 * lz4/zstd frame headers, the KAFKA-3160 fix, the size cap).
 *
 * Beyond the sanitizers, the harness checks the decoder's contract and traps
 * on a violation: error kinds are known; every key, value and header points
 * into the input or into a blob the result owns; the header walk yields
 * exactly header_count headers within the record's header span; byte totals
 * match the records; kept offsets respect fetch_offset/stop_offset;
 * on success next_offset >= fetch_offset; the reason is NUL-terminated.
 * With bit 2 the Arrow columns are filled into exactly sized buffers and
 * their offsets, validity and null counts are checked; and the one-pass
 * Arrow form (fkc_decode_arrow, and stream steps of k into one shared
 * fkc_arrow_builder) must give row for row what the descriptors say, the
 * same error kind and offset, and export/release cleanly.
 *
 * The share decode (opts.share, KIP-932) runs on every input too, with
 * acquired ranges derived from the input (bytes 1-2 and its size seed a
 * small generator: up to 6 sorted, disjoint ranges over offsets 0..~100,
 * delivery counts 1..5): its records must be exactly the plain decode's
 * records that the Java rule admits (acquired, past every record compared
 * before), each with its range's delivery count; the gaps (fkc_share_gaps)
 * and the handed-out offsets must partition the acquired offsets; errors
 * must be the plain decode's (same kind and offset) with error_batch_last
 * >= error_offset; steps of k join to the one-shot result; and the Arrow
 * form (a ninth delivery_count column) must agree row for row and export
 * and release cleanly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_arrow.h"
#include "fkc_arrow_builder.h"
#include "fkc_codec.h"
#include "fkc_errors.h"
#include "fkc_records.h"

static const size_t k_steps[4] = {1, 2, 7, 1024};

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond))                                                                                   \
            __builtin_trap();                                                                          \
    } while (0)

typedef struct host_state {
    int fail; /* 1: every call fails like a codec rejecting its input */
} host_state;

static int passthrough(void *ctx, fkc_codec_op op, const uint8_t *in, size_t in_len, size_t cap,
                       size_t size_hint, fkc_blob *out, char *errbuf, size_t errbuf_len)
{
    (void)size_hint;
    host_state *st = (host_state *)ctx;
    if (st->fail) {
        snprintf(errbuf, errbuf_len, "fuzz host: rejected");
        return FKC_ERR_DECOMPRESS;
    }
    if (op == FKC_OP_SNAPPY_RAW) {
        /* a raw snappy block starts with its uncompressed length (checked by
         * fkc_codec before the call); "decompressing" drops that varint, so
         * the decoder's declared-length check is reachable both ways */
        size_t skip = 0;
        while (skip < in_len && skip < 5 && (in[skip] & 0x80))
            skip++;
        skip = skip < in_len ? skip + 1 : in_len;
        in += skip;
        in_len -= skip;
    }
    size_t n = in_len;
    if (cap < SIZE_MAX && n > cap + 1)
        n = cap + 1; /* the contract: never more than cap+1 bytes */
    uint8_t *copy = (uint8_t *)malloc(n ? n : 1);
    if (copy == NULL) {
        snprintf(errbuf, errbuf_len, "fuzz host: out of memory");
        return FKC_ERR_HOST;
    }
    if (n)
        memcpy(copy, in, n);
    out->data = copy;
    out->len = n;
    out->owner = copy;
    out->owner_is_malloc = 0; /* released through release(), as a Python host would */
    return FKC_OK;
}

static void release(void *ctx, void *owner)
{
    (void)ctx;
    free(owner);
}

static int inside(const uint8_t *p, int64_t len, const uint8_t *base, size_t base_len)
{
    if (len < 0)
        return p == NULL;
    if (p == NULL)
        return len == 0;
    return p >= base && (size_t)len <= base_len && (size_t)(p - base) <= base_len - (size_t)len;
}

static int owned(const fkc_decode_result *r, const uint8_t *in, size_t in_len, const uint8_t *p, int64_t len)
{
    if (inside(p, len, in, in_len))
        return 1;
    for (size_t i = 0; i < r->blob_count; i++)
        if (inside(p, len, r->blobs[i].data, r->blobs[i].len))
            return 1;
    return 0;
}

/* Offsets of an Arrow variable-size column: start at 0, never decrease, end
 * at the total the decoder reported. */
static void check_offsets(const int32_t *off, size_t n, uint64_t total)
{
    CHECK(off[0] == 0);
    for (size_t i = 0; i < n; i++)
        CHECK(off[i] <= off[i + 1]);
    CHECK((uint64_t)off[n] == total);
}

static void *exact_alloc(size_t n)
{
    /* malloc(0) still gives ASan a chunk to guard: any write to it is caught */
    void *p = malloc(n);
    if (p == NULL && n != 0)
        abort();
    return p;
}

/* Phase 2b, as the Arrow bridge runs it (only with arrow_timestamps, which
 * makes phase 1 reject timestamps whose microseconds overflow): every buffer
 * exactly as large as the contract says, then the columns' invariants. */
static void fill_arrow(const fkc_decode_result *r)
{
    static const uint8_t topic[] = "fuzz-topic";
    const size_t topic_len = sizeof(topic) - 1;
    if (!fkc_arrow_fits(r, topic_len))
        return;
    size_t n = r->count, hc = (size_t)r->header_count;
    fkc_arrow_columns c;
    memset(&c, 0, sizeof(c));
    c.key_validity = exact_alloc(fkc_bitmap_bytes(n));
    c.key_offsets = exact_alloc((n + 1) * sizeof(int32_t));
    c.key_data = exact_alloc((size_t)r->key_bytes);
    c.value_validity = exact_alloc(fkc_bitmap_bytes(n));
    c.value_offsets = exact_alloc((n + 1) * sizeof(int32_t));
    c.value_data = exact_alloc((size_t)r->value_bytes);
    c.topic_offsets = exact_alloc((n + 1) * sizeof(int32_t));
    c.topic_data = exact_alloc(n * topic_len);
    c.partition = exact_alloc(n * sizeof(int32_t));
    c.offset = exact_alloc(n * sizeof(int64_t));
    c.timestamp_validity = exact_alloc(fkc_bitmap_bytes(n));
    c.timestamp = exact_alloc(n * sizeof(int64_t));
    c.timestamp_type = exact_alloc(n * sizeof(int32_t));
    c.headers_validity = exact_alloc(fkc_bitmap_bytes(n));
    c.headers_offsets = exact_alloc((n + 1) * sizeof(int32_t));
    c.hkey_offsets = exact_alloc((hc + 1) * sizeof(int32_t));
    c.hkey_data = exact_alloc((size_t)r->header_key_bytes);
    c.hvalue_validity = exact_alloc(fkc_bitmap_bytes(hc));
    c.hvalue_offsets = exact_alloc((hc + 1) * sizeof(int32_t));
    c.hvalue_data = exact_alloc((size_t)r->header_value_bytes);

    fkc_arrow_fill(r, topic, topic_len, 7, &c);

    check_offsets(c.key_offsets, n, r->key_bytes);
    check_offsets(c.value_offsets, n, r->value_bytes);
    check_offsets(c.topic_offsets, n, (uint64_t)(n * topic_len));
    check_offsets(c.headers_offsets, n, r->header_count);
    check_offsets(c.hkey_offsets, hc, r->header_key_bytes);
    check_offsets(c.hvalue_offsets, hc, r->header_value_bytes);
    int64_t key_nulls = 0, value_nulls = 0;
    for (size_t i = 0; i < n; i++) {
        key_nulls += r->records[i].key_len < 0;
        value_nulls += r->records[i].value_len < 0;
        CHECK(c.partition[i] == 7 && c.offset[i] == r->records[i].offset);
        CHECK(((c.key_validity[i / 8] >> (i % 8)) & 1) == (r->records[i].key_len >= 0));
    }
    CHECK(c.key_nulls == key_nulls && c.value_nulls == value_nulls);
    CHECK(c.timestamp_nulls >= 0 && (size_t)c.timestamp_nulls <= n);
    CHECK(c.headers_nulls >= 0 && (size_t)c.headers_nulls <= n);
    CHECK(c.hvalue_nulls >= 0 && (size_t)c.hvalue_nulls <= hc);

    void *bufs[] = {c.key_validity, c.key_offsets, c.key_data, c.value_validity, c.value_offsets,
                    c.value_data, c.topic_offsets, c.topic_data, c.partition, c.offset,
                    c.timestamp_validity, c.timestamp, c.timestamp_type, c.headers_validity,
                    c.headers_offsets, c.hkey_offsets, c.hkey_data, c.hvalue_validity,
                    c.hvalue_offsets, c.hvalue_data};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]);

    /* The C-data-interface export: same columns in one arena. Its last
     * offsets must match the totals, and a child moved out of the tree (as
     * the interface allows) must stay readable after the root is released;
     * LeakSanitizer then checks that every node's release freed it all. */
    struct ArrowArray root;
    if (!fkc_arrow_export(r, topic, topic_len, 7, &root))
        return;
    CHECK(root.length == (int64_t)n && root.n_children == 8 && root.release != NULL);
    const int32_t *value_offsets = (const int32_t *)root.children[1]->buffers[1];
    CHECK((uint64_t)value_offsets[n] == r->value_bytes);
    struct ArrowArray moved = *root.children[7]; /* headers */
    root.children[7]->release = NULL;
    root.release(&root);
    CHECK(root.release == NULL);
    const int32_t *header_offsets = (const int32_t *)moved.buffers[1];
    CHECK((uint64_t)header_offsets[n] == r->header_count);
    CHECK(moved.children[0]->length == (int64_t)hc);
    moved.release(&moved);
}

static int same_bytes(const uint8_t *a, int32_t alen, const uint8_t *b, int32_t blen)
{
    if (alen != blen)
        return 0;
    return alen <= 0 || memcmp(a, b, (size_t)alen) == 0;
}

/* Row `row` of the builder's columns equals descriptor *rec (the two sinks
 * of the one record parser). */
static void check_row(const fkc_arrow_builder *b, size_t row, const fkc_record *rec)
{
    CHECK(b->offset[row] == rec->offset);
    CHECK(b->timestamp_type[row] == rec->timestamp_type);
    if (rec->timestamp_type >= 0)
        CHECK(b->timestamp[row] == (int64_t)((uint64_t)rec->timestamp * 1000u));
    int key_valid = (b->key_validity[row / 8] >> (row % 8)) & 1;
    CHECK(key_valid == (rec->key_len >= 0));
    int32_t klen = b->key_offsets[row + 1] - b->key_offsets[row];
    CHECK(klen == (rec->key_len > 0 ? rec->key_len : 0));
    if (klen)
        CHECK(memcmp(b->key_data.data + b->key_offsets[row], rec->key, (size_t)klen) == 0);
    int value_valid = (b->value_validity[row / 8] >> (row % 8)) & 1;
    CHECK(value_valid == (rec->value_len >= 0));
    int32_t vlen = b->value_offsets[row + 1] - b->value_offsets[row];
    CHECK(vlen == (rec->value_len > 0 ? rec->value_len : 0));
    if (vlen)
        CHECK(memcmp(b->value_data.data + b->value_offsets[row], rec->value, (size_t)vlen) == 0);
    int32_t h0 = b->headers_offsets[row], h1 = b->headers_offsets[row + 1];
    CHECK(h1 - h0 == (rec->header_count > 0 ? rec->header_count : 0));
    CHECK(((b->headers_validity[row / 8] >> (row % 8)) & 1) == (rec->header_count > 0));
    if (h1 == h0)
        return; /* (a legacy record has no header span to walk: headers is NULL) */
    fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
    const uint8_t *hk, *hv;
    int32_t kl, vl;
    for (int32_t h = h0; h < h1; h++) {
        CHECK(fkc_header_next(&it, &hk, &kl, &hv, &vl));
        CHECK(b->hkey_offsets[h + 1] - b->hkey_offsets[h] == kl);
        if (kl)
            CHECK(memcmp(b->hkey_data.data + b->hkey_offsets[h], hk, (size_t)kl) == 0);
        CHECK(((b->hvalue_validity[h / 8] >> (h % 8)) & 1) == (vl >= 0));
        CHECK(b->hvalue_offsets[h + 1] - b->hvalue_offsets[h] == (vl > 0 ? vl : 0));
        if (vl > 0)
            CHECK(memcmp(b->hvalue_data.data + b->hvalue_offsets[h], hv, (size_t)vl) == 0);
    }
}

/* Zero-copy: a binary_view entry holds exactly the descriptor's bytes. */
static void check_view(const fkc_arrow_builder *b, const uint8_t *view, const uint8_t *p, int32_t len)
{
    int32_t vlen;
    memcpy(&vlen, view, 4);
    CHECK(vlen == (len > 0 ? len : 0));
    if (vlen <= 12) {
        if (vlen)
            CHECK(memcmp(view + 4, p, (size_t)vlen) == 0);
        for (int32_t i = vlen; i < 12; i++)
            CHECK(view[4 + i] == 0);
        return;
    }
    int32_t index, offset;
    memcpy(&index, view + 8, 4);
    memcpy(&offset, view + 12, 4);
    CHECK(memcmp(view + 4, p, 4) == 0);
    CHECK(index >= 0 && (size_t)index <= b->buffer_count && offset >= 0);
    const uint8_t *base = index == 0 ? b->value_data.data : b->buffers[index - 1].data;
    size_t blen = index == 0 ? b->value_data.len : (size_t)b->buffers[index - 1].len;
    CHECK((size_t)offset + (size_t)vlen <= blen);
    CHECK(memcmp(base + offset, p, (size_t)vlen) == 0);
}

static void no_release(void *ctx, void *owner)
{
    (void)ctx;
    (void)owner;
}

/* Export the builder and release the tree with a child moved out first (as
 * the C data interface allows); LeakSanitizer checks the arena is freed. */
static void export_and_release(fkc_arrow_builder *b, size_t rows)
{
    struct ArrowArray root;
    if (!fkc_builder_export(b, &root))
        return;
    CHECK(root.length == (int64_t)rows && root.n_children == 8 && b->rows == 0);
    struct ArrowArray moved = *root.children[1]; /* value */
    root.children[1]->release = NULL;
    root.release(&root);
    CHECK(moved.length == (int64_t)rows);
    moved.release(&moved);
}

/* The Arrow form in one pass (fkc_decode_arrow, and the stream's Arrow steps
 * into one shared builder) against the descriptor decode `whole` of the
 * same input: the same rows, error kind and offset; a bad batch adds none
 * of its rows. */
static void check_builder(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, const fkc_decode_result *whole,
                          size_t k, size_t max_held)
{
    fkc_arrow_builder *b = fkc_builder_new();
    if (b == NULL)
        return;
    static const uint8_t topic[] = "fuzz-topic";
    CHECK(fkc_builder_segment(b, topic, sizeof topic - 1, 7));
    fkc_decode_result r;
    int rc = fkc_decode_arrow(blob, len, opts, b, &r);
    CHECK(rc == whole->error && r.error_offset == whole->error_offset);
    CHECK(r.count == whole->count && b->rows == whole->count);
    if (rc == FKC_OK)
        CHECK(r.next_offset == whole->next_offset);
    for (size_t i = 0; i < b->rows; i++)
        check_row(b, i, &whole->records[i]);
    fkc_decode_result_free(&r);
    export_and_release(b, whole->count);

    /* steps of k into one builder; the same stream twice over would repeat
     * its records, so a second stream appends the same rows again after */
    CHECK(fkc_builder_segment(b, topic, sizeof topic - 1, 8));
    size_t expect = 0;
    for (int round = 0; round < 2; round++) {
        fkc_stream *s = fkc_stream_new(blob, len, opts);
        if (s == NULL)
            break;
        fkc_decode_result out;
        memset(&out, 0, sizeof out);
        size_t start = b->rows;
        for (size_t guard = 0; guard < len + 8 && !fkc_stream_done(s); guard++) {
            size_t before = b->rows;
            int src = fkc_stream_step_arrow(s, k, max_held, b, &out);
            CHECK(out.count == b->rows - before && out.count <= k);
            if (src != FKC_OK)
                break;
            CHECK(out.count > 0 || fkc_stream_done(s) || whole->error == FKC_ERR_ARROW_LIMIT);
            if (out.count == 0)
                break;
        }
        size_t got = b->rows - start;
        CHECK(got <= whole->count);
        if (whole->error != FKC_ERR_ARROW_LIMIT)
            CHECK(got == whole->count);
        for (size_t i = 0; i < got; i++)
            check_row(b, start + i, &whole->records[i]);
        expect += got;
        fkc_decode_result_free(&out);
        fkc_stream_free(s);
    }
    CHECK(b->rows == expect);
    export_and_release(b, expect);
    fkc_builder_free(b);

    /* zero-copy: views into the input (or the decompressed buffers, which
     * the builder then keeps) instead of copies, the same rows otherwise */
    b = fkc_builder_new();
    if (b == NULL)
        return;
    b->zero_copy = 1;
    CHECK(fkc_builder_segment(b, topic, sizeof topic - 1, 7));
    CHECK(fkc_builder_keep(b, NULL, no_release, NULL)); /* the input outlives the builder here */
    rc = fkc_decode_arrow(blob, len, opts, b, &r);
    CHECK(rc == whole->error && r.error_offset == whole->error_offset && b->rows == whole->count);
    for (size_t i = 0; i < b->rows; i++) {
        const fkc_record *rec = &whole->records[i];
        check_view(b, b->key_views + 16 * i, rec->key, rec->key_len);
        check_view(b, b->value_views + 16 * i, rec->value, rec->value_len);
        CHECK(((b->key_validity[i / 8] >> (i % 8)) & 1) == (rec->key_len >= 0));
        CHECK(((b->value_validity[i / 8] >> (i % 8)) & 1) == (rec->value_len >= 0));
        CHECK(b->offset[i] == rec->offset);
    }
    fkc_decode_result_free(&r);
    export_and_release(b, whole->count);
    fkc_builder_free(b);
}

/* The resumable decoder over the same input: steps must join to the
 * one-shot result `whole`. */
static void check_stream(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, const fkc_decode_result *whole,
                         size_t k, size_t max_held)
{
    fkc_stream *s = fkc_stream_new(blob, len, opts);
    if (s == NULL)
        return;
    fkc_decode_result out;
    memset(&out, 0, sizeof out);
    size_t seen = 0;
    int rc = FKC_OK;
    for (size_t guard = 0; guard < len + 8 && !fkc_stream_done(s); guard++) {
        rc = fkc_stream_step(s, k, max_held, &out);
        CHECK(out.count <= k);
        CHECK(rc == out.error);
        /* decompressed buffers alive: each within the cap; at most the held
         * ones (< max_held before the last was opened) plus two batches */
        CHECK(fkc_stream_held_bytes(s) <= (max_held == SIZE_MAX ? SIZE_MAX : max_held + 2 * opts->max_decompressed_bytes));
        for (size_t i = 0; i < out.count; i++) {
            CHECK(seen + i < whole->count);
            const fkc_record *a = &out.records[i], *b = &whole->records[seen + i];
            CHECK(a->offset == b->offset && a->timestamp == b->timestamp && a->header_count == b->header_count);
            CHECK(a->leader_epoch == b->leader_epoch && a->timestamp_type == b->timestamp_type);
            CHECK(same_bytes(a->key, a->key_len, b->key, b->key_len));
            CHECK(same_bytes(a->value, a->value_len, b->value, b->value_len));
            CHECK(a->headers_len == b->headers_len);
            if (a->headers_len)
                CHECK(memcmp(a->headers, b->headers, a->headers_len) == 0);
        }
        seen += out.count;
        if (rc != FKC_OK)
            break;
        CHECK(out.count > 0 || fkc_stream_done(s)); /* a step handing out nothing is the end */
    }
    CHECK(fkc_stream_done(s));
    CHECK(seen == whole->count || whole->error == FKC_ERR_ARROW_LIMIT);
    if (whole->error == FKC_OK) {
        CHECK(rc == FKC_OK && out.next_offset == whole->next_offset);
    } else if (whole->error != FKC_ERR_ARROW_LIMIT) {
        CHECK(rc == whole->error && out.error_offset == whole->error_offset);
        /* sticky */
        CHECK(fkc_stream_step(s, k, max_held, &out) == rc && out.count == 0);
    }
    fkc_decode_result_free(&out);
    fkc_stream_free(s);
}

/* A step's marks (fkc_stream_marks, what RecordStream.prepare hands out in
 * pieces by): for a piece ending at record i, a fresh stream stepped for
 * exactly i records must report what the prepared step says -- the mark's
 * resume offset and done at a batch boundary, else one past record i-1 and
 * not done -- and hand out the same records. */
static void check_marks(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, size_t max_held)
{
    fkc_stream *s = fkc_stream_new(blob, len, opts);
    if (s == NULL)
        return;
    fkc_decode_result out;
    memset(&out, 0, sizeof out);
    fkc_stream_record_marks(s, 1);
    fkc_stream_step(s, SIZE_MAX, max_held, &out);
    const fkc_step_mark *marks;
    size_t nmarks = fkc_stream_marks(s, &marks);
    size_t prev = 0;
    for (size_t m = 0; m < nmarks; m++) {
        CHECK(marks[m].count > prev && marks[m].count <= out.count);
        prev = marks[m].count;
    }
    size_t m = 0;
    for (size_t i = 1; i <= out.count; i++) {
        while (m < nmarks && marks[m].count < i)
            m++;
        int at_mark = m < nmarks && marks[m].count == i;
        if (!at_mark && i != out.count / 2 && i != 1)
            continue; /* every batch boundary, and two pieces inside batches */
        fkc_stream *t = fkc_stream_new(blob, len, opts);
        if (t == NULL)
            break;
        fkc_decode_result piece;
        memset(&piece, 0, sizeof piece);
        int rc = fkc_stream_step(t, i, max_held, &piece);
        CHECK(rc == FKC_OK || piece.count == i); /* an error only after the i records, if at all */
        CHECK(piece.count == i);
        for (size_t j = 0; j < i; j++)
            CHECK(piece.records[j].offset == out.records[j].offset);
        if (rc == FKC_OK) {
            if (at_mark) {
                CHECK(piece.next_offset == marks[m].resume);
                CHECK(fkc_stream_done(t) == marks[m].done);
            } else {
                CHECK(piece.next_offset == out.records[i - 1].offset + 1);
                CHECK(!fkc_stream_done(t));
            }
        }
        fkc_decode_result_free(&piece);
        fkc_stream_free(t);
    }
    fkc_decode_result_free(&out);
    fkc_stream_free(s);
}

static void check_scan(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, const fkc_decode_result *r)
{
    fkc_scan_info info;
    fkc_scan_blob(blob, len, &info);
    CHECK(info.complete_bytes <= len);
    CHECK(info.tail == FKC_TAIL_NONE || info.tail == FKC_TAIL_CUT || info.tail == FKC_TAIL_MALFORMED);
    CHECK((info.tail == FKC_TAIL_NONE) == (info.complete_bytes == len));
    if (info.entries == 0)
        CHECK(info.next_offset == -1);
    if (info.tail == FKC_TAIL_MALFORMED) {
        CHECK(r->error != FKC_OK); /* the decoder reaches it (or an earlier error) */
        CHECK(memchr(info.reason, '\0', sizeof info.reason) != NULL);
    }
    if (r->error == FKC_OK && info.entries == 0)
        CHECK(r->count == 0 && r->next_offset == opts->fetch_offset); /* nothing complete: nothing decoded */

    /* the benchmark ceiling's CRC-only walk frames by the same rule: it never
     * walks past the scan's complete entries, and accepts a blob only when
     * the scan found it all complete */
    fkc_check_info ci;
    fkc_check_blob(blob, len, opts->fetch_offset, &ci);
    CHECK(ci.status == FKC_CHECK_OK || ci.status == FKC_CHECK_CORRUPT || ci.status == FKC_CHECK_LEGACY ||
          ci.status == FKC_CHECK_BAD_CRC);
    CHECK(memchr(ci.reason, '\0', sizeof ci.reason) != NULL);
    CHECK(ci.checked_bytes <= info.complete_bytes && ci.batches <= info.entries);
    CHECK(ci.records >= 0 && ci.next_offset >= opts->fetch_offset);
    if (ci.status == FKC_CHECK_OK) {
        CHECK(info.tail == FKC_TAIL_NONE && ci.checked_bytes == len && ci.batches == info.entries);
        if (info.entries)
            CHECK(ci.next_offset == (info.next_offset > opts->fetch_offset ? info.next_offset : opts->fetch_offset));
    } else {
        CHECK(ci.reason[0] != '\0');
    }
}

/* ---- share decode ---------------------------------------------------- */

#define SHARE_MAX_RANGES 6

typedef struct share_ranges {
    int64_t first[SHARE_MAX_RANGES];
    int64_t last[SHARE_MAX_RANGES];
    int16_t count[SHARE_MAX_RANGES];
    size_t n;
} share_ranges;

/* Sorted, disjoint ranges from a seed (xorshift32). */
static void make_ranges(uint32_t seed, share_ranges *out)
{
    uint32_t x = seed ? seed : 0x9e3779b9u;
#define NEXT() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
    out->n = NEXT() % (SHARE_MAX_RANGES + 1);
    int64_t at = (int64_t)(NEXT() % 16);
    for (size_t i = 0; i < out->n; i++) {
        int64_t length = 1 + (int64_t)(NEXT() % 12);
        out->first[i] = at;
        out->last[i] = at + length - 1;
        out->count[i] = (int16_t)(1 + NEXT() % 5);
        at += length + (int64_t)(NEXT() % 4);
    }
#undef NEXT
}

/* Which range holds `offset`, or -1. */
static int range_of(const share_ranges *a, int64_t offset)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->first[i] <= offset && offset <= a->last[i])
            return (int)i;
    return -1;
}

static void check_share_arrow(const uint8_t *blob, size_t len, const fkc_decode_opts *so, const fkc_decode_result *sr)
{
    fkc_arrow_builder *b = fkc_builder_new();
    if (b == NULL)
        return;
    b->share = 1;
    static const uint8_t topic[] = "fuzz-topic";
    CHECK(fkc_builder_segment(b, topic, sizeof topic - 1, 7));
    fkc_decode_result r;
    int rc = fkc_decode_arrow(blob, len, so, b, &r);
    CHECK(rc == sr->error && r.error_offset == sr->error_offset && b->rows == sr->count);
    for (size_t i = 0; i < b->rows; i++) {
        check_row(b, i, &sr->records[i]);
        CHECK(b->delivery_count[i] == sr->records[i].delivery_count);
    }
    fkc_decode_result_free(&r);
    struct ArrowArray root;
    if (fkc_builder_export(b, &root)) {
        CHECK(root.n_children == 9 && root.length == (int64_t)sr->count);
        struct ArrowArray moved = *root.children[8]; /* delivery_count */
        CHECK(moved.length == (int64_t)sr->count && moved.n_buffers == 2);
        root.children[8]->release = NULL;
        root.release(&root);
        moved.release(&moved);
    }
    fkc_builder_free(b);
}

static void check_share(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, uint32_t seed, size_t k)
{
    share_ranges a;
    make_ranges(seed, &a);
    fkc_decode_opts so = *opts;
    so.fetch_offset = 0;
    so.stop_offset = -1;
    so.read_committed = 0;
    so.aborted_count = 0;
    fkc_decode_opts plain_opts = so;
    so.share = 1;
    so.acquired_first = a.first;
    so.acquired_last = a.last;
    so.acquired_count = a.count;
    so.acquired_n = a.n;

    fkc_decode_result plain, sr;
    fkc_decode_records(blob, len, &plain_opts, &plain);
    int rc = fkc_decode_records(blob, len, &so, &sr);
    /* the filter changes which records are kept, never the walk (with
     * Arrow timestamps a dropped record's timestamp is not checked) */
    if (!so.arrow_timestamps)
        CHECK(rc == plain.error && sr.error_offset == plain.error_offset);
    if (rc != FKC_OK && rc != FKC_ERR_ARROW_LIMIT)
        CHECK(sr.error_batch_last >= sr.error_offset);
    /* the Java rule over the plain records (up to where the share decode
     * stopped), when both walks ended alike */
    int64_t floor = INT64_MIN;
    size_t j = 0;
    /* (not with Arrow timestamps: a record the filter drops has its
     * timestamp unchecked, so the walks may fail at different records of
     * the same batch and keep different records before them) */
    int alike = !so.arrow_timestamps && rc == plain.error && sr.error_offset == plain.error_offset;
    for (size_t i = 0; alike && i < plain.count && j < sr.count; i++) {
        const fkc_record *p = &plain.records[i];
        if (p->offset < floor)
            continue;
        floor = p->offset < INT64_MAX ? p->offset + 1 : INT64_MAX;
        int at = range_of(&a, p->offset);
        if (at < 0)
            continue;
        const fkc_record *q = &sr.records[j++];
        /* (bytes compared: a compressed batch is decompressed by each decode) */
        CHECK(q->offset == p->offset && same_bytes(q->key, q->key_len, p->key, p->key_len) &&
              same_bytes(q->value, q->value_len, p->value, p->value_len) && q->delivery_count == a.count[at]);
    }
    if (alike)
        CHECK(j == sr.count);

    /* gaps and handed-out offsets partition the acquired offsets */
    int64_t *pairs = NULL;
    size_t gaps = 0;
    if (fkc_share_gaps(&so, sr.count ? &sr.records[0].offset : NULL, sizeof(fkc_record), sr.count, &pairs, &gaps)) {
        size_t g = 0, d = 0;
        for (size_t ri = 0; ri < a.n; ri++) {
            for (int64_t o = a.first[ri]; o <= a.last[ri]; o++) {
                int handed = d < sr.count && sr.records[d].offset == o;
                int in_gap = g < gaps && pairs[2 * g] <= o && o <= pairs[2 * g + 1];
                CHECK(handed != in_gap);
                if (handed)
                    d++;
                if (in_gap && o == pairs[2 * g + 1])
                    g++;
            }
        }
        CHECK(d == sr.count && g == gaps);
        free(pairs);
    }

    /* steps of k join to the one-shot result */
    fkc_stream *s = fkc_stream_new(blob, len, &so);
    if (s != NULL) {
        fkc_decode_result out;
        memset(&out, 0, sizeof out);
        size_t seen = 0;
        for (size_t guard = 0; guard < len + 8 && !fkc_stream_done(s); guard++) {
            int src = fkc_stream_step(s, k, SIZE_MAX, &out);
            for (size_t i = 0; i < out.count; i++) {
                CHECK(seen + i < sr.count);
                CHECK(out.records[i].offset == sr.records[seen + i].offset &&
                      out.records[i].delivery_count == sr.records[seen + i].delivery_count);
            }
            seen += out.count;
            if (src != FKC_OK) {
                CHECK(src == rc && out.error_offset == sr.error_offset);
                break;
            }
            if (out.count == 0)
                break;
        }
        if (rc != FKC_ERR_ARROW_LIMIT)
            CHECK(seen == sr.count);
        fkc_decode_result_free(&out);
        fkc_stream_free(s);
    }
    if (so.arrow_timestamps)
        check_share_arrow(blob, len, &so, &sr);
    fkc_decode_result_free(&sr);
    fkc_decode_result_free(&plain);
}

static void decode_and_check(const uint8_t *blob, size_t len, const fkc_decode_opts *opts, const host_state *st,
                             size_t k, size_t max_held)
{
    fkc_decode_result r;
    int rc = fkc_decode_records(blob, len, opts, &r);
    CHECK(rc == r.error);
    CHECK(rc == FKC_OK || rc == FKC_ERR_INVALID || rc == FKC_ERR_CRC || rc == FKC_ERR_DECOMPRESS ||
          rc == FKC_ERR_SIZE_LIMIT || rc == FKC_ERR_UNSUPPORTED_CODEC || rc == FKC_ERR_BUDGET ||
          rc == FKC_ERR_ARROW_LIMIT);
    if (!opts->check_crcs)
        CHECK(rc != FKC_ERR_CRC);
    if (!opts->max_batch_records)
        CHECK(rc != FKC_ERR_BUDGET);
    if (!st->fail && rc == FKC_ERR_DECOMPRESS) {
        /* without host failures, only C-side framing can reject a payload */
        CHECK(r.error_reason[0] != '\0');
    }
    CHECK(memchr(r.error_reason, '\0', sizeof(r.error_reason)) != NULL);
    CHECK(r.count <= r.capacity || r.count == 0);
    /* on an error next_offset is the bad batch's base offset (where to skip
     * from), which may lie below fetch_offset; on success never */
    if (rc == FKC_OK)
        CHECK(r.next_offset >= opts->fetch_offset);
    for (size_t i = 0; i < r.blob_count; i++)
        CHECK(r.blobs[i].len <= opts->max_decompressed_bytes);

    uint64_t key_bytes = 0, value_bytes = 0, header_count = 0;
    for (size_t i = 0; i < r.count; i++) {
        const fkc_record *rec = &r.records[i];
        CHECK(rec->offset >= opts->fetch_offset);
        if (opts->stop_offset >= 0)
            CHECK(rec->offset < opts->stop_offset);
        CHECK(rec->key_len >= -1 && rec->value_len >= -1);
        CHECK(owned(&r, blob, len, rec->key, rec->key_len));
        CHECK(owned(&r, blob, len, rec->value, rec->value_len));
        CHECK(rec->magic >= 0 && rec->magic <= 2);
        CHECK(rec->timestamp_type >= -1 && rec->timestamp_type <= 1);
        key_bytes += rec->key_len > 0 ? (uint64_t)rec->key_len : 0;
        value_bytes += rec->value_len > 0 ? (uint64_t)rec->value_len : 0;
        CHECK(rec->header_count >= 0);
        if (rec->header_count > 0) {
            CHECK(owned(&r, blob, len, rec->headers, (int64_t)rec->headers_len));
            fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
            const uint8_t *hk, *hv;
            int32_t kl, vl, seen = 0;
            while (fkc_header_next(&it, &hk, &kl, &hv, &vl)) {
                CHECK(kl >= 0 && vl >= -1);
                CHECK(inside(hk, kl, rec->headers, rec->headers_len));
                CHECK(inside(hv, vl, rec->headers, rec->headers_len));
                seen++;
                CHECK(seen <= rec->header_count);
            }
            CHECK(seen == rec->header_count);
        }
        header_count += (uint64_t)rec->header_count;
    }
    if (opts->arrow_timestamps) { /* the totals are computed for Arrow sizing */
        CHECK(key_bytes == r.key_bytes);
        CHECK(value_bytes == r.value_bytes);
        CHECK(header_count == r.header_count);
        /* the records decoded before an error are returned too, so build them */
        fill_arrow(&r);
        check_builder(blob, len, opts, &r, k, max_held);
    }
    if (rc != FKC_ERR_CRC || st->fail)
        check_scan(blob, len, opts, &r);
    check_stream(blob, len, opts, &r, k, max_held);
    if (!opts->arrow_limits) /* (Arrow limits end steps early; prepared steps are records only) */
        check_marks(blob, len, opts, max_held);
    fkc_decode_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const size_t caps[4] = {1u << 20, 64, 600, 4096};
    static const int64_t aborted_pids[3] = {7, 1, 2};
    static const int64_t aborted_first[3] = {0, 3, 5};

    uint8_t flags = data[0];
    host_state st = {(flags >> 3) & 1};
    fkc_codec_host host = {passthrough, release, &st};
    fkc_decode_opts opts;
    memset(&opts, 0, sizeof(opts));
    opts.fetch_offset = data[1];
    opts.stop_offset = data[2] ? (int64_t)data[2] : -1;
    opts.check_crcs = flags & 1;
    opts.read_committed = (flags >> 1) & 1;
    opts.arrow_timestamps = (flags >> 2) & 1;
    opts.arrow_limits = (flags >> 2) & 1;
    opts.arrow_topic_len = 10; /* "fuzz-topic" */
    if (opts.read_committed) {
        opts.aborted_pids = aborted_pids;
        opts.aborted_first_offsets = aborted_first;
        opts.aborted_count = 3;
    }
    opts.max_decompressed_bytes = caps[(flags >> 4) & 3];
    opts.max_batch_records = (flags >> 6) & 1 ? 3 : 0;
    opts.host = &host;
    size_t k = k_steps[size % 4];
    size_t max_held = (flags >> 7) & 1 ? 1 : SIZE_MAX;

    /* exactly sized copy: ASan sees a one-byte over-read */
    size_t len = size - 3;
    uint8_t *blob = (uint8_t *)malloc(len ? len : 1);
    if (blob == NULL)
        return 0;
    memcpy(blob, data + 3, len);

    decode_and_check(blob, len, &opts, &st, k, max_held);
    check_share(blob, len, &opts, ((uint32_t)data[1] << 24) ^ ((uint32_t)data[2] << 16) ^ (uint32_t)size, k);
    if (opts.check_crcs) {
        /* structural mutations must reach past the CRC too */
        opts.check_crcs = 0;
        decode_and_check(blob, len, &opts, &st, k, max_held);
    }
    free(blob);
    return 0;
}
