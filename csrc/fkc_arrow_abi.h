/*
 * fkc_arrow_abi.h — what every Arrow producer here shares: the Arrow C data
 * interface's structs (arrow/c/abi.h, ABI-stable, guarded as Arrow asks so a
 * second copy of them compiles) and the size of a validity bitmap.
 * The column builder (fkc_arrow_builder.c) exports into struct ArrowArray;
 * the Cython bridge hands that to pyarrow.
 */
#ifndef FKC_ARROW_ABI_H
#define FKC_ARROW_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of a validity bitmap for n entries. */
static inline size_t fkc_bitmap_bytes(size_t n)
{
    return (n + 7) / 8;
}

/* The Arrow C data interface's array struct (arrow/c/abi.h, ABI-stable). */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

#ifdef __cplusplus
}
#endif

#endif /* FKC_ARROW_ABI_H */
