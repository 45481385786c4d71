/* fkc_arrow.c — Arrow column filling; see fkc_arrow.h. */
#include "fkc_arrow.h"

#include <stdlib.h>
#include <string.h>

int fkc_arrow_fits(const fkc_decode_result *r, size_t topic_len)
{
    const uint64_t limit = INT32_MAX;
    uint64_t n = r->count;
    if (n > limit || r->key_bytes > limit || r->value_bytes > limit || r->header_count > limit ||
        r->header_key_bytes > limit || r->header_value_bytes > limit)
        return 0;
    if (topic_len && n > limit / topic_len)
        return 0;
    return 1;
}

static inline void fkc_bit_clear(uint8_t *bitmap, size_t i)
{
    bitmap[i >> 3] = (uint8_t)(bitmap[i >> 3] & ~(1u << (i & 7)));
}

/* Nulls are the exception (a null key or value, a record without headers or
 * timestamp): a bitmap starts all valid and only nulls touch it, instead of a
 * read-modify-write per record and column. Bits past n stay 0 (Arrow leaves
 * padding unspecified; zero keeps buffers deterministic). */
static void fkc_bitmap_all_valid(uint8_t *bitmap, size_t n)
{
    memset(bitmap, 0xFF, n / 8);
    if (n % 8)
        bitmap[n / 8] = (uint8_t)((1u << (n % 8)) - 1u);
}

void fkc_arrow_fill(const fkc_decode_result *r, const uint8_t *topic, size_t topic_len, int32_t partition,
                    fkc_arrow_columns *c)
{
    size_t n = r->count;
    fkc_bitmap_all_valid(c->key_validity, n);
    fkc_bitmap_all_valid(c->value_validity, n);
    fkc_bitmap_all_valid(c->timestamp_validity, n);
    /* Most records carry no headers: that bitmap starts all null instead. */
    memset(c->headers_validity, 0, fkc_bitmap_bytes(n));
    fkc_bitmap_all_valid(c->hvalue_validity, (size_t)r->header_count);
    c->key_nulls = c->value_nulls = c->timestamp_nulls = c->headers_nulls = c->hvalue_nulls = 0;

    /* Offsets are accumulated in size_t and stored as int32: fkc_arrow_fits()
     * was checked by the caller, so every total is <= INT32_MAX. */
    size_t key_pos = 0, value_pos = 0, topic_pos = 0, header_pos = 0, hkey_pos = 0, hvalue_pos = 0;
    c->key_offsets[0] = 0;
    c->value_offsets[0] = 0;
    c->topic_offsets[0] = 0;
    c->headers_offsets[0] = 0;
    c->hkey_offsets[0] = 0;
    c->hvalue_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const fkc_record *rec = &r->records[i];
        if (rec->key_len >= 0) {
            memcpy(c->key_data + key_pos, rec->key, (size_t)rec->key_len);
            key_pos += (size_t)rec->key_len;
        } else {
            fkc_bit_clear(c->key_validity, i);
            c->key_nulls++;
        }
        c->key_offsets[i + 1] = (int32_t)key_pos;
        if (rec->value_len >= 0) {
            memcpy(c->value_data + value_pos, rec->value, (size_t)rec->value_len);
            value_pos += (size_t)rec->value_len;
        } else {
            fkc_bit_clear(c->value_validity, i);
            c->value_nulls++;
        }
        c->value_offsets[i + 1] = (int32_t)value_pos;
        topic_pos += topic_len; /* the bytes are written once, after the loop */
        c->topic_offsets[i + 1] = (int32_t)topic_pos;
        c->partition[i] = partition;
        c->offset[i] = rec->offset;
        if (rec->timestamp_type >= 0) {
            /* ms -> µs; wrapping multiply so a hostile timestamp is not UB */
            c->timestamp[i] = (int64_t)((uint64_t)rec->timestamp * 1000u);
        } else {
            c->timestamp[i] = 0;
            fkc_bit_clear(c->timestamp_validity, i);
            c->timestamp_nulls++;
        }
        c->timestamp_type[i] = rec->timestamp_type;
        if (rec->header_count > 0) {
            c->headers_validity[i >> 3] = (uint8_t)(c->headers_validity[i >> 3] | (1u << (i & 7)));
            fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
            const uint8_t *k, *v;
            int32_t kl, vl;
            while (fkc_header_next(&it, &k, &kl, &v, &vl)) {
                memcpy(c->hkey_data + hkey_pos, k, (size_t)kl);
                hkey_pos += (size_t)kl;
                c->hkey_offsets[header_pos + 1] = (int32_t)hkey_pos;
                if (vl >= 0) {
                    memcpy(c->hvalue_data + hvalue_pos, v, (size_t)vl);
                    hvalue_pos += (size_t)vl;
                } else {
                    fkc_bit_clear(c->hvalue_validity, header_pos);
                    c->hvalue_nulls++;
                }
                c->hvalue_offsets[header_pos + 1] = (int32_t)hvalue_pos;
                header_pos++;
            }
        } else {
            c->headers_nulls++;
        }
        c->headers_offsets[i + 1] = (int32_t)header_pos;
    }
    /* The topic column repeats one string: copy it once, then double the
     * filled prefix (log2(n) memcpy calls instead of one per record). */
    size_t total = n * topic_len;
    if (total) {
        memcpy(c->topic_data, topic, topic_len);
        size_t filled = topic_len;
        while (filled < total) {
            size_t chunk = filled <= total - filled ? filled : total - filled;
            memcpy(c->topic_data + filled, c->topic_data, chunk);
            filled += chunk;
        }
    }
}

