/* fkc_arrow_builder.c — growable Arrow columns; see fkc_arrow_builder.h. */
#include "fkc_arrow_builder.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_arrow_abi.h"
#include "fkc_grow.h"

#define FKC_I32_LIMIT ((uint64_t)INT32_MAX)

/* ---- the arena ---------------------------------------------------------
 * Every column lives in one 64-byte-aligned allocation (Arrow's recommended
 * alignment), as the exported batch did before: one malloc/free per batch,
 * which glibc's adaptive thresholds then serve from the heap without fresh
 * page faults (a score of separately freed blocks made it return memory to
 * the kernel and fault it back in on every decode). Growing any column
 * reallocates the arena and copies only what is used. */

enum {
    FKC_R_KEY_OFFSETS, FKC_R_VALUE_OFFSETS, FKC_R_HEADERS_OFFSETS, FKC_R_OFFSET, FKC_R_TIMESTAMP,
    FKC_R_TIMESTAMP_TYPE, FKC_R_KEY_VALID, FKC_R_VALUE_VALID, FKC_R_TIMESTAMP_VALID, FKC_R_HEADERS_VALID,
    FKC_R_TOPIC_OFFSETS, FKC_R_PARTITION, FKC_R_KEY_DATA, FKC_R_VALUE_DATA, FKC_R_HKEY_OFFSETS,
    FKC_R_HVALUE_OFFSETS, FKC_R_HVALUE_VALID, FKC_R_HKEY_DATA, FKC_R_HVALUE_DATA, FKC_R_KEY_VIEWS,
    FKC_R_VALUE_VIEWS, FKC_R_DELIVERY_COUNT, FKC_R_COUNT
};

typedef struct fkc_caps {
    size_t rows, headers, key, value, hkey, hvalue;
    int views; /* zero-copy: the key and value views */
    int share; /* share decode: the delivery_count column */
} fkc_caps;

static size_t fkc_slot(size_t nbytes)
{
    size_t n = nbytes ? nbytes : 1;
    return (n + 63) & ~(size_t)63;
}

/* ---- arena reuse ---------------------------------------------------------
 * poll_arrow() builds one batch per call, so each call used to map a fresh
 * arena of ~10 MB (73,000 rows of 100 bytes) and the kernel faulted and
 * zeroed it page by page: a quarter of poll_arrow()'s profile on the e2e
 * benchmark. Released arenas are kept idle and handed to the next builder
 * that asks for at least FKC_ARENA_REUSE_MIN bytes and fits in one (the
 * smallest that fits); that builder then spreads its capacities over the
 * whole arena (fkc_regrow), so it rarely grows again.
 *
 * Two idle arenas, not one: an application that holds the batch it works on
 * while the next is decoded, then drops both (the end of a loop, a list of
 * batches let go), released two arenas at once, and with one slot the next
 * decode but one faulted a whole fresh arena in: ~330 page faults of ~3 µs
 * each on this project's VM per 1 MB fetch, a fifth of decode_arrow's time
 * in benchmarks/decode_table.py. The idle arenas together stay within
 * FKC_ARENA_KEEP_MAX, the bound the single slot had, the oldest freed first.
 *
 * A batch is released wherever its last reference dies, on any thread and
 * without the GIL, hence the lock (held for a few loads and stores; free()
 * runs outside it). Each arena carries its size in a 64-byte header before
 * the columns (keeps them 64-byte aligned). */
#define FKC_ARENA_HEADER 64
#define FKC_ARENA_KEEP_MAX ((size_t)256 << 20)
#define FKC_ARENA_REUSE_MIN ((size_t)64 << 10)
#define FKC_ARENA_IDLE_SLOTS 2

static pthread_mutex_t fkc_idle_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *fkc_idle[FKC_ARENA_IDLE_SLOTS]; /* oldest first; NULLs after the last held */
static _Atomic(uint64_t) fkc_arena_reuses = 0;

uint64_t fkc_arena_reuse_count(void)
{
    return atomic_load(&fkc_arena_reuses);
}

static size_t fkc_arena_size(const uint8_t *arena)
{
    size_t size;
    memcpy(&size, arena - FKC_ARENA_HEADER, sizeof size);
    return size;
}

static void fkc_arena_free(uint8_t *arena)
{
    if (arena != NULL)
        free(arena - FKC_ARENA_HEADER);
}

/* The smallest idle arena of at least `want` bytes, taken out of the pool
 * (which stays packed, oldest first); NULL when none fits. */
static uint8_t *fkc_idle_take(size_t want)
{
    uint8_t *best = NULL;
    pthread_mutex_lock(&fkc_idle_lock);
    int at = -1;
    for (int i = 0; i < FKC_ARENA_IDLE_SLOTS && fkc_idle[i] != NULL; i++) {
        size_t size = fkc_arena_size(fkc_idle[i]);
        if (size >= want && (best == NULL || size < fkc_arena_size(best))) {
            best = fkc_idle[i];
            at = i;
        }
    }
    if (best != NULL) {
        for (int i = at; i + 1 < FKC_ARENA_IDLE_SLOTS; i++)
            fkc_idle[i] = fkc_idle[i + 1];
        fkc_idle[FKC_ARENA_IDLE_SLOTS - 1] = NULL;
    }
    pthread_mutex_unlock(&fkc_idle_lock);
    return best;
}

