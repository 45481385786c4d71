/*
 * fkc_pybuild.h — phase 2a: decoded record descriptors → ConsumerRecord
 * instances, built with the CPython API (kept out of csrc/, which has none).
 *
 * Each record is allocated through the namedtuple type's tp_alloc with its
 * 13 slots (14 for a share decode's ShareRecord) filled directly, as namedtuple.__new__ would produce, but without
 * the Python-level call. Shared objects (topic, partition, None, small ints)
 * are reference-counted, not recreated.
 *
 * GC: the caller pauses the cyclic GC around the whole build, and without
 * deserializers asks for each record and its headers list to be created
 * untracked (b->untrack; see _records.pyx for why, the measurements and the
 * accepted cost).
 */
#ifndef FKC_PYBUILD_H
#define FKC_PYBUILD_H

#include <Python.h>

#include "fkc_records.h"

typedef struct fkc_build_ctx {
    PyTypeObject *record_type;
    PyObject *topic;
    PyObject *partition;
    PyObject *key_fn;   /* NULL: no deserializer */
    int key_full;       /* 1: key_fn(topic, headers, data); 0: key_fn(data) */
    PyObject *value_fn;
    int value_full;
    int untrack;        /* 1: untrack each record and its headers list (see _records.pyx) */
    int share;          /* 1: record_type is ShareRecord: a 14th slot, the delivery count */
} fkc_build_ctx;

/* Integer fields repeat: leader_epoch, timestamp_type, the serialized sizes
 * and often the timestamp are the same from one record to the next. Each
 * such field keeps the last object it made and hands it out again for an
 * equal value (ints are immutable, so sharing is invisible), saving an
 * allocation and a PyLong call per field and record. Values in [-5, 256]
 * are CPython's cached small ints anyway; the last-value check covers them
 * too without calling into PyLong. */
typedef struct fkc_int_cache {
    long long value;
    PyObject *obj; /* strong reference, or NULL before the first value */
} fkc_int_cache;

static inline PyObject *fkc_py_int_cached(fkc_int_cache *cache, long long value)
{
    if (cache->obj != NULL && cache->value == value) {
        Py_INCREF(cache->obj);
        return cache->obj;
    }
    PyObject *obj = PyLong_FromLongLong(value);
    if (obj == NULL)
        return NULL;
    Py_XDECREF(cache->obj);
    Py_INCREF(obj);
    cache->obj = obj;
    cache->value = value;
    return obj;
}

/* Header keys repeat too (the same few names on every record): the str made
 * for the i-th header of the previous record is handed out again when the
 * key bytes are equal, instead of decoding UTF-8 into a new str. The bytes
 * compared point into the blob or a decompressed buffer, both alive for the
 * whole build. */
#define FKC_KEY_CACHE_SLOTS 8
typedef struct fkc_key_cache {
    const uint8_t *bytes;
    int32_t len;
    PyObject *str; /* strong reference, or NULL */
} fkc_key_cache;

/* One cache per repeating field, alive for one fkc_py_build_list call. */
typedef struct fkc_int_caches {
    fkc_int_cache leader_epoch, timestamp, timestamp_type, key_size, value_size, header_size, delivery_count;
    fkc_key_cache header_keys[FKC_KEY_CACHE_SLOTS]; /* by header position */
} fkc_int_caches;

static inline PyObject *fkc_py_header_key(fkc_key_cache *slot, const uint8_t *k, int32_t kl)
{
    if (slot->str != NULL && slot->len == kl && memcmp(slot->bytes, k, (size_t)kl) == 0) {
        Py_INCREF(slot->str);
        return slot->str;
    }
    PyObject *key = PyUnicode_DecodeUTF8((const char *)k, (Py_ssize_t)kl, "strict");
    if (key == NULL)
        return NULL;
    Py_XDECREF(slot->str);
    Py_INCREF(key);
    slot->str = key;
    slot->bytes = k;
    slot->len = kl;
    return key;
}

