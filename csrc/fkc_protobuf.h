/*
 * fkc_protobuf.h — Protobuf binary payloads read by a compiled program.
 *
 * Contract
 *   - The program is the flat int32 array fastkc/schema_registry/protobuf_schema.py
 *     compiles from a message descriptor; the layout and numbers below are
 *     the same. fkc_pb_check_program() proves a program well-formed (every
 *     index and pc in range, fields sorted, the dense slot tables agreeing
 *     with the fields, enum values sorted), so a wrong program is refused
 *     instead of read out of bounds.
 *   - Wire semantics are the protobuf runtime's (upb): a tag is a varint
 *     (field number 1 .. 2^29-1, wire types 0, 1, 2, 5; 3 and 4 only as a
 *     skipped unknown group with its matching end); a varint is at most 10
 *     bytes, non-minimal encodings accepted, bits past 64 dropped; int32 and
 *     enum keep the low 32 bits sign-extended, uint32 the low 32 bits,
 *     sint32/sint64 are zigzag, bool is nonzero; lengths are checked against
 *     the bytes left; strings are valid UTF-8; nested messages and unknown
 *     groups together nest at most the program's max depth (100: upb's
 *     bound); a known field with a wire type it cannot have is skipped as an
 *     unknown field; repeated scalars accept packed and unpacked; a closed
 *     (proto2) enum's unknown number is dropped (the runtime puts it in the
 *     unknown fields), and a map entry with any unknown field of its own
 *     (such a number included) is dropped whole, as upb drops it. Missing
 *     required fields are not an error (upb's FromString accepts them).
 *     The first failure stops the payload with what was read, why, and the
 *     byte offset in the payload.
 *   - The output is a tape of int64 words, in wire order, that sinks walk
 *     with the program (fastkc/_core/_protobuf.pyx builds dicts, the twin
 *     fastkc/_twin/protobuf.py is the oracle). A payload is one FRAME:
 *         FRAME:  nentries, nwords, body offset, then nwords words of entries
 *         ENTRY:  slot (the field's index in its message), then by kind:
 *           varint and fixed kinds: the value, normalized as above
 *                                   (uint64/fixed64 as their bits; float
 *                                   and double as IEEE bits, float in the
 *                                   low 32)
 *           string, bytes:          offset in the payload, length
 *           message:                a FRAME (the sub-message)
 *     One entry per occurrence (each packed element its own entry), so a
 *     sink resolves last-wins, oneof and sub-message merges itself, and
 *     skips a sub-message in one step (3 + nwords words). Unknown fields and
 *     dropped enum values write nothing.
 *   - No Python API, no allocation besides the tape (grown by doubling,
 *     overflow-checked): runs with the GIL released and under libFuzzer.
 */
#ifndef FKC_PROTOBUF_H
#define FKC_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FKC_PB_MAGIC 0x50424631 /* "PBF1" */
#define FKC_PB_HEADER 5         /* magic, nmessages, root, max depth, nenums; then the pc index */
#define FKC_PB_FIELD_WIDTH 6    /* number, kind, flags, oneof, ref, 0 */
#define FKC_PB_MSG_HEAD 3       /* nfields, dense, flags; then slot * dense, fields */
#define FKC_PB_FRAME 3          /* a frame's head words: nentries, nwords, body offset */

/* field kinds: descriptor.proto's TYPE_* numbers (10, groups, never occurs) */
enum {
    FKC_PB_DOUBLE = 1,
    FKC_PB_FLOAT = 2,
    FKC_PB_INT64 = 3,
    FKC_PB_UINT64 = 4,
    FKC_PB_INT32 = 5,
    FKC_PB_FIXED64 = 6,
    FKC_PB_FIXED32 = 7,
    FKC_PB_BOOL = 8,
    FKC_PB_STRING = 9,
    FKC_PB_MESSAGE = 11,
    FKC_PB_BYTES = 12,
    FKC_PB_UINT32 = 13,
    FKC_PB_ENUM = 14,
    FKC_PB_SFIXED32 = 15,
    FKC_PB_SFIXED64 = 16,
    FKC_PB_SINT32 = 17,
    FKC_PB_SINT64 = 18
};

/* field flags */
enum {
    FKC_PB_F_REPEATED = 1,
    FKC_PB_F_PACKABLE = 2,    /* wire type 2 accepted too: packed elements */
    FKC_PB_F_EXPLICIT = 4,    /* explicit presence (for the sinks; the reader ignores it) */
    FKC_PB_F_CLOSED_ENUM = 8  /* ref is the enum's index; unknown numbers are dropped */
};

/* message flags */
enum { FKC_PB_M_MAP_ENTRY = 1 };

/* The most tape words the reader reserves before a payload when the
 * payload's bound (2 words a byte) is larger: 64 Ki words, 512 KiB. */
#define FKC_PB_RESERVE_WORDS ((size_t)1 << 16)

typedef struct fkc_pb_tape {
    int64_t *v;
    size_t len;
    size_t cap;
    /* the reservation's ceiling, 0: FKC_PB_RESERVE_WORDS (tests lower it to
     * read small payloads the way large ones are read) */
    size_t reserve_words;
} fkc_pb_tape;

/* Why a decode stopped. `what` and `problem` are static strings that the
 * twin (fastkc/_twin/protobuf.py) spells the same way. */
typedef struct fkc_pb_error {
    size_t index;  /* which payload */
    size_t offset; /* byte inside it */
    const char *what;
    const char *problem;
    int nomem; /* the tape could not grow (no payload fault) */
} fkc_pb_error;

/* 1 when `code[0..n)` is a well-formed program (header included). */
int fkc_pb_check_program(const int32_t *code, size_t n);

/* Read payloads[0..count) in turn onto the tape (appended to what it holds);
 * starts[i] is the tape length before payload i (where its frame is),
 * starts[count] the length after the last. Returns how many payloads were
 * read whole: count, or the index of the failing one with *err filled.
 * The program must have passed fkc_pb_check_program(). */
size_t fkc_pb_decode_many(const int32_t *code, size_t code_len, const uint8_t *const *payloads,
                          const size_t *lengths, size_t count, fkc_pb_tape *tape, size_t *starts,
                          fkc_pb_error *err);

void fkc_pb_tape_free(fkc_pb_tape *tape);

#ifdef __cplusplus
}
#endif

#endif /* FKC_PROTOBUF_H */