/* An arena of at least `want` bytes (a multiple of 64); *have: its size. */
static uint8_t *fkc_arena_take(size_t want, size_t *have)
{
    if (want >= FKC_ARENA_REUSE_MIN) {
        uint8_t *idle = fkc_idle_take(want);
        if (idle != NULL) {
            atomic_fetch_add(&fkc_arena_reuses, 1);
            *have = fkc_arena_size(idle);
            return idle;
        }
    }
    if (want > SIZE_MAX - FKC_ARENA_HEADER)
        return NULL;
    uint8_t *base = (uint8_t *)aligned_alloc(64, want + FKC_ARENA_HEADER); /* C11: a multiple of 64 */
    if (base == NULL)
        return NULL;
    memcpy(base, &want, sizeof want);
    *have = want;
    return base + FKC_ARENA_HEADER;
}

/* `arena` idle as the newest; the oldest ones freed while there are more
 * than FKC_ARENA_IDLE_SLOTS or more than FKC_ARENA_KEEP_MAX bytes idle. */
static void fkc_arena_give_back(uint8_t *arena)
{
    if (arena == NULL)
        return;
    size_t size = fkc_arena_size(arena);
    if (size < FKC_ARENA_REUSE_MIN || size > FKC_ARENA_KEEP_MAX) {
        fkc_arena_free(arena);
        return;
    }
    uint8_t *evicted[FKC_ARENA_IDLE_SLOTS];
    int nevicted = 0;
    pthread_mutex_lock(&fkc_idle_lock);
    int held = 0;
    size_t total = size;
    while (held < FKC_ARENA_IDLE_SLOTS && fkc_idle[held] != NULL)
        total += fkc_arena_size(fkc_idle[held++]);
    int drop = 0; /* the oldest `drop` go */
    while (drop < held && (held - drop + 1 > FKC_ARENA_IDLE_SLOTS || total > FKC_ARENA_KEEP_MAX)) {
        total -= fkc_arena_size(fkc_idle[drop]);
        evicted[nevicted++] = fkc_idle[drop++];
    }
    int kept = 0;
    for (int i = drop; i < held && kept < FKC_ARENA_IDLE_SLOTS - 1; i++) /* the bound: always, by the loop above */
        fkc_idle[kept++] = fkc_idle[i];
    fkc_idle[kept++] = arena;
    while (kept < FKC_ARENA_IDLE_SLOTS)
        fkc_idle[kept++] = NULL;
    pthread_mutex_unlock(&fkc_idle_lock);
    for (int i = 0; i < nevicted; i++)
        fkc_arena_free(evicted[i]);
}

/* Slot offsets for the capacities; 0 when the total does not fit size_t. */
static size_t fkc_layout(const fkc_caps *c, size_t at[FKC_R_COUNT])
{
    /* every capacity was bounded (fkc_next_cap) well below SIZE_MAX / 16 */
    const size_t sizes[FKC_R_COUNT] = {
        (c->rows + 1) * 4, (c->rows + 1) * 4, (c->rows + 1) * 4, c->rows * 8, c->rows * 8, c->rows * 4,
        fkc_bitmap_bytes(c->rows), fkc_bitmap_bytes(c->rows), fkc_bitmap_bytes(c->rows), fkc_bitmap_bytes(c->rows),
        (c->rows + 1) * 4, c->rows * 4, c->key, c->value, (c->headers + 1) * 4, (c->headers + 1) * 4,
        fkc_bitmap_bytes(c->headers), c->hkey, c->hvalue, c->views ? c->rows * 16 : 0, c->views ? c->rows * 16 : 0,
        c->share ? c->rows * 2 : 0,
    };
    size_t total = 0;
    for (int i = 0; i < FKC_R_COUNT; i++) {
        at[i] = total;
        size_t slot = fkc_slot(sizes[i]);
        if (slot > SIZE_MAX - total)
            return 0;
        total += slot;
    }
    return total;
}

static void fkc_caps_of(const fkc_arrow_builder *b, fkc_caps *c)
{
    c->rows = b->rows_cap;
    c->headers = b->headers_cap;
    c->key = b->key_data.cap;
    c->value = b->value_data.cap;
    c->hkey = b->hkey_data.cap;
    c->hvalue = b->hvalue_data.cap;
    c->views = b->zero_copy;
    c->share = b->share;
}

/* Move the builder onto a new arena with capacities *c (each >= what is
 * used). 0 when memory runs out (the builder is unchanged). */