/* ---- export through the Arrow C data interface ------------------------- */

/* Nodes of the exported tree: the batch (a struct array), its 8 columns, the
 * headers' struct child and its key and value children. */
enum {
    FKC_NODE_BATCH,
    FKC_NODE_KEY,
    FKC_NODE_VALUE,
    FKC_NODE_TOPIC,
    FKC_NODE_PARTITION,
    FKC_NODE_OFFSET,
    FKC_NODE_TIMESTAMP,
    FKC_NODE_TIMESTAMP_TYPE,
    FKC_NODE_HEADERS,
    FKC_NODE_HEADER_STRUCT,
    FKC_NODE_HEADER_KEY,
    FKC_NODE_HEADER_VALUE,
    FKC_NODE_COUNT
};

enum { FKC_BUFFER_COUNT = 20 }; /* the pointers in fkc_arrow_columns */

typedef struct fkc_arrow_export_data {
    size_t refs;                 /* nodes not yet released */
    void *arena;                 /* every column buffer, one allocation */
    struct ArrowArray nodes[FKC_NODE_COUNT];
    struct ArrowArray *batch_children[8];
    struct ArrowArray *headers_child[1];
    struct ArrowArray *struct_children[2];
    const void *buffers[FKC_NODE_COUNT][3];
} fkc_arrow_export_data;

static void fkc_arrow_node_release(struct ArrowArray *node)
{
    if (node == NULL || node->release == NULL)
        return;
    /* Children still in place are released with their parent; a moved child
     * was marked released by whoever moved it and is released by them. */
    for (int64_t i = 0; i < node->n_children; i++) {
        struct ArrowArray *child = node->children[i];
        if (child->release != NULL)
            child->release(child);
    }
    fkc_arrow_export_data *data = (fkc_arrow_export_data *)node->private_data;
    node->release = NULL;
    if (--data->refs == 0) {
        free(data->arena);
        free(data);
    }
}

/* Arena slots start on 64-byte boundaries (Arrow's recommended alignment)
 * and are never empty, so every buffer pointer is valid and distinct. */
static size_t fkc_slot(size_t nbytes)
{
    size_t n = nbytes ? nbytes : 1;
    return (n + 63) & ~(size_t)63;
}

