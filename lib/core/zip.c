/* Reading a ZIP archive in memory: the end record (ZIP64 when present),
 * the central directory, each member's local header, its CRC-32. Only
 * what torch.save writes is accepted: stored members on one disk. */
#include "core/zip.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define MAX_MEMBERS ((size_t)1 << 20)
#define END_SIZE 22
#define LOCATOR_SIZE 20
#define END64_SIZE 56
#define CENTRAL_SIZE 46
#define LOCAL_SIZE 30

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ---- CRC-32 (IEEE 802.3, reflected), eight bytes a step --------------------- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = crc_table[t - 1][i] >> 8 ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    pthread_once(&crc_once, crc_init);
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t lo = c ^ rd32(p), hi = rd32(p + 4);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][lo >> 8 & 0xFF] ^
            crc_table[5][lo >> 16 & 0xFF] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^
            crc_table[2][hi >> 8 & 0xFF] ^ crc_table[1][hi >> 16 & 0xFF] ^ crc_table[0][hi >> 24];
    }
    while (n--)
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ c >> 8;
    return c ^ 0xFFFFFFFFu;
}

/* ---- the directory ---------------------------------------------------------- */

typedef struct directory {
    size_t count, offset, size; /* members, where the central directory is */
    size_t end;                 /* where the end records begin */
} directory;

/* The end of central directory record, and its ZIP64 form when the
 * locator before it points to one. */
static ct_status find_directory(const unsigned char *b, size_t len, const char *what,
                                directory *d)
{
    size_t pos, lowest;
    if (len < END_SIZE)
        return ct__error(CT_ERR_FORMAT, "%s: %zu bytes is too short for a ZIP archive", what, len);
    lowest = len - END_SIZE > 65535 ? len - END_SIZE - 65535 : 0;
    for (pos = len - END_SIZE;; pos--) {
        if (rd32(b + pos) == SIG_END && pos + END_SIZE + rd16(b + pos + 20) == len)
            break;
        if (pos == lowest)
            return ct__error(CT_ERR_FORMAT, "%s: not a ZIP archive (no end of central directory "
                                            "record)", what);
    }
    if (rd16(b + pos + 4) != 0 || rd16(b + pos + 6) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: a ZIP archive on several disks", what);
    d->count = rd16(b + pos + 10);
    d->size = rd32(b + pos + 12);
    d->offset = rd32(b + pos + 16);
    d->end = pos;
    if (pos >= LOCATOR_SIZE && rd32(b + pos - LOCATOR_SIZE) == SIG_LOCATOR64) {
        const unsigned char *loc = b + pos - LOCATOR_SIZE;
        uint64_t at = rd64(loc + 8);
        if (rd32(loc + 4) != 0 || rd32(loc + 16) > 1)
            return ct__error(CT_ERR_FORMAT, "%s: a ZIP archive on several disks", what);
        if (at > pos - LOCATOR_SIZE || pos - LOCATOR_SIZE - at < END64_SIZE ||
            rd32(b + at) != SIG_END64)
            return ct__error(CT_ERR_FORMAT, "%s: the ZIP64 locator points to no ZIP64 end record",
                             what);
        if (rd32(b + at + 16) != 0 || rd32(b + at + 20) != 0)
            return ct__error(CT_ERR_FORMAT, "%s: a ZIP archive on several disks", what);
        if (rd64(b + at + 32) > SIZE_MAX || rd64(b + at + 40) > SIZE_MAX ||
            rd64(b + at + 48) > SIZE_MAX)
            return ct__error(CT_ERR_FORMAT, "%s: ZIP64 sizes out of range", what);
        d->count = (size_t)rd64(b + at + 32);
        d->size = (size_t)rd64(b + at + 40);
        d->offset = (size_t)rd64(b + at + 48);
        d->end = (size_t)at;
    }
    if (d->count > MAX_MEMBERS)
        return ct__error(CT_ERR_FORMAT, "%s: %zu members (at most %zu are read)", what, d->count,
                         MAX_MEMBERS);
    if (d->offset > d->end || d->size > d->end - d->offset)
        return ct__error(CT_ERR_FORMAT, "%s: the central directory (%zu bytes at %zu) is not "
                                        "inside the archive", what, d->size, d->offset);
    return CT_OK;
}

/* The ZIP64 extra field's values for those of size, compressed size and
 * local header offset that the directory entry sets to 0xFFFFFFFF. */
static ct_status zip64_extra(const unsigned char *x, size_t len, uint64_t *vals[3],
                             const char *what, const char *name)
{
    size_t at = 0;
    while (at + 4 <= len) {
        size_t id = rd16(x + at), n = rd16(x + at + 2), k = 0;
        if (n > len - at - 4)
            break;
        if (id == 1)
            for (int v = 0; v < 3; v++) {
                if (*vals[v] != 0xFFFFFFFFu)
                    continue;
                if (k + 8 > n)
                    return ct__error(CT_ERR_FORMAT, "%s: member '%s': a short ZIP64 extra field",
                                     what, name);
                *vals[v] = rd64(x + at + 4 + k);
                k += 8;
            }
        at += 4 + n;
    }
    for (int v = 0; v < 3; v++)
        if (*vals[v] == 0xFFFFFFFFu)
            return ct__error(CT_ERR_FORMAT, "%s: member '%s' needs a ZIP64 extra field it lacks",
                             what, name);
    return CT_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const ct__zip_member *const *)a)->name,
                  (*(const ct__zip_member *const *)b)->name);
}