static int fkc_regrow(fkc_arrow_builder *b, const fkc_caps *c)
{
    size_t at[FKC_R_COUNT];
    size_t total = fkc_layout(c, at);
    if (total == 0)
        return 0;
    size_t have = 0;
    uint8_t *arena = fkc_arena_take(total, &have);
    if (arena == NULL)
        return 0;
    fkc_caps spread;
    if (have / total >= 2) {
        /* A reused arena larger than asked for: spread the capacities over
         * it, so the builder does not move again soon. Every capacity grows
         * by a common factor (they grew with what was written, so their
         * proportions are the data's); the factor halves until the layout
         * fits. */
        for (size_t factor = have / total; factor >= 2; factor /= 2) {
            size_t at_spread[FKC_R_COUNT];
            spread = *c;
            spread.rows *= factor;
            spread.headers *= factor;
            spread.key *= factor;
            spread.value *= factor;
            spread.hkey *= factor;
            spread.hvalue *= factor;
            size_t spread_total = fkc_layout(&spread, at_spread);
            if (spread_total != 0 && spread_total <= have) {
                c = &spread;
                memcpy(at, at_spread, sizeof at);
                break;
            }
        }
    }
    size_t n = b->rows, h = b->headers;
#define FKC_MOVE(field, region, bytes)                                                                   \
    do {                                                                                                 \
        void *dst_ = arena + at[region];                                                                 \
        if (b->arena != NULL && (bytes) > 0)                                                             \
            memcpy(dst_, b->field, (bytes));                                                             \
        b->field = dst_;                                                                                 \
    } while (0)
    /* bitmaps: the defaults everywhere, then the used bytes over them */
    memset(arena + at[FKC_R_KEY_VALID], 0xFF, fkc_bitmap_bytes(c->rows));
    memset(arena + at[FKC_R_VALUE_VALID], 0xFF, fkc_bitmap_bytes(c->rows));
    memset(arena + at[FKC_R_TIMESTAMP_VALID], 0xFF, fkc_bitmap_bytes(c->rows));
    memset(arena + at[FKC_R_HEADERS_VALID], 0x00, fkc_bitmap_bytes(c->rows));
    memset(arena + at[FKC_R_HVALUE_VALID], 0xFF, fkc_bitmap_bytes(c->headers));
    if (b->arena == NULL) { /* a fresh builder: the offsets' leading 0 */
        ((int32_t *)(void *)(arena + at[FKC_R_KEY_OFFSETS]))[0] = 0;
        ((int32_t *)(void *)(arena + at[FKC_R_VALUE_OFFSETS]))[0] = 0;
        ((int32_t *)(void *)(arena + at[FKC_R_HEADERS_OFFSETS]))[0] = 0;
        ((int32_t *)(void *)(arena + at[FKC_R_HKEY_OFFSETS]))[0] = 0;
        ((int32_t *)(void *)(arena + at[FKC_R_HVALUE_OFFSETS]))[0] = 0;
    }
    FKC_MOVE(key_offsets, FKC_R_KEY_OFFSETS, (n + 1) * 4);
    FKC_MOVE(value_offsets, FKC_R_VALUE_OFFSETS, (n + 1) * 4);
    FKC_MOVE(headers_offsets, FKC_R_HEADERS_OFFSETS, (n + 1) * 4);
    FKC_MOVE(offset, FKC_R_OFFSET, n * 8);
    FKC_MOVE(timestamp, FKC_R_TIMESTAMP, n * 8);
    FKC_MOVE(timestamp_type, FKC_R_TIMESTAMP_TYPE, n * 4);
    FKC_MOVE(key_validity, FKC_R_KEY_VALID, fkc_bitmap_bytes(n));
    FKC_MOVE(value_validity, FKC_R_VALUE_VALID, fkc_bitmap_bytes(n));
    FKC_MOVE(timestamp_validity, FKC_R_TIMESTAMP_VALID, fkc_bitmap_bytes(n));
    FKC_MOVE(headers_validity, FKC_R_HEADERS_VALID, fkc_bitmap_bytes(n));
    FKC_MOVE(key_data.data, FKC_R_KEY_DATA, b->key_data.len);
    FKC_MOVE(value_data.data, FKC_R_VALUE_DATA, b->value_data.len);
    FKC_MOVE(hkey_offsets, FKC_R_HKEY_OFFSETS, (h + 1) * 4);
    FKC_MOVE(hvalue_offsets, FKC_R_HVALUE_OFFSETS, (h + 1) * 4);
    FKC_MOVE(hvalue_validity, FKC_R_HVALUE_VALID, fkc_bitmap_bytes(h));
    FKC_MOVE(hkey_data.data, FKC_R_HKEY_DATA, b->hkey_data.len);
    FKC_MOVE(hvalue_data.data, FKC_R_HVALUE_DATA, b->hvalue_data.len);
    FKC_MOVE(key_views, FKC_R_KEY_VIEWS, c->views ? n * 16 : 0);
    FKC_MOVE(value_views, FKC_R_VALUE_VIEWS, c->views ? n * 16 : 0);
    FKC_MOVE(delivery_count, FKC_R_DELIVERY_COUNT, c->share ? n * 2 : 0);
#undef FKC_MOVE
    b->topic_offsets = (int32_t *)(void *)(arena + at[FKC_R_TOPIC_OFFSETS]);
    b->partition = (int32_t *)(void *)(arena + at[FKC_R_PARTITION]);
    fkc_arena_give_back(b->arena);
    b->arena = arena;
    b->rows_cap = c->rows;
    b->headers_cap = c->headers;
    b->key_data.cap = c->key;
    b->value_data.cap = c->value;
    b->hkey_data.cap = c->hkey;
    b->hvalue_data.cap = c->hvalue;
    return 1;
}

/* Capacity for `want` given `cap`: doubling, at least `minimum`; 0 when
 * `want` is past what an Arrow column could ever hold (int32 offsets and
 * lengths), which also keeps fkc_layout's products far from overflow. */
static size_t fkc_next_cap(size_t cap, size_t want, size_t minimum)
{
    const size_t ceiling = (size_t)1 << 40;
    if (want > ceiling)
        return 0;
    size_t n = cap ? cap : minimum;
    while (n < want)
        n *= 2;
    return n < ceiling ? n : ceiling;
}

fkc_arrow_builder *fkc_builder_new(void)
{
    fkc_arrow_builder *b = (fkc_arrow_builder *)calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->region = -1;
    fkc_caps c = {0, 0, 0, 0, 0, 0, 0, 0};
    if (!fkc_regrow(b, &c)) {
        free(b);
        return NULL;
    }
    return b;
}

