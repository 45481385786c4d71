/*
 * arrow_walk.h — a fuzz oracle for exported Arrow arrays: walks an
 * ArrowArray with its ArrowSchema as a consumer (pyarrow's import) would
 * read them, and traps on anything that would make that consumer read out
 * of bounds or see an inconsistent array. Shared by the targets whose sinks
 * export through csrc/fkc_typed_columns.c (fuzz_avro.c, fuzz_protobuf.c).
 *
 * Checked per node, from the format string alone (independent of the plan
 * that built it): the buffer count of the layout; buffers present when
 * they have rows; offset 0 (the builder never slices); null_count equal to
 * the validity bitmap's zero bits, and 0 for a non-nullable field; every
 * value byte read (so the sanitizers see a buffer too short); offsets
 * starting at 0 and never decreasing, their end inside the child (lists,
 * maps) or read whole (binary, utf8); utf8 rows valid; a struct's children
 * each exactly as long as it; a map's child a two-field struct without
 * nulls in its keys; dictionary indices inside the dictionary; a dense
 * union's type codes (from "+ud:...") distinct, one per child, in int8's
 * range, no validity buffer (C data interface: type ids and offsets only),
 * every row's type id one of them and its offset inside that child, each
 * child's offsets increasing (a child row belongs to one union row).
 *
 * aw_row_digest() hashes one row's value (after aw_walk has passed the
 * array): what a consumer reads of it, not where the buffers put it, so a
 * row built in one batch and the same row built in another digest alike.
 */
#ifndef FKC_ARROW_WALK_H
#define FKC_ARROW_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_arrow_abi.h"
#include "fkc_records.h" /* fkc_utf8_valid */

#ifndef CHECK
#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if (!(x))                                                                                                      \
            __builtin_trap();                                                                                          \
    } while (0)
#endif

#define AW_FLAG_NULLABLE 2 /* ARROW_FLAG_NULLABLE */

/* every byte read lands here, so the loads cannot be optimized away */
static volatile uint64_t aw_sink;

static void aw_touch(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += b[i];
    aw_sink += sum;
}

static int aw_valid(const struct ArrowArray *a, int64_t i)
{
    const uint8_t *v = a->buffers[0];
    return v == NULL || (v[i >> 3] >> (i & 7)) & 1;
}

/* Bytes per row of a fixed-width format, 0 for the others. */
static size_t aw_width(const char *f)
{
    if (f[0] == 'w' && f[1] == ':')
        return (size_t)strtoul(f + 2, NULL, 10);
    if (f[0] == 'd' && f[1] == ':') {
        const char *bits = strrchr(f, ',');
        const char *first = strchr(f, ',');
        return bits != first && strcmp(bits + 1, "256") == 0 ? 32 : 16;
    }
    if (strcmp(f, "c") == 0 || strcmp(f, "C") == 0)
        return 1;
    if (strcmp(f, "s") == 0 || strcmp(f, "S") == 0 || strcmp(f, "e") == 0)
        return 2;
    if (strcmp(f, "i") == 0 || strcmp(f, "I") == 0 || strcmp(f, "f") == 0 || strcmp(f, "tdD") == 0 ||
        strcmp(f, "tts") == 0 || strcmp(f, "ttm") == 0)
        return 4;
    if (strcmp(f, "l") == 0 || strcmp(f, "L") == 0 || strcmp(f, "g") == 0 || strcmp(f, "tdm") == 0 ||
        strcmp(f, "ttu") == 0 || strcmp(f, "ttn") == 0 || (f[0] == 't' && (f[1] == 's' || f[1] == 'D')))
        return 8;
    return 0;
}

/* Offsets of `a` (n + 1 int32s): from 0, never decreasing; returns the end. */
static int32_t aw_offsets(const struct ArrowArray *a)
{
    const int32_t *o = a->buffers[1];
    CHECK(o != NULL);
    CHECK(o[0] == 0);
    for (int64_t i = 0; i < a->length; i++)
        CHECK(o[i + 1] >= o[i]);
    return o[a->length];
}

static void aw_walk(const struct ArrowArray *a, const struct ArrowSchema *s, int depth);

