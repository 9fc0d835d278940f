/* Internal safetensors reader (mmap, with every check of the reference Rust
 * implementation) and atomic writer, plus bf16/f16 <-> f32 conversions. */
#ifndef CT_CORE_SAFETENSORS_H
#define CT_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* The reference's dtypes, in its order (ascending alignment): the writer
 * sorts tensors by this order, descending, then by name, as it does. */
typedef enum ct__st_dtype {
    CT_ST_BOOL,
    CT_ST_F4,
    CT_ST_F6_E2M3,
    CT_ST_F6_E3M2,
    CT_ST_U8,
    CT_ST_I8,
    CT_ST_F8_E5M2,
    CT_ST_F8_E4M3,
    CT_ST_F8_E8M0,
    CT_ST_F8_E4M3FNUZ,
    CT_ST_F8_E5M2FNUZ,
    CT_ST_I16,
    CT_ST_U16,
    CT_ST_F16,
    CT_ST_BF16,
    CT_ST_I32,
    CT_ST_U32,
    CT_ST_F32,
    CT_ST_C64,
    CT_ST_F64,
    CT_ST_I64,
    CT_ST_U64,
    CT_ST_DTYPE_COUNT
} ct__st_dtype;

/* "F32", "BF16", ...; NULL for a value out of range. */
const char *ct__st_dtype_name(ct__st_dtype dtype);
/* 1 and *out set when name[0..len) is a dtype name (case-sensitive). */
int ct__st_dtype_from_name(const char *name, size_t len, ct__st_dtype *out);
/* Bits per element (F4 is 4, F6_* are 6, BF16 is 16, ...). */
unsigned ct__st_dtype_bits(ct__st_dtype dtype);

/* One tensor. From a file: everything points into the file's mapping or
 * header, valid until ct__st_close; data may be unaligned for files not
 * written in the reference's order (copy or convert, do not cast).
 * To ct__st_save: fill name, dtype, ndim, shape, data and nbytes. */
typedef struct ct__st_tensor {
    const char *name; /* NUL-terminated */
    size_t name_len;  /* bytes; may be 0 when writing (strlen is used) */
    ct__st_dtype dtype;
    size_t ndim;
    const size_t *shape;
    const void *data;
    size_t nbytes; /* == elements x bits / 8 */
    size_t offset; /* read only: start within the data buffer */
} ct__st_tensor;

/* One "__metadata__" entry (strings only, as the format requires). */
typedef struct ct__st_meta {
    const char *key, *value; /* NUL-terminated */
    size_t key_len, value_len; /* may be 0 when writing (strlen is used) */
} ct__st_meta;

typedef struct ct__st_file ct__st_file;

/* Map `path` read-only and validate it completely: header length (at most
 * 100,000,000 bytes) and bounds, UTF-8 JSON object, "__metadata__" as an
 * object of strings, each tensor {dtype, shape, data_offsets}, known dtypes,
 * no duplicate names, offsets contiguous from 0 with no gap or overlap once
 * sorted, sizes equal to shape x dtype (overflow-checked), data ending
 * exactly at the end of the file. CT_ERR_IO when the file cannot be read;
 * CT_ERR_FORMAT naming the file and tensor for anything malformed. */
int ct__st_open(const char *path, ct__st_file **out);
/* The same checks on a buffer the caller keeps alive and unchanged until
 * ct__st_close; `what` names it in error text. */
int ct__st_open_buffer(const void *buf, size_t len, const char *what, ct__st_file **out);
void ct__st_close(ct__st_file *f);

/* Tensors that come from elsewhere (pytorch_model.bin) as a file of them,
 * for the same lookups: name, dtype, ndim, shape, data and nbytes of each
 * (shapes are copied; names and data must live until ct__st_close, which
 * then calls release(keep), also when this fails). Names must be distinct
 * (CT_ERR_FORMAT naming one that is not); sizes are the caller's to check. */
int ct__st_wrap(const char *what, const ct__st_tensor *tensors, size_t n,
                void (*release)(void *keep), void *keep, ct__st_file **out);

/* Tensors in file order (by data offset). */
size_t ct__st_count(const ct__st_file *f);
const ct__st_tensor *ct__st_tensor_at(const ct__st_file *f, size_t i);
/* By name (binary search), NULL if absent. */
const ct__st_tensor *ct__st_find(const ct__st_file *f, const char *name);

/* "__metadata__" entries in file order; *n is 0 when there are none.
 * ct__st_has_metadata tells an absent "__metadata__" from an empty one. */
const ct__st_meta *ct__st_metadata(const ct__st_file *f, size_t *n);
int ct__st_has_metadata(const ct__st_file *f);
/* Value of a metadata key, NULL if absent. */
const char *ct__st_metadata_get(const ct__st_file *f, const char *key);

/* Write a file as the Python safetensors library does, byte for byte:
 * tensors sorted by dtype (descending, in ct__st_dtype order) then name,
 * compact JSON header with "__metadata__" first (omitted when meta is NULL;
 * entries in the order given), padded with spaces to a multiple of 8, then
 * the data. Goes to a temporary file beside `path`, fsync, rename, fsync of
 * the folder: on failure `path` is untouched and no temporary file remains.
 * CT_ERR_INVALID_ARG for duplicate or reserved names, sizes that do not match
 * shape x dtype, sub-byte tensors that end mid-byte, non-UTF-8 strings;
 * CT_ERR_FORMAT when the header would exceed 100,000,000 bytes. */
int ct__st_save(const char *path, const ct__st_tensor *tensors, size_t n,
                const ct__st_meta *meta, size_t n_meta) CT__MUST_USE;

/* Element conversions. bf16 and f16 widen to f32 exactly; f32 -> bf16
 * rounds to nearest even and maps every NaN to 0x7FC0, as PyTorch does.
 * Array forms read and write through memcpy: any alignment is fine. */
float ct__bf16_to_f32(uint16_t h);
float ct__f16_to_f32(uint16_t h);
uint16_t ct__f32_to_bf16(float f);
void ct__bf16_to_f32_n(float *out, const void *in, size_t n);
void ct__f16_to_f32_n(float *out, const void *in, size_t n);
void ct__f32_to_bf16_n(void *out, const float *in, size_t n);

/* A F32, F16, BF16 or F64 tensor as count floats: CT_ERR_FORMAT naming the
 * tensor if count is not its element count or its dtype is another one.
 * `what` (the file) prefixes the error text; may be NULL. */
int ct__st_tensor_to_f32(const ct__st_tensor *t, const char *what, float *out, size_t count);

#endif