static void fkc_release_keeps(fkc_zc_keep *keeps, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        keeps[i].release(keeps[i].ctx, keeps[i].owner);
}

void fkc_builder_free(fkc_arrow_builder *b)
{
    if (b == NULL)
        return;
    fkc_release_keeps(b->keeps, 0, b->keep_count);
    free(b->keeps);
    free(b->buffers);
    fkc_arena_give_back(b->arena);
    free(b->segments);
    free(b->topics.data);
    free(b);
}

static uint64_t fkc_builder_topic_bytes(const fkc_arrow_builder *b)
{
    if (b->segment_count == 0)
        return 0;
    const fkc_builder_seg *s = &b->segments[b->segment_count - 1];
    return b->closed_topic_bytes + (uint64_t)(b->rows - s->row_start) * s->topic_len;
}

static size_t fkc_topic_len_now(const fkc_arrow_builder *b)
{
    return b->segment_count ? b->segments[b->segment_count - 1].topic_len : 0;
}

/* Grow a capacity so `more` fit after `used`; 0 on overflow. */
static int fkc_want(size_t *cap, size_t used, size_t more, size_t minimum)
{
    if (more <= *cap - used)
        return 1;
    if (used > SIZE_MAX / 2 - more)
        return 0;
    size_t n = fkc_next_cap(*cap, used + more, minimum);
    if (n == 0)
        return 0;
    *cap = n;
    return 1;
}

static int fkc_builder_reserve_caps(fkc_arrow_builder *b, size_t rows, size_t headers, size_t key, size_t value,
                                    size_t hkey, size_t hvalue)
{
    fkc_caps c;
    fkc_caps_of(b, &c);
    if (!fkc_want(&c.rows, b->rows, rows, 1024) || !fkc_want(&c.headers, b->headers, headers, 256) ||
        !fkc_want(&c.key, b->key_data.len, key, 4096) || !fkc_want(&c.value, b->value_data.len, value, 4096) ||
        !fkc_want(&c.hkey, b->hkey_data.len, hkey, 1024) || !fkc_want(&c.hvalue, b->hvalue_data.len, hvalue, 1024))
        return 0;
    if (c.rows == b->rows_cap && c.headers == b->headers_cap && c.key == b->key_data.cap &&
        c.value == b->value_data.cap && c.hkey == b->hkey_data.cap && c.hvalue == b->hvalue_data.cap)
        return 1;
    return fkc_regrow(b, &c);
}

int fkc_builder_grow_for(fkc_arrow_builder *b, const fkc_record *rec)
{
    size_t headers = 0, hkey = 0, hvalue = 0, key, value;
    if (rec->header_count > 0) {
        headers = (size_t)rec->header_count;
        hkey = (size_t)rec->header_key_bytes;
        hvalue = (size_t)((int64_t)rec->header_size - rec->header_key_bytes);
    }
    if (b->zero_copy) { /* views: only what they copy lands in value_data */
        key = 0;
        value = fkc_builder_view_copy(b, rec->key, rec->key_len) + fkc_builder_view_copy(b, rec->value, rec->value_len);
    } else {
        key = fkc_len_or_0(rec->key_len);
        value = fkc_len_or_0(rec->value_len);
    }
    return fkc_builder_reserve_caps(b, 1, headers, key, value, hkey, hvalue);
}

int fkc_builder_region(fkc_arrow_builder *b, const uint8_t *data, size_t len)
{
    if (len > (size_t)INT32_MAX || b->buffer_count >= (size_t)INT32_MAX - 1)
        return 0;
    if (b->buffer_count == b->buffer_cap) {
        fkc_zc_buffer *grown = (fkc_zc_buffer *)fkc_grow(b->buffers, &b->buffer_cap, b->buffer_count + 1,
                                                         sizeof *grown, 16);
        if (grown == NULL)
            return 0;
        b->buffers = grown;
    }
    b->buffers[b->buffer_count].data = data;
    b->buffers[b->buffer_count].len = (int64_t)len;
    b->buffer_count++;
    b->region = (int32_t)b->buffer_count; /* variadic index: buffer 0 is the builder's own */
    b->region_base = data;
    b->region_len = len;
    return 1;
}

int fkc_builder_keep(fkc_arrow_builder *b, void *owner, fkc_codec_release_fn release, void *ctx)
{
    if (b->keep_count == b->keep_cap) {
        fkc_zc_keep *grown = (fkc_zc_keep *)fkc_grow(b->keeps, &b->keep_cap, b->keep_count + 1, sizeof *grown, 16);
        if (grown == NULL)
            return 0;
        b->keeps = grown;
    }
    b->keeps[b->keep_count].owner = owner;
    b->keeps[b->keep_count].release = release;
    b->keeps[b->keep_count].ctx = ctx;
    b->keep_count++;
    return 1;
}

int fkc_builder_hint(fkc_arrow_builder *b, size_t rows, size_t bytes)
{
    return fkc_builder_reserve_caps(b, rows, 0, bytes, bytes, 0, 0);
}

int fkc_builder_batch_fits(const fkc_arrow_builder *b, uint64_t rows, uint64_t payload)
{
    const uint64_t *base = b->base;
    uint64_t all_rows = (uint64_t)b->rows + rows + base[0];
    size_t topic_len = fkc_topic_len_now(b);
    return all_rows <= FKC_I32_LIMIT && b->key_data.len + payload + base[1] <= FKC_I32_LIMIT &&
           b->value_data.len + payload + base[2] <= FKC_I32_LIMIT &&
           b->headers + payload / 2 + base[3] <= FKC_I32_LIMIT &&
           b->hkey_data.len + payload + base[4] <= FKC_I32_LIMIT &&
           b->hvalue_data.len + payload + base[5] <= FKC_I32_LIMIT &&
           (topic_len == 0 || rows <= (FKC_I32_LIMIT - fkc_builder_topic_bytes(b)) / topic_len);
}