static void fkc_arrow_node(fkc_arrow_export_data *data, int index, int64_t length, int64_t null_count,
                           int64_t n_buffers, int64_t n_children, struct ArrowArray **children)
{
    struct ArrowArray *node = &data->nodes[index];
    node->length = length;
    node->null_count = null_count;
    node->offset = 0;
    node->n_buffers = n_buffers;
    node->n_children = n_children;
    node->buffers = data->buffers[index];
    node->children = children;
    node->dictionary = NULL;
    node->release = fkc_arrow_node_release;
    node->private_data = data;
}

int fkc_arrow_export(const fkc_decode_result *r, const uint8_t *topic, size_t topic_len, int32_t partition,
                     struct ArrowArray *out)
{
    size_t n = r->count;
    size_t h = (size_t)r->header_count;
    size_t bm = fkc_bitmap_bytes(n);
    /* Sizes in the order of fkc_arrow_columns' pointers. fkc_arrow_fits()
     * bounds every count and total by INT32_MAX, so no product overflows. */
    const size_t sizes[FKC_BUFFER_COUNT] = {
        bm, (n + 1) * 4, (size_t)r->key_bytes,                              /* key */
        bm, (n + 1) * 4, (size_t)r->value_bytes,                            /* value */
        (n + 1) * 4, n * topic_len,                                         /* topic */
        n * 4, n * 8,                                                       /* partition, offset */
        bm, n * 8, n * 4,                                                   /* timestamp, timestampType */
        bm, (n + 1) * 4,                                                    /* headers */
        (h + 1) * 4, (size_t)r->header_key_bytes,                           /* header keys */
        fkc_bitmap_bytes(h), (h + 1) * 4, (size_t)r->header_value_bytes,    /* header values */
    };
    size_t total = 0;
    for (int i = 0; i < FKC_BUFFER_COUNT; i++)
        total += fkc_slot(sizes[i]);
    fkc_arrow_export_data *data = (fkc_arrow_export_data *)calloc(1, sizeof *data);
    if (data == NULL)
        return 0;
    /* C11 aligned_alloc: total is a multiple of 64, as it requires. */
    uint8_t *arena = (uint8_t *)aligned_alloc(64, total);
    if (arena == NULL) {
        free(data);
        return 0;
    }
    data->arena = arena;
    uint8_t *slots[FKC_BUFFER_COUNT];
    size_t at = 0;
    for (int i = 0; i < FKC_BUFFER_COUNT; i++) {
        slots[i] = arena + at;
        at += fkc_slot(sizes[i]);
    }
    fkc_arrow_columns c;
    c.key_validity = slots[0];
    c.key_offsets = (int32_t *)(void *)slots[1];
    c.key_data = slots[2];
    c.value_validity = slots[3];
    c.value_offsets = (int32_t *)(void *)slots[4];
    c.value_data = slots[5];
    c.topic_offsets = (int32_t *)(void *)slots[6];
    c.topic_data = slots[7];
    c.partition = (int32_t *)(void *)slots[8];
    c.offset = (int64_t *)(void *)slots[9];
    c.timestamp_validity = slots[10];
    c.timestamp = (int64_t *)(void *)slots[11];
    c.timestamp_type = (int32_t *)(void *)slots[12];
    c.headers_validity = slots[13];
    c.headers_offsets = (int32_t *)(void *)slots[14];
    c.hkey_offsets = (int32_t *)(void *)slots[15];
    c.hkey_data = slots[16];
    c.hvalue_validity = slots[17];
    c.hvalue_offsets = (int32_t *)(void *)slots[18];
    c.hvalue_data = slots[19];
    fkc_arrow_fill(r, topic, topic_len, partition, &c);

