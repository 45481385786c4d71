/*
 * fkc_json_arrow.h — JSON payloads parsed straight into typed Arrow columns
 * (one pass, no Python objects), for the JSON Schema deserializer's Arrow
 * path.
 *
 * Contract
 *   - What Arrow type each schema position becomes is decided in Python
 *     (fastkc/schema_registry/json_schema.py's ArrowNode; the plan compiler
 *     is fastkc/schema_registry/json_arrow.py) and handed over as a plan:
 *       columns  the Arrow tree, as fkc_typed_columns.h describes it.
 *       steps    int64 words; a step is [kind, column, n, flags, lo, hi,
 *                word * n]:
 *         NULL, BOOL, INT, FLOAT, STRING, ENUM   n = 0 (an enum's symbols
 *                    are its DICT column's dictionary)
 *         STRUCT     n = 4 * properties: (name offset, name length, step,
 *                    required) per property, the step on the column's child
 *                    of the same place
 *         LIST       n = 1: the items' step, on the list's child
 *         MAP        n = 1: the values' step, on the entries' second child
 *                    (the key, a utf8 column, is the first)
 *       flags, lo, hi, required: what validating the value asks beyond its
 *       kind, where the schema's keywords are ones the parser checks exactly
 *       (json_arrow.py decides; 0, 0, -1 and 0 when nothing is validated):
 *       NOT_NULL declines a null; CLOSED (a struct) declines a property the
 *       schema does not name; lo..hi (hi -1: no bound) bounds a string's
 *       code points or a list's items; `required` declines an object without
 *       that property. A validating plan's output is thus only ever values
 *       the schema accepts: whatever it would reject is declined, and the
 *       Python way raises the validator's typed error.
 *     fkc_ja_check() proves the plan well-formed: the tree
 *     (fkc_tc_check_tree), every step inside the array and walked once, a
 *     child step after its parent, each kind on the column layout that
 *     holds it, every name inside the blob.
 *   - The parser accepts a subset of what Python's reading accepts
 *     (orjson, then json.loads: fastkc/schema_registry/json_schema.py), and
 *     for what it accepts writes what that reading's converter builds:
 *     RFC 8259 JSON in valid UTF-8, one value per payload with whitespace
 *     around it; a property not in the schema skipped; a property absent
 *     or null as null; an integer in int64 for INT; a number for FLOAT (an
 *     integer in int64 converted, others read by strtod in the C locale,
 *     which rounds correctly as Python's float() does); true/false for
 *     BOOL; a string for STRING; one of the symbols for ENUM (its first
 *     place); an object for STRUCT and MAP, an array for LIST.
 *     Anything else is DECLINED, never an error: a type that does not fit,
 *     a duplicate key (Python keeps the last: the columns were written in
 *     one pass), an integer past int64 or a number past float64, a float
 *     where INT wants an integer (Python takes 1.0), the integer -0 where
 *     FLOAT wants a number (0.0 or -0.0 in Python's way), a lone surrogate
 *     escape, NaN or Infinity, nesting past FKC_JA_MAX_DEPTH, a number
 *     literal longer than FKC_JA_MAX_NUMBER (Python's digit limit), invalid
 *     JSON or UTF-8. The caller then reads the whole call the Python way,
 *     which raises the typed error or builds the value: the fast path never
 *     decides what is an error.
 *   - Memory: the columns grow as fkc_typed_columns.c's do (FKC_TC_NOMEM,
 *     FKC_TC_CAPACITY past Arrow's int32 offsets); a string with escapes is
 *     decoded into a scratch buffer no longer than its payload.
 *   - No Python API: runs with the GIL released, and under libFuzzer.
 */
#ifndef FKC_JSON_ARROW_H
#define FKC_JSON_ARROW_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_arrow_abi.h"
#include "fkc_typed_columns.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_JA_STEP_HEAD 6   /* kind, column, n, flags, lo, hi */
#define FKC_JA_MAX_DEPTH 128 /* nesting past this is declined (Python's readers go deeper) */
#define FKC_JA_MAX_NUMBER 4000 /* a number literal longer than this is declined (Python's int digit limit is 4300) */

/* Step kinds: json_arrow.py names the same numbers. */
enum {
    FKC_JA_NULL = 0,
    FKC_JA_BOOL = 1,
    FKC_JA_INT = 2,
    FKC_JA_FLOAT = 3,
    FKC_JA_STRING = 4,
    FKC_JA_ENUM = 5,
    FKC_JA_STRUCT = 6,
    FKC_JA_LIST = 7,
    FKC_JA_MAP = 8
};

/* Step flags */
enum { FKC_JA_NOT_NULL = 1, FKC_JA_CLOSED = 2 };

/* Results: the columns' (fkc_typed_columns.h), and DECLINED. */
enum { FKC_JA_OK = FKC_TC_OK, FKC_JA_NOMEM = FKC_TC_NOMEM, FKC_JA_CAPACITY = FKC_TC_CAPACITY, FKC_JA_DECLINED = 8 };

/* The plan (the arrays belong to the caller). */
typedef struct fkc_ja_plan {
    const int64_t *columns; /* column_count * FKC_TC_COL_WIDTH words */
    size_t column_count;
    const int64_t *steps;
    size_t steps_len;
    const uint8_t *strings;
    size_t strings_len;
    int64_t root_step; /* on column 0 */
} fkc_ja_plan;

/* 1 when the plan is well-formed (see the contract). */
int fkc_ja_check(const fkc_ja_plan *plan);

/* Why a build stopped: err->kind is NOMEM, CAPACITY (err->index the payload)
 * or DECLINED (err->index the payload, err->offset the byte, err->problem
 * why, for logs and tests). */
typedef fkc_tc_error fkc_ja_error;

/* payloads[0..count) as one Arrow array of `count` rows of the plan's type,
 * exported into *out_array / *out_schema (FKC_JA_OK), or nothing built
 * (every column freed) and the reason. The plan must have passed
 * fkc_ja_check(). */
int fkc_ja_build(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                 struct ArrowArray *out_array, struct ArrowSchema *out_schema, fkc_ja_error *err);

/* Payloads taken one by one: verdicts[i] = 1 when the plan takes
 * payloads[i] (a validating plan: the schema accepts the value Python reads
 * from it), 0 when it declines it. For the values path (poll()), which
 * builds its values with Python's reading and skips the Python validator
 * wherever the verdict is 1. Each payload is written into the columns and
 * rewound (fkc_tc_rewind), so memory stays that of the largest payload.
 * FKC_JA_OK, or FKC_JA_NOMEM (err filled, verdicts partly written). */
int fkc_ja_verdicts(const fkc_ja_plan *plan, const uint8_t *const *payloads, const size_t *lengths, size_t count,
                    uint8_t *verdicts, fkc_ja_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FKC_JSON_ARROW_H */