size_t fkc_builder_room(const fkc_arrow_builder *b, const fkc_record *recs, size_t n)
{
    const uint64_t *base = b->base;
    uint64_t kb = b->key_data.len + base[1], vb = b->value_data.len + base[2], hc = b->headers + base[3];
    uint64_t hk = b->hkey_data.len + base[4], hv = b->hvalue_data.len + base[5];
    uint64_t topic = fkc_builder_topic_bytes(b);
    size_t topic_len = fkc_topic_len_now(b);
    size_t i = 0;
    for (; i < n; i++) {
        const fkc_record *rec = &recs[i];
        /* zero-copy: a descriptor's key and value are both copied into the
         * builder's own buffer, whose offsets are int32 too */
        if (b->zero_copy)
            vb += rec->key_len > 0 ? (uint64_t)rec->key_len : 0;
        else
            kb += rec->key_len > 0 ? (uint64_t)rec->key_len : 0;
        vb += rec->value_len > 0 ? (uint64_t)rec->value_len : 0;
        if (rec->header_count > 0) {
            hc += (uint64_t)rec->header_count;
            hk += (uint64_t)rec->header_key_bytes;
            hv += (uint64_t)((int64_t)rec->header_size - rec->header_key_bytes);
        }
        topic += topic_len;
        uint64_t rows = (uint64_t)b->rows + i + 1 + base[0];
        if (rows > FKC_I32_LIMIT || kb > FKC_I32_LIMIT || vb > FKC_I32_LIMIT || hc > FKC_I32_LIMIT ||
            hk > FKC_I32_LIMIT || hv > FKC_I32_LIMIT || topic > FKC_I32_LIMIT)
            break;
    }
    return i;
}

int fkc_builder_append_records(fkc_arrow_builder *b, const fkc_record *recs, size_t n)
{
    /* exactly what the records hold, column by column (zero-copy: a
     * descriptor's key and value are both copied into value_data) */
    size_t key = 0, value = 0, headers = 0, hkey = 0, hvalue = 0;
    for (size_t i = 0; i < n; i++) {
        const fkc_record *rec = &recs[i];
        if (b->zero_copy)
            value += fkc_len_or_0(rec->key_len);
        else
            key += fkc_len_or_0(rec->key_len);
        value += fkc_len_or_0(rec->value_len);
        if (rec->header_count > 0) {
            headers += (size_t)rec->header_count;
            hkey += (size_t)rec->header_key_bytes;
            hvalue += (size_t)((int64_t)rec->header_size - rec->header_key_bytes);
        }
    }
    if (!fkc_builder_reserve_caps(b, n, headers, key, value, hkey, hvalue))
        return 0;
    for (size_t i = 0; i < n; i++)
        fkc_builder_put(b, &recs[i]);
    return 1;
}

void fkc_builder_append_headers(fkc_arrow_builder *b, const fkc_record *rec)
{
    size_t i = b->rows;
    b->headers_validity[i >> 3] = (uint8_t)(b->headers_validity[i >> 3] | (1u << (i & 7)));
    fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
    const uint8_t *k, *v;
    int32_t kl, vl;
    while (fkc_header_next(&it, &k, &kl, &v, &vl)) {
        size_t h = b->headers;
        memcpy(b->hkey_data.data + b->hkey_data.len, k, (size_t)kl);
        b->hkey_data.len += (size_t)kl;
        b->hkey_offsets[h + 1] = (int32_t)b->hkey_data.len;
        if (vl >= 0) {
            memcpy(b->hvalue_data.data + b->hvalue_data.len, v, (size_t)vl);
            b->hvalue_data.len += (size_t)vl;
        } else {
            fkc_builder_bit_clear(b->hvalue_validity, h);
            b->hvalue_nulls++;
        }
        b->hvalue_offsets[h + 1] = (int32_t)b->hvalue_data.len;
        b->headers = h + 1;
    }
}

void fkc_builder_mark_at(const fkc_arrow_builder *b, fkc_builder_mark *m)
{
    m->rows = b->rows;
    m->key_len = b->key_data.len;
    m->value_len = b->value_data.len;
    m->headers = b->headers;
    m->hkey_len = b->hkey_data.len;
    m->hvalue_len = b->hvalue_data.len;
    m->buffer_count = b->buffer_count;
    m->keep_count = b->keep_count;
    m->key_nulls = b->key_nulls;
    m->value_nulls = b->value_nulls;
    m->timestamp_nulls = b->timestamp_nulls;
    m->headers_nulls = b->headers_nulls;
    m->hvalue_nulls = b->hvalue_nulls;
}

static void fkc_bits_reset(uint8_t *bitmap, size_t from, size_t to, int value)
{
    for (size_t i = from; i < to; i++) {
        if (value)
            bitmap[i >> 3] = (uint8_t)(bitmap[i >> 3] | (1u << (i & 7)));
        else
            fkc_builder_bit_clear(bitmap, i);
    }
}

