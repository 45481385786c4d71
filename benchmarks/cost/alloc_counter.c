/*
 * alloc_counter.c — an LD_PRELOAD shim that counts heap allocations, so
 * per_record_cost.py can report allocations per record. Run the measured
 * process with PYTHONMALLOC=malloc (every Python object then comes from
 * malloc) and ARROW_DEFAULT_MEMORY_POOL=system (pyarrow's buffers too); the
 * process reads the counter through ctypes (fkc_alloc_count).
 *
 * Why a shim and not tracemalloc: tracemalloc reports live and peak bytes,
 * not how many allocations were made, and it slows every allocation by
 * orders of magnitude.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic unsigned long long allocations;

static inline void counted(void)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void *malloc(size_t size)
{
    counted();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    counted();
    return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size)
{
    /* a realloc of NULL is an allocation; growing a block in place is not a new one,
     * but it costs like one, so every realloc counts */
    counted();
    return __libc_realloc(ptr, size);
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
    counted();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size)
{
    counted();
    return __libc_memalign(alignment, size);
}

unsigned long long fkc_alloc_count(void)
{
    return atomic_load_explicit(&allocations, memory_order_relaxed);
}