/* A dense union ("+ud:<codes>"): see the contract above. */
static void aw_dense_union(const struct ArrowArray *a, const struct ArrowSchema *s, int depth)
{
    int64_t n = a->length, kids = a->n_children;
    int child_of[128]; /* type code -> child index, -1: not a code */
    int64_t last[128]; /* per child: the offset of its latest row */
    for (int i = 0; i < 128; i++)
        child_of[i] = -1;
    CHECK(kids >= 1 && kids <= 128 && a->n_buffers == 2 && a->null_count == 0 && a->dictionary == NULL);
    const char *p = s->format + 4;
    for (int64_t k = 0; k < kids; k++) {
        char *end = NULL;
        long code = strtol(p, &end, 10);
        CHECK(end != p && code >= 0 && code <= 127 && child_of[code] == -1);
        CHECK(*end == (k + 1 == kids ? '\0' : ','));
        child_of[code] = (int)k;
        last[k] = -1;
        p = end + 1;
    }
    const int8_t *types = a->buffers[0];
    const int32_t *offsets = a->buffers[1];
    CHECK(n == 0 || (types != NULL && offsets != NULL));
    for (int64_t i = 0; i < n; i++) {
        CHECK(types[i] >= 0 && child_of[types[i]] >= 0);
        int k = child_of[types[i]];
        CHECK(a->children[k] != NULL && offsets[i] > last[k] && offsets[i] < a->children[k]->length);
        last[k] = offsets[i];
    }
    for (int64_t k = 0; k < kids; k++)
        aw_walk(a->children[k], s->children[k], depth + 1);
}

static void aw_walk(const struct ArrowArray *a, const struct ArrowSchema *s, int depth)
{
    CHECK(depth <= 5000);
    CHECK(a != NULL && s != NULL && a->release != NULL && s->release != NULL);
    CHECK(s->format != NULL && s->name != NULL);
    CHECK(a->length >= 0 && a->offset == 0 && a->n_children == s->n_children && a->n_children >= 0);
    CHECK(a->n_children == 0 || (a->children != NULL && s->children != NULL));
    CHECK((a->dictionary == NULL) == (s->dictionary == NULL));
    const char *f = s->format;
    int64_t n = a->length;
    /* validity: the bitmap's zero bits are the null count */
    if (strcmp(f, "n") == 0) {
        CHECK(a->n_buffers == 0 && a->null_count == n);
        return;
    }
    if (strncmp(f, "+ud:", 4) == 0) { /* no validity: its buffers are type ids and offsets */
        aw_dense_union(a, s, depth);
        return;
    }
    CHECK(a->n_buffers >= 1 && a->buffers != NULL);
    if (a->buffers[0] == NULL) {
        CHECK(a->null_count == 0);
    } else {
        int64_t zeros = 0;
        for (int64_t i = 0; i < n; i++)
            zeros += !aw_valid(a, i);
        CHECK(a->null_count == zeros);
    }
    if (!(s->flags & AW_FLAG_NULLABLE))
        CHECK(a->null_count == 0);
    size_t width = aw_width(f);
    if (strcmp(f, "+s") == 0) {
        CHECK(a->n_buffers == 1);
        for (int64_t i = 0; i < a->n_children; i++) {
            CHECK(a->children[i] != NULL && a->children[i]->length == n);
            aw_walk(a->children[i], s->children[i], depth + 1);
        }
    } else if (strcmp(f, "+l") == 0 || strcmp(f, "+m") == 0) {
        CHECK(a->n_buffers == 2 && a->n_children == 1 && a->children[0] != NULL);
        int32_t end = aw_offsets(a);
        CHECK(end <= a->children[0]->length);
        if (f[1] == 'm') {
            const struct ArrowSchema *es = s->children[0];
            CHECK(strcmp(es->format, "+s") == 0 && es->n_children == 2 && !(es->flags & AW_FLAG_NULLABLE));
            CHECK(!(es->children[0]->flags & AW_FLAG_NULLABLE));
        }
        aw_walk(a->children[0], s->children[0], depth + 1);
    } else if (strcmp(f, "u") == 0 || strcmp(f, "z") == 0) {
        CHECK(a->n_buffers == 3 && a->n_children == 0);
        int32_t end = aw_offsets(a);
        const uint8_t *data = a->buffers[2];
        CHECK(end == 0 || data != NULL);
        aw_touch(data, (size_t)end);
        const int32_t *o = a->buffers[1];
        if (f[0] == 'u')
            for (int64_t i = 0; i < n; i++)
                if (aw_valid(a, i))
                    CHECK(fkc_utf8_valid(data + o[i], (size_t)(o[i + 1] - o[i])));
    } else if (strcmp(f, "b") == 0) {
        CHECK(a->n_buffers == 2 && a->n_children == 0);
        CHECK(n == 0 || a->buffers[1] != NULL);
        aw_touch(a->buffers[1], ((size_t)n + 7) / 8);
    } else {
        CHECK(width > 0 || f[0] == 'w'); /* no format the sinks do not write */
        CHECK(a->n_buffers == 2 && a->n_children == 0);
        CHECK(n == 0 || width == 0 || a->buffers[1] != NULL);
        aw_touch(a->buffers[1], (size_t)n * width);
    }
    if (a->dictionary != NULL) {
        CHECK(strcmp(f, "i") == 0);
        aw_walk(a->dictionary, s->dictionary, depth + 1);
        const int32_t *idx = a->buffers[1];
        for (int64_t i = 0; i < n; i++)
            if (aw_valid(a, i))
                CHECK(idx[i] >= 0 && idx[i] < a->dictionary->length);
    }
}