void fkc_builder_rollback(fkc_arrow_builder *b, const fkc_builder_mark *m)
{
    /* bits past `rows` go back to their defaults (the invariant appends rely on) */
    fkc_bits_reset(b->key_validity, m->rows, b->rows, 1);
    fkc_bits_reset(b->value_validity, m->rows, b->rows, 1);
    fkc_bits_reset(b->timestamp_validity, m->rows, b->rows, 1);
    fkc_bits_reset(b->headers_validity, m->rows, b->rows, 0);
    fkc_bits_reset(b->hvalue_validity, m->headers, b->headers, 1);
    b->rows = m->rows;
    b->key_data.len = m->key_len;
    b->value_data.len = m->value_len;
    b->headers = m->headers;
    b->hkey_data.len = m->hkey_len;
    b->hvalue_data.len = m->hvalue_len;
    b->buffer_count = m->buffer_count;
    fkc_release_keeps(b->keeps, m->keep_count, b->keep_count);
    b->keep_count = m->keep_count;
    b->region = -1;
    b->key_nulls = m->key_nulls;
    b->value_nulls = m->value_nulls;
    b->timestamp_nulls = m->timestamp_nulls;
    b->headers_nulls = m->headers_nulls;
    b->hvalue_nulls = m->hvalue_nulls;
}

void fkc_builder_totals(const fkc_arrow_builder *b, uint64_t out[6])
{
    out[0] = b->rows;
    out[1] = b->key_data.len;
    out[2] = b->value_data.len;
    out[3] = b->headers;
    out[4] = b->hkey_data.len;
    out[5] = b->hvalue_data.len;
}

int fkc_builder_segment(fkc_arrow_builder *b, const uint8_t *topic, size_t topic_len, int32_t partition)
{
    if (b->segment_count) {
        fkc_builder_seg *last = &b->segments[b->segment_count - 1];
        if (last->partition == partition && last->topic_len == topic_len &&
            memcmp(b->topics.data + last->topic_at, topic, topic_len) == 0)
            return 1;
        if (last->row_start == b->rows) { /* empty: replace it */
            b->segment_count--;
            b->topics.len = last->topic_at;
        }
    }
    if (b->segment_count == b->segment_cap) {
        fkc_builder_seg *grown = (fkc_builder_seg *)fkc_grow(b->segments, &b->segment_cap, b->segment_count + 1,
                                                             sizeof *grown, 8);
        if (grown == NULL)
            return 0;
        b->segments = grown;
    }
    if (topic_len > b->topics.cap - b->topics.len) {
        size_t cap = fkc_next_cap(b->topics.cap, b->topics.len + topic_len, 256);
        uint8_t *grown = cap ? (uint8_t *)realloc(b->topics.data, cap) : NULL;
        if (grown == NULL)
            return 0;
        b->topics.data = grown;
        b->topics.cap = cap;
    }
    b->closed_topic_bytes = fkc_builder_topic_bytes(b);
    fkc_builder_seg *s = &b->segments[b->segment_count++];
    s->row_start = b->rows;
    s->topic_at = b->topics.len;
    s->topic_len = topic_len;
    s->partition = partition;
    if (topic_len)
        memcpy(b->topics.data + b->topics.len, topic, topic_len);
    b->topics.len += topic_len;
    return 1;
}

/* ---- export ------------------------------------------------------------ */

enum {
    FKC_BNODE_BATCH,
    FKC_BNODE_KEY,
    FKC_BNODE_VALUE,
    FKC_BNODE_TOPIC,
    FKC_BNODE_PARTITION,
    FKC_BNODE_OFFSET,
    FKC_BNODE_TIMESTAMP,
    FKC_BNODE_TIMESTAMP_TYPE,
    FKC_BNODE_HEADERS,
    FKC_BNODE_HEADER_STRUCT,
    FKC_BNODE_HEADER_KEY,
    FKC_BNODE_HEADER_VALUE,
    FKC_BNODE_DELIVERY_COUNT, /* share decodes only: the batch's ninth child */
    FKC_BNODE_COUNT
};

enum { FKC_OWNED_MAX = 2 }; /* the arena and the topic bytes */

typedef struct fkc_builder_export_data {
    size_t refs;               /* nodes not yet released */
    void *owned[FKC_OWNED_MAX]; /* every buffer, freed with the last node */
    size_t owned_count;
    struct ArrowArray nodes[FKC_BNODE_COUNT];
    struct ArrowArray *batch_children[9];
    struct ArrowArray *headers_child[1];
    struct ArrowArray *struct_children[2];
    const void *buffers[FKC_BNODE_COUNT][3];
    /* zero-copy: the key and value nodes' buffer lists (validity, views,
     * the variadic buffers, their sizes) and what keeps the regions alive */
    const void **view_buffers;
    int64_t *variadic_sizes;
    fkc_zc_keep *keeps;
    size_t keep_count;
} fkc_builder_export_data;

static void fkc_builder_node_release(struct ArrowArray *node)
{
    if (node == NULL || node->release == NULL)
        return;
    /* children still in place go with their parent; a moved child was
     * marked released by whoever moved it */
    for (int64_t i = 0; i < node->n_children; i++) {
        struct ArrowArray *child = node->children[i];
        if (child->release != NULL)
            child->release(child);
    }
    fkc_builder_export_data *data = (fkc_builder_export_data *)node->private_data;
    node->release = NULL;
    if (--data->refs == 0) {
        /* owned[0] is the builder's arena (kept for the next batch), the rest plain blocks */
        fkc_arena_give_back((uint8_t *)data->owned[0]);
        for (size_t i = 1; i < data->owned_count; i++)
            free(data->owned[i]);
        /* may run on any thread, without the GIL: a Python owner's release
         * takes the GIL itself (the codec host's release is `with gil`) */
        fkc_release_keeps(data->keeps, 0, data->keep_count);
        free(data->keeps);
        free(data->view_buffers);
        free(data->variadic_sizes);
        free(data);
    }
}

