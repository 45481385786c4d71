/* fkc_json_arrow.c — JSON payloads parsed into typed Arrow columns in one
 * pass; see fkc_json_arrow.h. The columns (growth, limits, export) are
 * fkc_typed_columns.c's; this file is the parser and the plan walk.
 *
 * Written by hand, not with a JSON library: the point is to write each
 * value straight into its column as it is read (no DOM, no Python object),
 * and to decline exactly where Python's reading would differ. */
#define _GNU_SOURCE /* strtod_l, newlocale */
#include "fkc_json_arrow.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_grow.h"
#include "fkc_records.h" /* fkc_utf8_valid */

/* Column words, short */
enum { C_LAYOUT = FKC_TC_C_LAYOUT, C_FIRST = FKC_TC_C_FIRST, C_COUNT = FKC_TC_C_COUNT, C_P0 = FKC_TC_C_P0,
       C_P1 = FKC_TC_C_P1, C_P2 = FKC_TC_C_P2 };
/* Step words */
enum { S_KIND, S_COLUMN, S_N, S_FLAGS, S_LO, S_HI };
#define PROP_WIDTH 4 /* a struct's property: name offset, name length, step, required */

static fkc_tc_tree ja_tree(const fkc_ja_plan *p)
{
    fkc_tc_tree t = {p->columns, p->column_count, p->strings, p->strings_len};
    return t;
}

/* ------------------------------------------------------------------------ */
/* Plan check. */

typedef struct ja_checker {
    const fkc_ja_plan *p;
    fkc_tc_tree tree;
    uint8_t *seen; /* per step word: a step already walked */
} ja_checker;

/* The column layout each scalar kind is written into. */
static int64_t ja_layout_of(int64_t kind)
{
    switch (kind) {
    case FKC_JA_NULL:
        return FKC_TC_NULL;
    case FKC_JA_BOOL:
        return FKC_TC_BOOL;
    case FKC_JA_INT:
        return FKC_TC_INT64;
    case FKC_JA_FLOAT:
        return FKC_TC_FLOAT64;
    case FKC_JA_STRING:
        return FKC_TC_UTF8;
    case FKC_JA_ENUM:
        return FKC_TC_DICT;
    case FKC_JA_STRUCT:
        return FKC_TC_STRUCT;
    case FKC_JA_LIST:
        return FKC_TC_LIST;
    case FKC_JA_MAP:
        return FKC_TC_MAP;
    default:
        return -1;
    }
}

static int ja_check_step(ja_checker *k, int64_t sid, int64_t column, int depth)
{
    const fkc_ja_plan *p = k->p;
    if (depth > FKC_TC_MAX_DEPTH || sid < 0 || (uint64_t)sid >= p->steps_len)
        return 0;
    size_t left = p->steps_len - (size_t)sid;
    const int64_t *s = p->steps + sid;
    if (left < FKC_JA_STEP_HEAD || k->seen[sid])
        return 0;
    k->seen[sid] = 1;
    int64_t kind = s[S_KIND], n = s[S_N];
    if (s[S_COLUMN] != column || n < 0 || (uint64_t)n > left - FKC_JA_STEP_HEAD)
        return 0;
    /* bounds only on strings and lists; CLOSED only on structs */
    int64_t flags = s[S_FLAGS], lo = s[S_LO], hi = s[S_HI];
    int bounded = kind == FKC_JA_STRING || kind == FKC_JA_LIST;
    if ((flags & ~(int64_t)(FKC_JA_NOT_NULL | FKC_JA_CLOSED)) != 0 ||
        ((flags & FKC_JA_CLOSED) && kind != FKC_JA_STRUCT) || lo < 0 || hi < -1 || (hi >= 0 && hi < lo) ||
        (!bounded && (lo != 0 || hi != -1)))
        return 0;
    const int64_t *col = fkc_tc_column(&k->tree, column);
    if (ja_layout_of(kind) != col[C_LAYOUT])
        return 0;
    const int64_t *w = s + FKC_JA_STEP_HEAD;
    switch (kind) {
    case FKC_JA_INT:
        return n == 0 && col[C_P0] == 0; /* not a time: no bound to check */
    case FKC_JA_STRUCT:
        if (n != PROP_WIDTH * col[C_COUNT])
            return 0;
        for (int64_t i = 0; i < col[C_COUNT]; i++) {
            const int64_t *prop = w + PROP_WIDTH * i;
            if (!fkc_tc_span(&k->tree, prop[0], prop[1]) || prop[2] <= sid || (prop[3] != 0 && prop[3] != 1) ||
                !ja_check_step(k, prop[2], col[C_FIRST] + i, depth + 1))
                return 0;
        }
        return 1;
    case FKC_JA_LIST:
        return n == 1 && w[0] > sid && ja_check_step(k, w[0], col[C_FIRST], depth + 1);
    case FKC_JA_MAP: {
        /* the tree check proved entries a struct of (key, value) */
        const int64_t *entries = fkc_tc_column(&k->tree, col[C_FIRST]);
        const int64_t *key = fkc_tc_column(&k->tree, entries[C_FIRST]);
        return n == 1 && key[C_LAYOUT] == FKC_TC_UTF8 && w[0] > sid &&
               ja_check_step(k, w[0], entries[C_FIRST] + 1, depth + 1);
    }
    default:
        return n == 0;
    }
}

