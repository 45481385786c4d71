/*
 * fkc_protobuf_arrow.h — Protobuf payloads into Arrow: N payloads become
 * one struct array of N rows (the root message), exported through the C
 * data interface. A payload laid out in field order is read straight into
 * the columns; any other is read onto fkc_pb_decode_many()'s tape and
 * walked from there (see append()).
 *
 * Contract
 *   - What Arrow type each field becomes is decided in Python
 *     (fastkc/schema_registry/protobuf_arrow.py) and handed over as a plan:
 *       columns  the Arrow tree, as fkc_typed_columns.h describes it.
 *       steps    int64 words; a step is [op, column, ref, absent, n, word * n]:
 *         STRUCT     a message as a struct row; ref its message index; the
 *                    n words are one step per field slot, the slot's on the
 *                    column's child of the same place (every child once).
 *         VALUE      a scalar field's value; for an enum field the n words
 *                    are the enum's numbers, ascending, whose places are the
 *                    dictionary's indices, and ref the number its default is.
 *         LIST       a repeated field as a list row: one word, the item's step.
 *         MAP        a map field: one word, a STRUCT step over the entry
 *                    message on the entries column (key, value).
 *         TIMESTAMP  google.protobuf.Timestamp as int64 nanoseconds (UTC).
 *         DURATION   google.protobuf.Duration as int64 nanoseconds.
 *         WRAPPER    a wrapper message (Int32Value, ...) as its value field.
 *       `absent` says what a field with no occurrence is: 0 null (the column
 *       must be nullable), 1 its type's default (zero, "", false, the
 *       default enum number; an empty message's struct: implicit presence
 *       and map entries).
 *     fkc_pb_arrow_check() proves the plan well-formed and in agreement with
 *     its program (fkc_pb_check_program() passed): every column able to hold
 *     its field's values, a STRUCT step's children each written once, the
 *     well-known shapes (Timestamp/Duration: int64 seconds 1, int32 nanos 2;
 *     a wrapper: one singular scalar field 1), map keys non-null scalars.
 *   - Field semantics are the runtime's, resolved here over the tape's one
 *     entry per occurrence: a singular field's last occurrence wins; of a
 *     oneof only the member that occurred last is set; a singular message
 *     field seen more than once is the merge of its occurrences (since a
 *     oneof sibling last replaced it): their entries read as one message,
 *     so scalars last-win and repeated fields concatenate; a repeated field
 *     is every occurrence in wire order (packed and unpacked alike); a map
 *     keeps, per key, its last entry, at that entry's place. An open enum's
 *     number outside the enum is null (no symbol to name it).
 *   - A Timestamp whose nanos are outside [0, 1e9), or a Duration whose
 *     nanos are outside (-1e9, 1e9) or of the other sign than its seconds,
 *     or either one past int64 nanoseconds (about 1677..2262 for a
 *     Timestamp), is refused: FKC_TC_VALUE, what = its full name, at its
 *     message's byte offset. Capacity and memory failures are the columns'
 *     (fkc_typed_columns.h). The tape walk trusts the tape (read by the
 *     same program).
 *   - Same chunked API as fkc_avro_arrow.h; no Python API, runs with the GIL
 *     released.
 */
#ifndef FKC_PROTOBUF_ARROW_H
#define FKC_PROTOBUF_ARROW_H

#include <stddef.h>
#include <stdint.h>

#include "fkc_arrow_abi.h"
#include "fkc_protobuf.h"
#include "fkc_typed_columns.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_PA_STEP_HEAD 5 /* op, column, ref, absent, n */

/* Step ops: protobuf_arrow.py names the same numbers. */
enum {
    FKC_PA_STRUCT = 0,
    FKC_PA_VALUE = 1,
    FKC_PA_LIST = 2,
    FKC_PA_MAP = 3,
    FKC_PA_TIMESTAMP = 4,
    FKC_PA_DURATION = 5,
    FKC_PA_WRAPPER = 6
};

/* The plan (the arrays belong to the caller). */
typedef struct fkc_pb_arrow_plan {
    const int32_t *code; /* the program the tape was read by */
    size_t code_len;
    const int64_t *columns; /* column_count * FKC_TC_COL_WIDTH words */
    size_t column_count;
    const int64_t *steps;
    size_t steps_len;
    const uint8_t *strings;
    size_t strings_len;
    int64_t root_step; /* a STRUCT step of the program's root message, on column 0 */
} fkc_pb_arrow_plan;

int fkc_pb_arrow_check(const fkc_pb_arrow_plan *plan);

/* A payload that cannot be read (fkc_pb_decode_many fails on it). */
#define FKC_PA_READ (FKC_TC_VALUE + 1)

/* As fkc_avro_arrow_start/_append/_finish/_discard: start() (NULL: out of
 * memory; rows_hint only sizes the columns), append() each chunk of
 * payloads [0, count) (they may go once it returns), finish() exports
 * every row and frees the builder (also on failure); after a failed
 * append() only discard().
 *
 * append() reads each payload in field order straight into the columns
 * when it is laid out as writers lay it out, else (or on any fault) takes
 * the row back and reads the payload onto a tape first, as
 * fkc_pb_decode_many() + append_tape() would: the rows and the errors are
 * theirs either way. It returns FKC_TC_OK; FKC_PA_READ with *read_err as
 * fkc_pb_decode_many() fills it (index counted from this chunk's first
 * payload); or another result with *err (index counted from the first
 * payload of all). A payload that cannot be read is a read failure even
 * when it also holds a value the columns refuse (the object path reads a
 * payload whole before it converts anything).
 *
 * append_tape() builds payloads [0, count) of a tape that
 * fkc_pb_decode_many() read (starts[i] their frames, payloads[i] the bytes
 * their offsets point into; the tape may go once it returns): the walk
 * every payload would take without the in-order reader, kept public as the
 * fuzzer's oracle for append(). */
typedef struct fkc_pb_arrow_builder fkc_pb_arrow_builder;
fkc_pb_arrow_builder *fkc_pb_arrow_start(const fkc_pb_arrow_plan *plan, size_t rows_hint);
int fkc_pb_arrow_append(fkc_pb_arrow_builder *b, const uint8_t *const *payloads, const size_t *lengths,
                        size_t count, fkc_pb_error *read_err, fkc_tc_error *err);
int fkc_pb_arrow_append_tape(fkc_pb_arrow_builder *b, const fkc_pb_tape *tape, const size_t *starts,
                             const uint8_t *const *payloads, size_t count, fkc_tc_error *err);
int fkc_pb_arrow_finish(fkc_pb_arrow_builder *b, struct ArrowArray *out_array, struct ArrowSchema *out_schema,
                        fkc_tc_error *err);
void fkc_pb_arrow_discard(fkc_pb_arrow_builder *b);

#ifdef __cplusplus
}
#endif

#endif /* FKC_PROTOBUF_ARROW_H */