static void fkc_builder_node(fkc_builder_export_data *data, int index, int64_t length, int64_t null_count,
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
    node->release = fkc_builder_node_release;
    node->private_data = data;
}

/* Bits past n in the last byte: zero, so exported bitmaps are deterministic. */
static void fkc_bitmap_trim(uint8_t *bitmap, size_t n)
{
    if (bitmap != NULL && n % 8)
        bitmap[n / 8] = (uint8_t)(bitmap[n / 8] & ((1u << (n % 8)) - 1u));
}

int fkc_builder_export(fkc_arrow_builder *b, struct ArrowArray *out)
{
    size_t n = b->rows, h = b->headers;
    uint64_t topic_total = fkc_builder_topic_bytes(b);
    /* Everything that can fail comes first, so a failure leaves the builder
     * as it was: the export's bookkeeping, the topic bytes, and the empty
     * arena the builder continues with. */
    fkc_builder_export_data *data = (fkc_builder_export_data *)calloc(1, sizeof *data);
    uint8_t *topic_data = (uint8_t *)aligned_alloc(64, fkc_slot((size_t)topic_total));
    size_t nvar = 1 + b->buffer_count; /* the builder's own buffer, then the regions */
    const void **view_buffers = NULL;
    int64_t *variadic_sizes = NULL;
    if (b->zero_copy) {
        view_buffers = (const void **)malloc(2 * (nvar + 3) * sizeof(void *));
        variadic_sizes = (int64_t *)malloc(nvar * sizeof(int64_t));
    }
    fkc_arrow_builder fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.zero_copy = b->zero_copy;
    fresh.share = b->share;
    fresh.region = -1;
    fkc_caps none = {0, 0, 0, 0, 0, 0, b->zero_copy, b->share};
    if (data == NULL || topic_data == NULL || (b->zero_copy && (view_buffers == NULL || variadic_sizes == NULL)) ||
        !fkc_regrow(&fresh, &none)) {
        free(data);
        free(topic_data);
        free(view_buffers);
        free(variadic_sizes);
        return 0;
    }
    /* Topic and partition from the segments (the arena has room for both,
     * sized with the rows): a segment's topic bytes are copied once, then
     * the filled prefix doubled. Rows before the first segment (none: every
     * step opens one before it appends) would get "" and partition 0. */
    int32_t *topic_offsets = b->topic_offsets, *partition = b->partition;
    topic_offsets[0] = 0;
    size_t first = b->segment_count ? b->segments[0].row_start : n;
    for (size_t r = 0; r < first; r++) {
        partition[r] = 0;
        topic_offsets[r + 1] = 0;
    }
    size_t tpos = 0;
    for (size_t s = 0; s < b->segment_count; s++) {
        const fkc_builder_seg *seg = &b->segments[s];
        size_t end = s + 1 < b->segment_count ? b->segments[s + 1].row_start : n;
        size_t len = seg->topic_len, start_pos = tpos, total = (end - seg->row_start) * len;
        for (size_t r = seg->row_start; r < end; r++) {
            partition[r] = seg->partition;
            tpos += len;
            topic_offsets[r + 1] = (int32_t)tpos;
        }
        if (total) {
            uint8_t *dst = topic_data + start_pos;
            memcpy(dst, b->topics.data + seg->topic_at, len);
            size_t filled = len;
            while (filled < total) {
                size_t chunk = filled <= total - filled ? filled : total - filled;
                memcpy(dst + filled, dst, chunk);
                filled += chunk;
            }
        }
    }
    fkc_bitmap_trim(b->key_validity, n);
    fkc_bitmap_trim(b->value_validity, n);
    fkc_bitmap_trim(b->timestamp_validity, n);
    fkc_bitmap_trim(b->headers_validity, n);
    fkc_bitmap_trim(b->hvalue_validity, h);

    const void *(*buf)[3] = data->buffers;
    buf[FKC_BNODE_BATCH][0] = NULL;
    buf[FKC_BNODE_KEY][0] = b->key_nulls ? b->key_validity : NULL;
    buf[FKC_BNODE_KEY][1] = b->key_offsets;
    buf[FKC_BNODE_KEY][2] = b->key_data.data;
    buf[FKC_BNODE_VALUE][0] = b->value_nulls ? b->value_validity : NULL;
    buf[FKC_BNODE_VALUE][1] = b->value_offsets;
    buf[FKC_BNODE_VALUE][2] = b->value_data.data;
    buf[FKC_BNODE_TOPIC][0] = NULL;
    buf[FKC_BNODE_TOPIC][1] = topic_offsets;
    buf[FKC_BNODE_TOPIC][2] = topic_data;
    buf[FKC_BNODE_PARTITION][0] = NULL;
    buf[FKC_BNODE_PARTITION][1] = partition;
    buf[FKC_BNODE_OFFSET][0] = NULL;
    buf[FKC_BNODE_OFFSET][1] = b->offset;
    buf[FKC_BNODE_TIMESTAMP][0] = b->timestamp_nulls ? b->timestamp_validity : NULL;
    buf[FKC_BNODE_TIMESTAMP][1] = b->timestamp;
    buf[FKC_BNODE_TIMESTAMP_TYPE][0] = NULL;
    buf[FKC_BNODE_TIMESTAMP_TYPE][1] = b->timestamp_type;
    buf[FKC_BNODE_HEADERS][0] = b->headers_nulls ? b->headers_validity : NULL;
    buf[FKC_BNODE_HEADERS][1] = b->headers_offsets;
    buf[FKC_BNODE_HEADER_STRUCT][0] = NULL;
    buf[FKC_BNODE_HEADER_KEY][0] = NULL;
    buf[FKC_BNODE_HEADER_KEY][1] = b->hkey_offsets;
    buf[FKC_BNODE_HEADER_KEY][2] = b->hkey_data.data;
    buf[FKC_BNODE_HEADER_VALUE][0] = b->hvalue_nulls ? b->hvalue_validity : NULL;
    buf[FKC_BNODE_HEADER_VALUE][1] = b->hvalue_offsets;
    buf[FKC_BNODE_HEADER_VALUE][2] = b->hvalue_data.data;
    buf[FKC_BNODE_DELIVERY_COUNT][0] = NULL;
    buf[FKC_BNODE_DELIVERY_COUNT][1] = b->delivery_count;
    data->owned[0] = b->arena;
    data->owned[1] = topic_data;
    data->owned_count = 2;
    int64_t key_buffers = 3, value_buffers = 3;
    if (b->zero_copy) {
        /* binary_view ("vz"): validity, views, variadic buffers, their sizes */
        variadic_sizes[0] = (int64_t)b->value_data.len;
        for (size_t i = 0; i < b->buffer_count; i++)
            variadic_sizes[i + 1] = b->buffers[i].len;
        for (int side = 0; side < 2; side++) {
            const void **list = view_buffers + (size_t)side * (nvar + 3);
            list[0] = side == 0 ? buf[FKC_BNODE_KEY][0] : buf[FKC_BNODE_VALUE][0];
            list[1] = side == 0 ? b->key_views : b->value_views;
            list[2] = b->value_data.data;
            for (size_t i = 0; i < b->buffer_count; i++)
                list[3 + i] = b->buffers[i].data;
            list[2 + nvar] = variadic_sizes;
        }
        key_buffers = value_buffers = (int64_t)(nvar + 3);
        data->view_buffers = view_buffers;
        data->variadic_sizes = variadic_sizes;
        data->keeps = b->keeps;
        data->keep_count = b->keep_count;
    }

    for (int i = 0; i < 8; i++)
        data->batch_children[i] = &data->nodes[FKC_BNODE_KEY + i];
    data->batch_children[8] = &data->nodes[FKC_BNODE_DELIVERY_COUNT];
    data->headers_child[0] = &data->nodes[FKC_BNODE_HEADER_STRUCT];
    data->struct_children[0] = &data->nodes[FKC_BNODE_HEADER_KEY];
    data->struct_children[1] = &data->nodes[FKC_BNODE_HEADER_VALUE];
    int64_t len = (int64_t)n, hlen = (int64_t)h;
    fkc_builder_node(data, FKC_BNODE_BATCH, len, 0, 1, b->share ? 9 : 8, data->batch_children);
    fkc_builder_node(data, FKC_BNODE_KEY, len, b->key_nulls, key_buffers, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_VALUE, len, b->value_nulls, value_buffers, 0, NULL);
    if (b->zero_copy) {
        data->nodes[FKC_BNODE_KEY].buffers = view_buffers;
        data->nodes[FKC_BNODE_VALUE].buffers = view_buffers + (nvar + 3);
    }
    fkc_builder_node(data, FKC_BNODE_TOPIC, len, 0, 3, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_PARTITION, len, 0, 2, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_OFFSET, len, 0, 2, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_TIMESTAMP, len, b->timestamp_nulls, 2, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_TIMESTAMP_TYPE, len, 0, 2, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_HEADERS, len, b->headers_nulls, 2, 1, data->headers_child);
    fkc_builder_node(data, FKC_BNODE_HEADER_STRUCT, hlen, 0, 1, 2, data->struct_children);
    fkc_builder_node(data, FKC_BNODE_HEADER_KEY, hlen, 0, 3, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_HEADER_VALUE, hlen, b->hvalue_nulls, 3, 0, NULL);
    fkc_builder_node(data, FKC_BNODE_DELIVERY_COUNT, len, 0, 2, 0, NULL);
    data->refs = FKC_BNODE_COUNT;
    if (!b->share) { /* not a child: never released through the batch */
        data->nodes[FKC_BNODE_DELIVERY_COUNT].release = NULL;
        data->refs--;
    }
    *out = data->nodes[FKC_BNODE_BATCH];
    data->nodes[FKC_BNODE_BATCH].release = NULL;

    /* The builder continues empty on the fresh arena; its base and its
     * segment store stay (segments emptied). */
    if (b->zero_copy) { /* the regions' keep-alives went with the export */
        fresh.buffers = b->buffers;
        fresh.buffer_cap = b->buffer_cap;
    } else {
        fresh.buffers = b->buffers;
        fresh.buffer_cap = b->buffer_cap;
        fresh.keeps = b->keeps;
        fresh.keep_cap = b->keep_cap;
    }
    fresh.segments = b->segments;
    fresh.segment_cap = b->segment_cap;
    fresh.topics = b->topics;
    fresh.topics.len = 0;
    memcpy(fresh.base, b->base, sizeof fresh.base);
    *b = fresh;
    return 1;
}