/* FNV-1a over n bytes, continuing from h */
static uint64_t aw_mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t aw_mix_int(uint64_t h, int64_t v)
{
    return aw_mix(h, &v, sizeof v);
}

/* Row `row` of an array aw_walk() passed, as a hash: a null, a length and
 * the items of a list or map, every child of a struct, a dictionary's value
 * (not its index), a union's type code and child row, the bytes of the
 * rest. Offsets themselves never enter it (they depend on the rows before). */
static uint64_t aw_row_digest(const struct ArrowArray *a, const struct ArrowSchema *s, int64_t row)
{
    const char *f = s->format;
    uint64_t h = aw_mix(UINT64_C(0xcbf29ce484222325), f, strlen(f));
    CHECK(row >= 0 && row < a->length);
    if (strcmp(f, "n") == 0)
        return aw_mix_int(h, -1);
    if (strncmp(f, "+ud:", 4) == 0) {
        int8_t type = ((const int8_t *)a->buffers[0])[row];
        int32_t at = ((const int32_t *)a->buffers[1])[row];
        const char *p = f + 4;
        for (int64_t k = 0; k < a->n_children; k++) {
            char *end;
            if (strtol(p, &end, 10) == type)
                return aw_mix_int(aw_mix_int(h, type), (int64_t)aw_row_digest(a->children[k], s->children[k], at));
            p = end + 1;
        }
        CHECK(0); /* aw_walk proved every type id a child's */
        return h;
    }
    if (!aw_valid(a, row))
        return aw_mix_int(h, -1);
    if (strcmp(f, "+s") == 0) {
        for (int64_t k = 0; k < a->n_children; k++)
            h = aw_mix_int(h, (int64_t)aw_row_digest(a->children[k], s->children[k], row));
        return h;
    }
    if (strcmp(f, "+l") == 0 || strcmp(f, "+m") == 0) {
        const int32_t *o = a->buffers[1];
        h = aw_mix_int(h, o[row + 1] - o[row]);
        for (int32_t i = o[row]; i < o[row + 1]; i++)
            h = aw_mix_int(h, (int64_t)aw_row_digest(a->children[0], s->children[0], i));
        return h;
    }
    if (strcmp(f, "u") == 0 || strcmp(f, "z") == 0) {
        const int32_t *o = a->buffers[1];
        h = aw_mix_int(h, o[row + 1] - o[row]);
        if (o[row + 1] == o[row])
            return h; /* the data buffer may be NULL: no offset applied to it */
        return aw_mix(h, (const uint8_t *)a->buffers[2] + o[row], (size_t)(o[row + 1] - o[row]));
    }
    if (strcmp(f, "b") == 0)
        return aw_mix_int(h, ((const uint8_t *)a->buffers[1])[row >> 3] >> (row & 7) & 1);
    if (a->dictionary != NULL)
        return aw_mix_int(h, (int64_t)aw_row_digest(a->dictionary, s->dictionary,
                                                    ((const int32_t *)a->buffers[1])[row]));
    size_t width = aw_width(f);
    return aw_mix(h, (const uint8_t *)a->buffers[1] + (size_t)row * width, width);
}

/* Release an exported array and schema, a child of each moved out first (as
 * a consumer may), released before or after its parent as `order` says:
 * each node frees its own part and the last one the rest (the leak checker
 * of `make fuzz` sees what is left). */
static void aw_release(struct ArrowArray *a, struct ArrowSchema *s, unsigned order)
{
    struct ArrowArray moved;
    struct ArrowSchema moved_schema;
    int have = a->n_children > 0, have_schema = s->n_children > 0;
    if (have) {
        int64_t k = (int64_t)(order >> 2) % a->n_children;
        moved = *a->children[k];
        a->children[k]->release = NULL; /* moved: the parent must leave it alone */
    }
    if (have_schema) {
        int64_t k = (int64_t)(order >> 5) % s->n_children;
        moved_schema = *s->children[k];
        s->children[k]->release = NULL;
    }
    if (have && (order & 1)) {
        moved.release(&moved);
        CHECK(moved.release == NULL);
    }
    if (order & 2) {
        s->release(s);
        a->release(a);
    } else {
        a->release(a);
        s->release(s);
    }
    CHECK(a->release == NULL && s->release == NULL);
    if (have && !(order & 1)) {
        moved.release(&moved);
        CHECK(moved.release == NULL);
    }
    if (have_schema) {
        moved_schema.release(&moved_schema);
        CHECK(moved_schema.release == NULL);
    }
}

#endif /* FKC_ARROW_WALK_H */