    const void *(*b)[3] = data->buffers;
    /* A validity buffer is only handed over when the column has nulls. */
    b[FKC_NODE_BATCH][0] = NULL;
    b[FKC_NODE_KEY][0] = c.key_nulls ? c.key_validity : NULL;
    b[FKC_NODE_KEY][1] = c.key_offsets;
    b[FKC_NODE_KEY][2] = c.key_data;
    b[FKC_NODE_VALUE][0] = c.value_nulls ? c.value_validity : NULL;
    b[FKC_NODE_VALUE][1] = c.value_offsets;
    b[FKC_NODE_VALUE][2] = c.value_data;
    b[FKC_NODE_TOPIC][0] = NULL;
    b[FKC_NODE_TOPIC][1] = c.topic_offsets;
    b[FKC_NODE_TOPIC][2] = c.topic_data;
    b[FKC_NODE_PARTITION][0] = NULL;
    b[FKC_NODE_PARTITION][1] = c.partition;
    b[FKC_NODE_OFFSET][0] = NULL;
    b[FKC_NODE_OFFSET][1] = c.offset;
    b[FKC_NODE_TIMESTAMP][0] = c.timestamp_nulls ? c.timestamp_validity : NULL;
    b[FKC_NODE_TIMESTAMP][1] = c.timestamp;
    b[FKC_NODE_TIMESTAMP_TYPE][0] = NULL;
    b[FKC_NODE_TIMESTAMP_TYPE][1] = c.timestamp_type;
    b[FKC_NODE_HEADERS][0] = c.headers_nulls ? c.headers_validity : NULL;
    b[FKC_NODE_HEADERS][1] = c.headers_offsets;
    b[FKC_NODE_HEADER_STRUCT][0] = NULL;
    b[FKC_NODE_HEADER_KEY][0] = NULL;
    b[FKC_NODE_HEADER_KEY][1] = c.hkey_offsets;
    b[FKC_NODE_HEADER_KEY][2] = c.hkey_data;
    b[FKC_NODE_HEADER_VALUE][0] = c.hvalue_nulls ? c.hvalue_validity : NULL;
    b[FKC_NODE_HEADER_VALUE][1] = c.hvalue_offsets;
    b[FKC_NODE_HEADER_VALUE][2] = c.hvalue_data;

    for (int i = 0; i < 8; i++)
        data->batch_children[i] = &data->nodes[FKC_NODE_KEY + i];
    data->headers_child[0] = &data->nodes[FKC_NODE_HEADER_STRUCT];
    data->struct_children[0] = &data->nodes[FKC_NODE_HEADER_KEY];
    data->struct_children[1] = &data->nodes[FKC_NODE_HEADER_VALUE];
    int64_t len = (int64_t)n;
    int64_t hlen = (int64_t)h;
    fkc_arrow_node(data, FKC_NODE_BATCH, len, 0, 1, 8, data->batch_children);
    fkc_arrow_node(data, FKC_NODE_KEY, len, c.key_nulls, 3, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_VALUE, len, c.value_nulls, 3, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_TOPIC, len, 0, 3, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_PARTITION, len, 0, 2, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_OFFSET, len, 0, 2, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_TIMESTAMP, len, c.timestamp_nulls, 2, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_TIMESTAMP_TYPE, len, 0, 2, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_HEADERS, len, c.headers_nulls, 2, 1, data->headers_child);
    fkc_arrow_node(data, FKC_NODE_HEADER_STRUCT, hlen, 0, 1, 2, data->struct_children);
    fkc_arrow_node(data, FKC_NODE_HEADER_KEY, hlen, 0, 3, 0, NULL);
    fkc_arrow_node(data, FKC_NODE_HEADER_VALUE, hlen, c.hvalue_nulls, 3, 0, NULL);
    data->refs = FKC_NODE_COUNT;
    /* The root is handed over by value: the consumer owns it from here. */
    *out = data->nodes[FKC_NODE_BATCH];
    data->nodes[FKC_NODE_BATCH].release = NULL;
    return 1;
}