/* One directory entry at b + *at, into m (its name copied to *names). */
static ct_status read_member(const unsigned char *b, const directory *d, size_t *at,
                             const char *what, char **names, ct__zip_member *m)
{
    const unsigned char *c = b + *at;
    size_t cd_end = d->offset + d->size, nl, el, cl, data;
    uint64_t usize, csize, local, *vals[3] = {&usize, &csize, &local};
    uint32_t crc;
    ct_status st;
    if (cd_end - *at < CENTRAL_SIZE || rd32(c) != SIG_CENTRAL)
        return ct__error(CT_ERR_FORMAT, "%s: the central directory ends early or is corrupt at "
                                        "byte %zu", what, *at);
    nl = rd16(c + 28), el = rd16(c + 30), cl = rd16(c + 32);
    if (cd_end - *at - CENTRAL_SIZE < nl + el + cl)
        return ct__error(CT_ERR_FORMAT, "%s: a directory entry runs past the directory", what);
    memcpy(*names, c + CENTRAL_SIZE, nl);
    (*names)[nl] = '\0';
    m->name = *names;
    *names += nl + 1;
    if (memchr(m->name, '\0', nl))
        return ct__error(CT_ERR_FORMAT, "%s: a member name holds a NUL byte", what);
    crc = rd32(c + 16);
    csize = rd32(c + 20), usize = rd32(c + 24), local = rd32(c + 42);
    if ((usize == 0xFFFFFFFFu || csize == 0xFFFFFFFFu || local == 0xFFFFFFFFu) &&
        (st = zip64_extra(c + CENTRAL_SIZE + nl, el, vals, what, m->name)) != CT_OK)
        return st;
    if (rd16(c + 8) & 1)
        return ct__error(CT_ERR_UNSUPPORTED, "%s: member '%s' is encrypted", what, m->name);
    if (rd16(c + 10) != 0)
        return ct__error(CT_ERR_UNSUPPORTED, "%s: member '%s' is compressed (method %u); "
                                             "torch.save stores members uncompressed",
                         what, m->name, (unsigned)rd16(c + 10));
    if (csize != usize)
        return ct__error(CT_ERR_FORMAT, "%s: member '%s' is stored with two sizes (%llu, %llu)",
                         what, m->name, (unsigned long long)csize, (unsigned long long)usize);
    if (local > d->offset || d->offset - local < LOCAL_SIZE || rd32(b + local) != SIG_LOCAL)
        return ct__error(CT_ERR_FORMAT, "%s: member '%s': no local header at %llu", what,
                         m->name, (unsigned long long)local);
    data = (size_t)local + LOCAL_SIZE + rd16(b + local + 26) + rd16(b + local + 28);
    if (data > d->offset || usize > d->offset - data)
        return ct__error(CT_ERR_FORMAT, "%s: member '%s' (%llu bytes) runs into the central "
                                        "directory", what, m->name, (unsigned long long)usize);
    if (rd16(b + local + 26) != nl || memcmp(b + local + LOCAL_SIZE, m->name, nl) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: member '%s': the local header names another",
                         what, m->name);
    m->data = b + data;
    m->size = (size_t)usize;
    if (crc32_of(m->data, m->size) != crc)
        return ct__error(CT_ERR_FORMAT, "%s: member '%s' fails its CRC-32 (the file is damaged)",
                         what, m->name);
    *at += CENTRAL_SIZE + nl + el + cl;
    return CT_OK;
}

ct_status ct__zip_read(const void *buf, size_t len, const char *what, ct__zip *z)
{
    const unsigned char *b = buf;
    directory d = {0, 0, 0, 0};
    ct_status st;
    char *names;
    memset(z, 0, sizeof *z);
    if ((st = find_directory(b, len, what, &d)) != CT_OK)
        return st;
    z->members = calloc(d.count ? d.count : 1, sizeof *z->members);
    z->by_name = calloc(d.count ? d.count : 1, sizeof *z->by_name);
    z->names = names = malloc(d.size + 1); /* names are inside the directory */
    if (!z->members || !z->by_name || !names) {
        ct__zip_free(z);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu members", what, d.count);
    }
    for (size_t i = 0, at = d.offset; i < d.count; i++) {
        if ((st = read_member(b, &d, &at, what, &names, &z->members[i])) != CT_OK) {
            ct__zip_free(z);
            return st;
        }
        z->by_name[i] = &z->members[i];
        z->n++;
    }
    qsort(z->by_name, z->n, sizeof *z->by_name, by_name);
    for (size_t i = 1; i < z->n; i++)
        if (!strcmp(z->by_name[i - 1]->name, z->by_name[i]->name)) {
            st = ct__error(CT_ERR_FORMAT, "%s: member '%s' appears twice", what,
                           z->by_name[i]->name);
            ct__zip_free(z);
            return st;
        }
    return CT_OK;
}

const ct__zip_member *ct__zip_find(const ct__zip *z, const char *name)
{
    size_t lo = 0, hi = z->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(z->by_name[mid]->name, name);
        if (c == 0)
            return z->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void ct__zip_free(ct__zip *z)
{
    if (!z)
        return;
    free(z->members);
    free(z->by_name);
    free(z->names);
    memset(z, 0, sizeof *z);
}
