/*
 * fkc_avro_arrow.h — Avro payloads read by the compiled program straight
 * into one typed Arrow array of as many rows, exported through the C data
 * interface (ArrowArray + ArrowSchema).
 *
 * Contract
 *   - What Arrow type each reader type becomes is decided in Python
 *     (fastkc/schema_registry/avro_arrow.py) and handed over as a *plan*:
 *       columns  the Arrow tree, as fkc_typed_columns.h describes it
 *                (FKC_AA_COL_WIDTH words per column, column 0 the array).
 *       steps    how the program's values land in the columns, int64 words:
 *                a value step [pc, column, n, child step * n] follows the
 *                program op at pc (a union's children: one step per writer
 *                branch; a record's: one per writer field, -1 for a skipped
 *                one, then one constant step per reader default; an array's
 *                or map's: its item's); a constant step [-1, column, null,
 *                offset, length, n, child step * n] writes a default (the
 *                column's bytes at strings[offset, offset + length), its
 *                items or its fields). A child step comes after its parent.
 *                A step on a dense union column (a reader union of several
 *                types) writes its value through a child step on one of
 *                the union's children: a writer union's step has one child
 *                step per writer branch, each on the child of the reader
 *                branch it resolves to; any other op's step (a writer type
 *                resolved to one reader branch) has one child step, the
 *                same op on that branch's child; a constant has one child
 *                constant.
 *     fkc_avro_arrow_check() proves the tree well-formed (fkc_tc_check_tree)
 *     and the steps in agreement with their program (every pc the
 *     program's own operand, every column kind able to hold the op's
 *     values, map keys utf8, a struct's children each written once per
 *     row, a union's child steps on its children, constants inside the
 *     blob and UTF-8 where Arrow wants it), so a
 *     wrong plan is refused instead of building a corrupt array or reading
 *     out of bounds.
 *   - The payloads are read with fkc_avro.c's reads and checks
 *     (fkc_avro_read.h), in the same order, with the same nesting and
 *     empty-item bounds, so a payload fails here exactly where and why
 *     fkc_avro_decode_many() fails on it (FKC_AA_READ). The columns (fkc_typed_columns.c)
 *     keep every length and byte count <= INT32_MAX: a payload that would
 *     pass them is refused (FKC_AA_CAPACITY, naming it; the caller may
 *     decode the payloads before it, then the rest), never split. A decimal
 *     whose value does not fit its precision, or a time outside a day
 *     (Arrow's time32/time64 rule), is refused (FKC_AA_VALUE, at the
 *     value's first byte when the writer declared the logical type; else a
 *     decimal at its bytes and a time at 0, as the object path reports
 *     them). A failed allocation is FKC_AA_NOMEM. On any failure everything
 *     built so far is freed.
 *   - The exported array and schema own copies of everything they point at
 *     (fkc_typed_columns.h's export).
 *   - No Python API: runs with the GIL released.
 */
#ifndef FKC_AVRO_ARROW_H
#define FKC_AVRO_ARROW_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_arrow_abi.h"
#include "fkc_avro.h"
#include "fkc_typed_columns.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_AA_COL_WIDTH FKC_TC_COL_WIDTH

/* Results: the shared columns' */
enum { FKC_AA_OK = FKC_TC_OK, FKC_AA_NOMEM = FKC_TC_NOMEM, FKC_AA_CAPACITY = FKC_TC_CAPACITY,
       FKC_AA_VALUE = FKC_TC_VALUE, FKC_AA_READ = FKC_TC_VALUE + 1 /* a payload cannot be read */ };

/* The plan, as avro_arrow.py compiled it (the arrays belong to the caller). */
typedef struct fkc_avro_arrow_plan {
    const int32_t *code; /* the Avro program (checked by fkc_avro_check_program) */
    size_t code_len;
    const int64_t *columns; /* column_count * FKC_AA_COL_WIDTH words */
    size_t column_count;
    const int64_t *steps;
    size_t steps_len;
    const uint8_t *strings;
    size_t strings_len;
    int64_t root_step; /* the step of the program's root value, on column 0 */
} fkc_avro_arrow_plan;

/* Why a build stopped (kind FKC_AA_NOMEM, FKC_AA_CAPACITY or FKC_AA_VALUE). */
typedef fkc_tc_error fkc_avro_arrow_error;

/* 1 when `plan` is well-formed for its program (which must have passed
 * fkc_avro_check_program()). */
int fkc_avro_arrow_check(const fkc_avro_arrow_plan *plan);

/* Payloads become one array of as many rows, a chunk at a time: start() a
 * builder (NULL: out of memory; rows_hint: how many payloads will be
 * appended in all, 0 when unknown, used only to size the columns);
 * append() each chunk's payloads [0, count) (their rows go on after the
 * last chunk's; the payloads may be reused or freed once it returns, every
 * value being copied); then finish() exports every row appended and frees
 * the builder (also on failure). After an append() fails, only discard() it.
 *
 * append() returns FKC_AA_OK, or FKC_AA_READ with *read_err filled as
 * fkc_avro_decode_many() fills it (index counted from this chunk's first
 * payload), or another result with *err (index counted from the first
 * payload of all). A payload that cannot be read and also holds a value the
 * columns refuse is a read failure, wherever each is (the object path reads
 * a payload whole before it converts anything). `allow_trailing` as in
 * fkc_avro_decode_many(). */
typedef struct fkc_avro_arrow_builder fkc_avro_arrow_builder;
fkc_avro_arrow_builder *fkc_avro_arrow_start(const fkc_avro_arrow_plan *plan, size_t rows_hint);
int fkc_avro_arrow_append(fkc_avro_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                          size_t count, int allow_trailing, fkc_avro_error *read_err, fkc_avro_arrow_error *err);
int fkc_avro_arrow_finish(fkc_avro_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                          fkc_avro_arrow_error *err);
void fkc_avro_arrow_discard(fkc_avro_arrow_builder *b);

#ifdef __cplusplus
}
#endif

#endif /* FKC_AVRO_ARROW_H */
