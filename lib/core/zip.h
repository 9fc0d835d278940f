/* Internal: the members of a ZIP archive held in memory, as torch.save
 * writes them (stored, not compressed; ZIP64 records). Nothing is
 * extracted to disk, so member names are only keys. */
#ifndef CT_CORE_ZIP_H
#define CT_CORE_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct ct__zip_member {
    const char *name; /* NUL-terminated copy, valid until ct__zip_free */
    const unsigned char *data; /* into the caller's buffer */
    size_t size;
} ct__zip_member;

typedef struct ct__zip {
    ct__zip_member *members; /* central directory order */
    size_t n;
    char *names;             /* the names, back to back */
    const ct__zip_member **by_name; /* the members sorted by name */
} ct__zip;

/* Read the central directory of buf[0..len) (`what` names it in errors):
 * one disk, at most 2^20 members, each stored (method 0), unencrypted,
 * its local header and data inside the buffer before the directory, the
 * local name equal to the directory's, the CRC-32 equal to the data's, no
 * name twice or with a NUL. CT_ERR_FORMAT naming the member and the rule;
 * CT_ERR_UNSUPPORTED for a compressed or encrypted member. */
ct_status ct__zip_read(const void *buf, size_t len, const char *what, ct__zip *out);
/* The member of that name, NULL when absent. */
const ct__zip_member *ct__zip_find(const ct__zip *zip, const char *name);
void ct__zip_free(ct__zip *zip);

#endif