int fkc_ja_check(const fkc_ja_plan *plan)
{
    ja_checker k;
    k.p = plan;
    k.tree = ja_tree(plan);
    if (plan->steps_len < FKC_JA_STEP_HEAD || !fkc_tc_check_tree(&k.tree))
        return 0;
    k.seen = calloc(plan->steps_len, 1);
    if (k.seen == NULL)
        return 0;
    int ok = ja_check_step(&k, plan->root_step, 0, 0);
    free(k.seen);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The parser. */

typedef struct ja_run {
    const fkc_ja_plan *p;
    fkc_tc_set *s;
    const uint8_t *base; /* the payload */
    const uint8_t *at;   /* next byte */
    const uint8_t *end;
    int depth;
    uint8_t *text; /* scratch: a string with escapes decoded, a number NUL-terminated */
    size_t text_cap;
    size_t declined_at;
    const char *why;
} ja_run;

/* The single decline exit: the first reason is kept. */
static int decline(ja_run *r, const char *why)
{
    if (r->why == NULL) {
        r->why = why;
        r->declined_at = (size_t)(r->at - r->base);
    }
    return 0;
}

/* JSON's whitespace, by byte: one load a byte where four compares were
 * (writers put a space after every colon and comma by default). */
static const uint8_t JA_SPACE[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

static inline void ws(ja_run *r)
{
    while (r->at < r->end && JA_SPACE[*r->at])
        r->at++;
}

/* The literal `word` (its first byte already matched) */
static int literal(ja_run *r, const char *word, size_t n)
{
    if ((size_t)(r->end - r->at) < n || memcmp(r->at, word, n) != 0)
        return decline(r, "not JSON");
    r->at += n;
    return 1;
}

static int text_room(ja_run *r, size_t n)
{
    if (n <= r->text_cap)
        return 1;
    uint8_t *grown = fkc_grow(r->text, &r->text_cap, n, 1, 256);
    if (grown == NULL)
        return fkc_tc_fail(r->s, FKC_TC_NOMEM, 0, "json", "out of memory");
    r->text = grown;
    return 1;
}

static int hex4(const uint8_t *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

/* A string at r->at (its opening quote): its UTF-8 bytes in place when it
 * has no escapes, else decoded into r->text. The payload is valid UTF-8
 * (checked before), so raw bytes are copied as they are. */
static int string(ja_run *r, const uint8_t **out, size_t *len)
{
    const uint8_t *p = ++r->at; /* past the quote */
    /* eight bytes at a time while none is a quote, a backslash or a control
     * byte (the exact "has a byte below n" tests). A borrow runs only toward
     * higher bytes, so the lowest flagged byte is the first special one: on
     * a little-endian machine, its place is the mask's trailing zeros. */
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    while (r->end - p >= 8) {
        uint64_t v, q, b, hit;
        memcpy(&v, p, 8);
        q = v ^ (ones * '"');
        b = v ^ (ones * '\\');
        hit = (((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v)) & highs;
        if (hit) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            p += __builtin_ctzll(hit) >> 3;
#endif
            break;
        }
        p += 8;
    }
    while (p < r->end && *p != '"' && *p != '\\' && *p >= 0x20) /* the last bytes (and big-endian hits) */
        p++;
    if (p >= r->end)
        return decline(r, "not JSON");
    if (*p == '"') {
        *out = r->at;
        *len = (size_t)(p - r->at);
        r->at = p + 1;
        return 1;
    }
    if (*p < 0x20)
        return decline(r, "not JSON");
    /* escapes: decoded text is never longer than the payload's rest */
    if (!text_room(r, (size_t)(r->end - r->at)))
        return 0;
    size_t n = (size_t)(p - r->at);
    memcpy(r->text, r->at, n);
    while (p < r->end && *p != '"') {
        uint8_t c = *p;
        if (c < 0x20)
            return decline(r, "not JSON");
        if (c != '\\') {
            r->text[n++] = c;
            p++;
            continue;
        }
        if (r->end - p < 2)
            return decline(r, "not JSON");
        uint8_t e = p[1];
        p += 2;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            r->text[n++] = e;
            continue;
        case 'b':
            r->text[n++] = '\b';
            continue;
        case 'f':
            r->text[n++] = '\f';
            continue;
        case 'n':
            r->text[n++] = '\n';
            continue;
        case 'r':
            r->text[n++] = '\r';
            continue;
        case 't':
            r->text[n++] = '\t';
            continue;
        case 'u':
            break;
        default:
            return decline(r, "not JSON");
        }
        uint32_t cp, lo;
        if (r->end - p < 4 || !hex4(p, &cp))
            return decline(r, "not JSON");
        p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return decline(r, "a lone surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            /* Python keeps a lone one in a str, which is no UTF-8: its converter refuses it */
            if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return decline(r, "a lone surrogate");
            p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        /* at most 4 bytes out for at least 6 in */
        if (cp < 0x80) {
            r->text[n++] = (uint8_t)cp;
        } else if (cp < 0x800) {
            r->text[n++] = (uint8_t)(0xC0 | cp >> 6);
            r->text[n++] = (uint8_t)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            r->text[n++] = (uint8_t)(0xE0 | cp >> 12);
            r->text[n++] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            r->text[n++] = (uint8_t)(0x80 | (cp & 0x3F));
        } else {
            r->text[n++] = (uint8_t)(0xF0 | cp >> 18);
            r->text[n++] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
            r->text[n++] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            r->text[n++] = (uint8_t)(0x80 | (cp & 0x3F));
        }
    }
    if (p >= r->end)
        return decline(r, "not JSON");
    r->at = p + 1;
    *out = r->text;
    *len = n;
    return 1;
}

/* The C locale for strtod_l, made once (a process's LC_NUMERIC may be any) */
static locale_t ja_c_locale;
static pthread_once_t ja_locale_once = PTHREAD_ONCE_INIT;

static void ja_make_locale(void)
{
    ja_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* A number at r->at, by RFC 8259's grammar. *is_int: no fraction and no
 * exponent, then *i holds it (declined past int64); else *d holds it
 * (declined past float64's range). want_float: the caller takes a double. */
static int number(ja_run *r, int *is_int, int64_t *i, double *d)
{
    const uint8_t *start = r->at, *p = r->at;
    int neg = 0;
    if (p < r->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= r->end || *p < '0' || *p > '9')
        return decline(r, "not JSON");
    uint64_t mag = 0;
    int overflow = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < r->end && *p >= '0' && *p <= '9') {
            uint64_t digit = (uint64_t)(*p - '0');
            if (mag > (UINT64_MAX - digit) / 10)
                overflow = 1;
            else
                mag = mag * 10 + digit;
            p++;
        }
    }
    int frac = 0;
    if (p < r->end && *p == '.') {
        frac = 1;
        p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return decline(r, "not JSON");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        frac = 1;
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return decline(r, "not JSON");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    size_t n = (size_t)(p - start);
    if (n > FKC_JA_MAX_NUMBER)
        return decline(r, "a number longer than Python reads");
    r->at = p;
    if (!frac) {
        /* int64: [-2^63, 2^63 - 1] */
        if (overflow || mag > (uint64_t)INT64_MAX + (uint64_t)neg)
            return decline(r, "an integer past int64");
        *is_int = 1;
        *i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        return 1;
    }
    *is_int = 0;
    if (d == NULL)
        return 1; /* skipped: its value does not matter */
    if (!text_room(r, n + 1))
        return 0;
    memcpy(r->text, start, n);
    r->text[n] = 0;
    pthread_once(&ja_locale_once, ja_make_locale);
    if (ja_c_locale == (locale_t)0)
        return decline(r, "no C locale");
    char *stop;
    *d = strtod_l((const char *)r->text, &stop, ja_c_locale);
    if (stop != (char *)r->text + n || isinf(*d))
        return decline(r, "a number past float64");
    return 1;
}

/* Any JSON value at r->at, checked and passed over (a property the schema
 * does not name). */
static int skip(ja_run *r)
{
    ws(r);
    if (r->at >= r->end)
        return decline(r, "not JSON");
    const uint8_t *ignored;
    size_t len;
    int is_int;
    int64_t i;
    switch (*r->at) {
    case '"':
        return string(r, &ignored, &len);
    case 't':
        return literal(r, "true", 4);
    case 'f':
        return literal(r, "false", 5);
    case 'n':
        return literal(r, "null", 4);
    case '{':
    case '[': {
        int object = *r->at == '{';
        if (++r->depth > FKC_JA_MAX_DEPTH)
            return decline(r, "nested too deeply");
        r->at++;
        ws(r);
        if (r->at < r->end && *r->at == (object ? '}' : ']')) {
            r->at++;
            r->depth--;
            return 1;
        }
        for (;;) {
            if (object) {
                ws(r);
                if (r->at >= r->end || *r->at != '"' || !string(r, &ignored, &len))
                    return decline(r, "not JSON");
                ws(r);
                if (r->at >= r->end || *r->at != ':')
                    return decline(r, "not JSON");
                r->at++;
            }
            if (!skip(r))
                return 0;
            ws(r);
            if (r->at < r->end && *r->at == ',') {
                r->at++;
                continue;
            }
            if (r->at < r->end && *r->at == (object ? '}' : ']')) {
                r->at++;
                r->depth--;
                return 1;
            }
            return decline(r, "not JSON");
        }
    }
    default:
        return number(r, &is_int, &i, NULL);
    }
}

static int value(ja_run *r, int64_t sid);

/* The members of an object (r->at past its '{'), each handed to `member`
 * with its key; 1 at the closing brace. */
typedef int (*ja_member_fn)(ja_run *r, const int64_t *s, const uint8_t *key, size_t len, void *state);

static int members(ja_run *r, const int64_t *s, ja_member_fn member, void *state)
{
    ws(r);
    if (r->at < r->end && *r->at == '}') {
        r->at++;
        return 1;
    }
    for (;;) {
        const uint8_t *key;
        size_t len;
        ws(r);
        if (r->at >= r->end || *r->at != '"' || !string(r, &key, &len))
            return decline(r, "not JSON");
        ws(r);
        if (r->at >= r->end || *r->at != ':')
            return decline(r, "not JSON");
        r->at++;
        if (!member(r, s, key, len, state))
            return 0;
        ws(r);
        if (r->at < r->end && *r->at == ',') {
            r->at++;
            continue;
        }
        if (r->at < r->end && *r->at == '}') {
            r->at++;
            return 1;
        }
        return decline(r, "not JSON");
    }
}

/* A struct row's members so far: which properties were written (a second
 * one is declined: Python keeps the last), and where to look first. */
typedef struct ja_struct_state {
    uint8_t *seen;
    int64_t next; /* the property after the last one matched: writers mostly keep the schema's order */
} ja_struct_state;

/* A struct member: its property's column, or skipped. */
static int struct_member(ja_run *r, const int64_t *s, const uint8_t *key, size_t len, void *state)
{
    ja_struct_state *st = state;
    int64_t count = s[S_N] / PROP_WIDTH;
    const int64_t *props = s + FKC_JA_STEP_HEAD;
    /* the key may live in r->text, which a nested string reuses: compare now */
    for (int64_t k = 0; k < count; k++) {
        int64_t i = st->next + k < count ? st->next + k : st->next + k - count;
        const int64_t *prop = props + PROP_WIDTH * i;
        if ((size_t)prop[1] == len && memcmp(r->p->strings + prop[0], key, len) == 0) {
            if (st->seen[i])
                return decline(r, "a duplicate key");
            st->seen[i] = 1;
            st->next = i + 1 < count ? i + 1 : 0;
            return value(r, prop[2]);
        }
    }
    if (s[S_FLAGS] & FKC_JA_CLOSED)
        return decline(r, "a property the schema does not allow");
    return skip(r);
}

/* The code points of UTF-8 text (valid: every byte but a continuation starts one). */
static size_t code_points(const uint8_t *p, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += (p[i] & 0xC0) != 0x80;
    return count;
}

/* 1 when `count` is inside the step's lo..hi (hi -1: no upper bound). */
static int in_bounds(const int64_t *s, size_t count)
{
    return count >= (uint64_t)s[S_LO] && (s[S_HI] < 0 || count <= (uint64_t)s[S_HI]);
}

/* A map entry: its key (declined when this row has it already), then its value. */
static int map_member(ja_run *r, const int64_t *s, const uint8_t *key, size_t len, void *state)
{
    size_t row_first = *(size_t *)state; /* the key column's first entry of this row */
    fkc_tc_col *c = &r->s->cols[s[S_COLUMN]];
    fkc_tc_col *entries = fkc_tc_child(r->s, c, 0);
    fkc_tc_col *keys = fkc_tc_child(r->s, entries, 0);
    const int32_t *offsets = fkc_tc_offsets(keys);
    for (size_t e = row_first; e < keys->len; e++) {
        size_t a = (size_t)offsets[e], b = (size_t)offsets[e + 1];
        /* (no bytes yet when every key so far is empty: data is NULL then) */
        if (b - a == len && (len == 0 || memcmp(keys->data + a, key, len) == 0))
            return decline(r, "a duplicate key");
    }
    if (keys->len - row_first >= 4096)
        return decline(r, "a map too large to check for duplicate keys");
    if (!fkc_tc_begin(r->s, entries))
        return 0;
    entries->len++;
    return fkc_tc_put_bytes(r->s, keys, key, len) && value(r, s[FKC_JA_STEP_HEAD]);
}

/* The step's value at r->at into its column. */
static int value(ja_run *r, int64_t sid)
{
    const int64_t *s = r->p->steps + sid;
    fkc_tc_col *c = &r->s->cols[s[S_COLUMN]];
    int64_t kind = s[S_KIND];
    ws(r);
    if (r->at >= r->end)
        return decline(r, "not JSON");
    uint8_t first = *r->at;
    if (first == 'n') {
        if (!literal(r, "null", 4))
            return 0;
        if (s[S_FLAGS] & FKC_JA_NOT_NULL)
            return decline(r, "null where the schema wants a value");
        if (!c->nullable && kind != FKC_JA_NULL)
            return decline(r, "null where the column has no nulls");
        return fkc_tc_fill(r->s, c);
    }
    switch (kind) {
    case FKC_JA_NULL:
        return decline(r, "a value where the schema maps to null");
    case FKC_JA_BOOL:
        if (first == 't')
            return literal(r, "true", 4) && fkc_tc_put_bool(r->s, c, 1);
        if (first == 'f')
            return literal(r, "false", 5) && fkc_tc_put_bool(r->s, c, 0);
        return decline(r, "not a boolean");
    case FKC_JA_INT:
    case FKC_JA_FLOAT: {
        if (first != '-' && (first < '0' || first > '9'))
            return decline(r, "not a number");
        const uint8_t *literal_at = r->at;
        int is_int;
        int64_t i;
        double d;
        if (!number(r, &is_int, &i, &d))
            return 0;
        if (kind == FKC_JA_INT) {
            if (!is_int) /* Python's converter takes 1.0 as 1: its way decides */
                return decline(r, "a fraction or exponent where the schema maps to int64");
            return fkc_tc_put_fixed(r->s, c, &i);
        }
        if (is_int) {
            /* -0: json.loads reads the integer 0 (the converter's 0.0), Arrow's
             * JSON reader -0.0; which one the Python way uses depends on the
             * rest of the call, so it decides */
            if (i == 0 && *literal_at == '-') {
                r->at = literal_at;
                return decline(r, "-0 where the schema maps to float64");
            }
            d = (double)i; /* correctly rounded, as Python's float(int) */
        }
        return fkc_tc_put_fixed(r->s, c, &d);
    }
    case FKC_JA_STRING:
    case FKC_JA_ENUM: {
        const uint8_t *text;
        size_t len;
        if (first != '"')
            return decline(r, "not a string");
        if (!string(r, &text, &len))
            return 0;
        if (kind == FKC_JA_STRING) {
            if ((s[S_LO] > 0 || s[S_HI] >= 0) && !in_bounds(s, code_points(text, len)))
                return decline(r, "a string length the schema does not allow");
            return fkc_tc_put_bytes(r->s, c, text, len);
        }
        const int64_t *col = c->plan;
        const uint8_t *offsets = r->p->strings + col[C_P1], *symbols = r->p->strings + col[C_P2];
        for (int32_t k = 0; k < (int32_t)col[C_P0]; k++) {
            int32_t a = fkc_tc_le32(offsets + 4 * (size_t)k), b = fkc_tc_le32(offsets + 4 * (size_t)k + 4);
            if ((size_t)(b - a) == len && memcmp(symbols + a, text, len) == 0)
                return fkc_tc_put_fixed(r->s, c, &k);
        }
        return decline(r, "not one of the enum's symbols");
    }
    case FKC_JA_LIST: {
        if (first != '[')
            return decline(r, "not an array");
        if (++r->depth > FKC_JA_MAX_DEPTH)
            return decline(r, "nested too deeply");
        r->at++;
        if (!fkc_tc_begin(r->s, c))
            return 0;
        size_t items_first = fkc_tc_child(r->s, c, 0)->len;
        ws(r);
        if (r->at < r->end && *r->at == ']') {
            r->at++;
        } else {
            for (;;) {
                if (!value(r, s[FKC_JA_STEP_HEAD]))
                    return 0;
                ws(r);
                if (r->at < r->end && *r->at == ',') {
                    r->at++;
                    continue;
                }
                if (r->at < r->end && *r->at == ']') {
                    r->at++;
                    break;
                }
                return decline(r, "not JSON");
            }
        }
        r->depth--;
        fkc_tc_end_nested(r->s, c);
        return in_bounds(s, fkc_tc_child(r->s, c, 0)->len - items_first) ||
               decline(r, "an item count the schema does not allow");
    }
    case FKC_JA_MAP: {
        if (first != '{')
            return decline(r, "not an object");
        if (++r->depth > FKC_JA_MAX_DEPTH)
            return decline(r, "nested too deeply");
        r->at++;
        if (!fkc_tc_begin(r->s, c))
            return 0;
        size_t row_first = fkc_tc_child(r->s, fkc_tc_child(r->s, c, 0), 0)->len;
        if (!members(r, s, map_member, &row_first))
            return 0;
        r->depth--;
        fkc_tc_end_nested(r->s, c);
        return 1;
    }
    default: { /* FKC_JA_STRUCT */
        if (first != '{')
            return decline(r, "not an object");
        if (++r->depth > FKC_JA_MAX_DEPTH)
            return decline(r, "nested too deeply");
        r->at++;
        size_t count = c->count;
        uint8_t small[64];
        uint8_t *seen = count <= sizeof small ? small : calloc(count, 1);
        if (seen == NULL)
            return fkc_tc_fail(r->s, FKC_TC_NOMEM, 0, "json", "out of memory");
        if (seen == small)
            memset(small, 0, count);
        ja_struct_state st = {seen, 0};
        int ok = fkc_tc_begin(r->s, c);
        if (ok) {
            c->len++;
            ok = members(r, s, struct_member, &st);
        }
        /* a property absent: null (every property's column is nullable),
         * unless the schema requires it */
        const int64_t *props = s + FKC_JA_STEP_HEAD;
        for (size_t i = 0; ok && i < count; i++) {
            if (seen[i])
                continue;
            if (props[PROP_WIDTH * i + 3])
                ok = decline(r, "a required property is missing");
            else
                ok = fkc_tc_fill(r->s, fkc_tc_child(r->s, c, i));
        }
        if (seen != small)
            free(seen);
        r->depth--;
        return ok;
    }
    }
}

/* One payload, whole: valid UTF-8, one value of the root step, whitespace
 * around it. */
static int one_payload(ja_run *r, const uint8_t *payload, size_t length)
{
    r->base = r->at = payload;
    r->end = payload + length;
    r->depth = 0;
    if (!fkc_utf8_valid(payload, length))
        return decline(r, "not UTF-8");
    if (!value(r, r->p->root_step))
        return 0;
    ws(r);
    return r->at == r->end ? 1 : decline(r, "bytes after the value");
}

/* No memory for the columns' set: nothing built. */
static int no_columns(fkc_ja_error *err)
{
    err->kind = FKC_JA_NOMEM;
    err->index = 0;
    err->offset = 0;
    err->what = "json";
    err->problem = "out of memory";
    return FKC_JA_NOMEM;
}

int fkc_ja_build(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                 struct ArrowArray *out_array, struct ArrowSchema *out_schema, fkc_ja_error *err)
{
    fkc_tc_tree tree = ja_tree(plan);
    err->kind = FKC_JA_OK;
    fkc_tc_set *s = fkc_tc_start(&tree, count);
    if (s == NULL)
        return no_columns(err);
    ja_run r;
    memset(&r, 0, sizeof r);
    r.p = plan;
    r.s = s;
    s->err = err;
    size_t chunk = 0;
    int ok = 1;
    for (size_t i = 0; ok && i < count; i++) {
        s->index = i;
        ok = one_payload(&r, payloads[i], lengths[i]);
        /* the columns presize their bytes after a first chunk */
        if (ok && ++chunk == 1024) {
            fkc_tc_chunk_done(s, chunk);
            s->err = err;
            chunk = 0;
        }
    }
    free(r.text);
    if (!ok) {
        if (r.why != NULL && (err->kind == FKC_JA_OK)) {
            err->kind = FKC_JA_DECLINED;
            err->index = s->index;
            err->offset = r.declined_at;
            err->what = "json";
            err->problem = r.why;
        }
        fkc_tc_discard(s);
        return err->kind;
    }
    fkc_tc_chunk_done(s, chunk);
    return fkc_tc_finish(s, out_array, out_schema, err);
}

int fkc_ja_verdicts(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                    uint8_t *verdicts, fkc_ja_error *err)
{
    fkc_tc_tree tree = ja_tree(plan);
    ja_run r;
    memset(&r, 0, sizeof r);
    r.p = plan;
    err->kind = FKC_JA_OK;
    /* not presized: it holds one payload at a time */
    r.s = fkc_tc_start(&tree, 0);
    if (r.s == NULL)
        return no_columns(err);
    for (size_t i = 0; i < count; i++) {
        r.s->err = err;
        r.s->index = i;
        r.why = NULL;
        int ok = one_payload(&r, payloads[i], lengths[i]);
        if (!ok && err->kind == FKC_JA_NOMEM)
            break;
        /* CAPACITY (one payload past Arrow's int32 offsets) is a decline
         * here: the Python way reads that payload */
        err->kind = FKC_JA_OK;
        verdicts[i] = (uint8_t)ok;
        /* the row (a declined one half written) is not wanted: the next
         * payload writes over it */
        fkc_tc_rewind(r.s);
    }
    fkc_tc_discard(r.s);
    free(r.text);
    return err->kind;
}
