/*
 * fkc_avro.h — Avro binary payloads read by a compiled program (phase 1).
 *
 * Contract
 *   - The program is the flat int32 array fastkc/schema_registry/avro_schema.py
 *     compiles from a (writer, reader) schema pair; the opcodes and kinds
 *     below are the same numbers. Every resolution decision (promotions,
 *     skipped fields, defaults, enum and union mapping) is in the program:
 *     this file only follows it. fkc_avro_check_program() proves a program
 *     well-formed (every pc an op start inside the array, every operand in
 *     range), so a wrong program is refused instead of read out of bounds.
 *   - Reading goes through the fkc_cursor idiom: strict zigzag varints (an
 *     int at most 5 bytes, a long at most 10, over-long and overflowing
 *     encodings rejected), every length checked against the bytes left
 *     before it is used, a block's item count checked against the bytes
 *     left (items of at least one byte) or against a per-payload budget
 *     (items that take no bytes), nesting bounded by the program's depth,
 *     enum indexes and union branches checked. The first failure stops the
 *     payload with what was read, why, and the byte offset in the payload.
 *   - The output is a tape of int64 entries that the sinks (the Python
 *     object builder in fastkc/_core/_avro.pyx, the twin's oracle walk)
 *     read back by walking the same program:
 *         boolean, int, long, enum (writer index), union (writer branch):
 *                                      the value
 *         float, double:               the IEEE bits
 *         bytes, string:               offset in the payload, length
 *         fixed:                       offset in the payload
 *         array, map:                  the total item count (then the items;
 *                                      a map item is its key's offset and
 *                                      length, then the value)
 *         a logical-typed scalar:      first the value's start offset (so a
 *                                      value the sink cannot convert is
 *                                      reported where it is), then as above
 *     Skipped writer fields and null write nothing. (A payload's read errors
     therefore come before a logical value the sink cannot convert, wherever
     each is: the sink only sees payloads read whole.) A string is valid UTF-8
 *     (checked here), so the sink decodes it without failing.
 *   - No Python API, no allocation besides the tape (grown by doubling,
 *     overflow-checked): runs with the GIL released and under libFuzzer.
 */
#ifndef FKC_AVRO_H
#define FKC_AVRO_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_cursor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_AVRO_MAGIC 0x41565231
#define FKC_AVRO_HEADER 4 /* magic, root pc, max depth, max empty items */

enum {
    FKC_AVRO_OP_SCALAR = 1, /* wire, out, logical, size, const */
    FKC_AVRO_OP_ENUM = 2,   /* n, (reader index, const) * n */
    FKC_AVRO_OP_ARRAY = 3,  /* item pc, item min size (bytes), item weight (values of no bytes, >= 1) */
    FKC_AVRO_OP_MAP = 4,    /* value pc, value min size, value weight */
    FKC_AVRO_OP_UNION = 5,  /* n, (pc, reader branch) * n */
    FKC_AVRO_OP_RECORD = 6  /* nfields, ndefaults, name const, (pc, key const) * nfields,
                               (key const, default const) * ndefaults */
};

/* wire and out kinds share these numbers */
enum {
    FKC_AVRO_NULL = 0,
    FKC_AVRO_BOOLEAN = 1,
    FKC_AVRO_INT = 2,
    FKC_AVRO_LONG = 3,
    FKC_AVRO_FLOAT = 4,
    FKC_AVRO_DOUBLE = 5,
    FKC_AVRO_BYTES = 6,
    FKC_AVRO_STRING = 7,
    FKC_AVRO_FIXED = 8
};

#define FKC_AVRO_LOGICAL_MAX 12 /* logical kinds are 0 (none) .. 12 (duration) */

typedef struct fkc_avro_tape {
    int64_t *v;
    size_t len;
    size_t cap;
} fkc_avro_tape;

/* Why a decode stopped. `what` and `problem` are static strings that the
 * twin (fastkc/_twin/avro.py) spells the same way. */
typedef struct fkc_avro_error {
    size_t index;        /* which payload */
    size_t offset;       /* byte inside it */
    const char *what;
    const char *problem;
    int nomem;           /* the tape could not grow (no payload fault) */
} fkc_avro_error;

/* 1 when `code[0..n)` is a well-formed program (header included). */
int fkc_avro_check_program(const int32_t *code, size_t n);

/* Read payloads[0..count) in turn onto the tape (appended to what it holds);
 * starts[i] is the tape length before payload i, starts[count] the length
 * after the last. Returns how many payloads were read whole: count, or the
 * index of the failing one with *err filled (the tape then holds the good
 * payloads' entries, and whatever the failing one wrote before it failed).
 * `allow_trailing`: bytes after a value are ignored instead of an error.
 * The program must have passed fkc_avro_check_program(). */
size_t fkc_avro_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                            const size_t *lengths, size_t count, int allow_trailing, fkc_avro_tape *tape,
                            size_t *starts, fkc_avro_error *err);

void fkc_avro_tape_free(fkc_avro_tape *tape);

#ifdef __cplusplus
}
#endif

#endif /* FKC_AVRO_H */