static void fkc_int_caches_clear(fkc_int_caches *c)
{
    Py_CLEAR(c->leader_epoch.obj);
    Py_CLEAR(c->timestamp.obj);
    Py_CLEAR(c->timestamp_type.obj);
    Py_CLEAR(c->key_size.obj);
    Py_CLEAR(c->value_size.obj);
    Py_CLEAR(c->header_size.obj);
    Py_CLEAR(c->delivery_count.obj);
    for (int i = 0; i < FKC_KEY_CACHE_SLOTS; i++)
        Py_CLEAR(c->header_keys[i].str);
}

static PyObject *fkc_py_bytes_or_none(const uint8_t *p, int32_t len)
{
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)len);
}

static PyObject *fkc_py_headers(fkc_int_caches *ints, const fkc_record *rec)
{
    PyObject *list = PyList_New(rec->header_count > 0 ? rec->header_count : 0);
    if (list == NULL || rec->header_count <= 0)
        return list;
    fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
    const uint8_t *k, *v;
    int32_t kl, vl;
    Py_ssize_t i = 0;
    while (i < rec->header_count && fkc_header_next(&it, &k, &kl, &v, &vl)) {
        PyObject *key = fkc_py_header_key(&ints->header_keys[i % FKC_KEY_CACHE_SLOTS], k, kl);
        if (key == NULL)
            goto fail;
        PyObject *value = fkc_py_bytes_or_none(v, vl);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyList_SET_ITEM(list, i, pair);
        i++;
    }
    if (i != rec->header_count) {
        /* Cannot happen after phase 1 validated the headers; never leave NULL slots. */
        Py_SET_SIZE(list, i);
        PyErr_SetString(PyExc_SystemError, "fastkc: header list shorter than its count");
        goto fail_no_size;
    }
    return list;
fail:
    Py_SET_SIZE(list, i); /* slots past i are NULL: drop them before freeing */
fail_no_size:
    Py_DECREF(list);
    return NULL;
}

static PyObject *fkc_py_deserialize(PyObject *fn, int full, PyObject *topic, PyObject *headers, PyObject *data)
{
    PyObject *out;
    if (full) {
        PyObject *args[3] = {topic, headers, data};
        out = PyObject_Vectorcall(fn, args, 3, NULL);
    } else {
        out = PyObject_CallOneArg(fn, data);
    }
    Py_DECREF(data);
    return out;
}

/* Build one ConsumerRecord (or ShareRecord). Returns a new reference or NULL with an exception. */
static PyObject *fkc_py_record(const fkc_build_ctx *b, fkc_int_caches *ints, const fkc_record *rec)
{
    PyObject *r;
    const Py_ssize_t slots = b->share ? 14 : 13;
    if (b->untrack) {
        /* Allocated untracked from the start (what tp_alloc + untrack would
         * leave, without linking into and out of the GC list per record).
         * PyObject_GC_NewVar sets the type (a new reference for heap types,
         * as tp_alloc does) and the size; the slots are zeroed here. */
        r = (PyObject *)PyObject_GC_NewVar(PyTupleObject, b->record_type, slots);
        if (r == NULL)
            return NULL;
        memset(((PyTupleObject *)r)->ob_item, 0, (size_t)slots * sizeof(PyObject *));
    } else {
        r = b->record_type->tp_alloc(b->record_type, slots);
        if (r == NULL)
            return NULL;
    }
    /* Slots are NULL until set; tuple dealloc tolerates NULL items, so an
     * early return after Py_DECREF(r) is safe. */
    PyObject *headers = fkc_py_headers(ints, rec);
    if (headers == NULL)
        goto fail;
    PyObject *v;
    Py_INCREF(b->topic);
    PyTuple_SET_ITEM(r, 0, b->topic);
    Py_INCREF(b->partition);
    PyTuple_SET_ITEM(r, 1, b->partition);
    if ((v = fkc_py_int_cached(&ints->leader_epoch, rec->leader_epoch)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 2, v);
    if ((v = PyLong_FromLongLong(rec->offset)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 3, v);
    if (rec->timestamp_type < 0) {
        /* magic 0: kafka-python yields None for both timestamp fields */
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 4, Py_None);
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 5, Py_None);
    } else {
        if ((v = fkc_py_int_cached(&ints->timestamp, rec->timestamp)) == NULL)
            goto fail_headers;
        PyTuple_SET_ITEM(r, 4, v);
        if ((v = fkc_py_int_cached(&ints->timestamp_type, rec->timestamp_type)) == NULL)
            goto fail_headers;
        PyTuple_SET_ITEM(r, 5, v);
    }
    if ((v = fkc_py_bytes_or_none(rec->key, rec->key_len)) == NULL)
        goto fail_headers;
    if (b->key_fn != NULL && (v = fkc_py_deserialize(b->key_fn, b->key_full, b->topic, headers, v)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 6, v);
    if ((v = fkc_py_bytes_or_none(rec->value, rec->value_len)) == NULL)
        goto fail_headers;
    if (b->value_fn != NULL && (v = fkc_py_deserialize(b->value_fn, b->value_full, b->topic, headers, v)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 7, v);
    PyTuple_SET_ITEM(r, 8, headers); /* steals */
    headers = NULL;
    if (rec->magic == 2) {
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 9, Py_None);
    } else {
        if ((v = PyLong_FromUnsignedLong(rec->checksum)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(r, 9, v);
    }
    if ((v = fkc_py_int_cached(&ints->key_size, rec->key_len)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 10, v);
    if ((v = fkc_py_int_cached(&ints->value_size, rec->value_len)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 11, v);
    if ((v = fkc_py_int_cached(&ints->header_size, rec->header_size)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 12, v);
    if (b->share) {
        if ((v = fkc_py_int_cached(&ints->delivery_count, rec->delivery_count)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(r, 13, v);
    }
    if (b->untrack)
        PyObject_GC_UnTrack(PyTuple_GET_ITEM(r, 8)); /* the headers list */
    return r;
fail_headers:
    Py_XDECREF(headers);
fail:
    Py_DECREF(r);
    return NULL;
}

/* Append records [0, count) to a new list. On failure returns NULL; *built
 * tells how many were made (for the error path the caller may rebuild). */
static PyObject *fkc_py_build_list(const fkc_build_ctx *b, const fkc_decode_result *res, size_t count)
{
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL)
        return NULL;
    fkc_int_caches ints;
    memset(&ints, 0, sizeof ints);
    for (size_t i = 0; i < count; i++) {
        PyObject *rec = fkc_py_record(b, &ints, &res->records[i]);
        if (rec == NULL) {
            fkc_int_caches_clear(&ints);
            Py_SET_SIZE(list, (Py_ssize_t)i);
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, rec);
    }
    fkc_int_caches_clear(&ints);
    return list;
}

/* A record like `src` (its tuple type and size) with slot indexes[k]
 * holding items[k] (borrowed: the copy takes its own references), k <
 * count; the batch deserializers' rebuild (fastkc/deserializers.py). Made by
 * the type's tp_alloc, so GC-tracked: the new items may be anything. A new
 * reference, or NULL with an exception. The caller checked src's type and
 * size and each index. */
static PyObject *fkc_py_record_with(PyObject *src, const Py_ssize_t *indexes, PyObject *const *items,
                                    Py_ssize_t count)
{
    PyTypeObject *type = Py_TYPE(src);
    const Py_ssize_t slots = PyTuple_GET_SIZE(src);
    PyObject *r = type->tp_alloc(type, slots);
    if (r == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < slots; i++) {
        PyObject *v = PyTuple_GET_ITEM(src, i);
        Py_INCREF(v);
        PyTuple_SET_ITEM(r, i, v);
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *old = PyTuple_GET_ITEM(r, indexes[k]);
        Py_INCREF(items[k]);
        PyTuple_SET_ITEM(r, indexes[k], items[k]);
        Py_DECREF(old);
    }
    return r;
}

#endif /* FKC_PYBUILD_H */
