/* Arrow IPC data files, as the datasets library caches each split
 * (<builder>-<split>.arrow: the stream format, pyarrow's
 * RecordBatchStreamWriter) and as users save tables (the file format,
 * "ARROW1" ... footer ... "ARROW1"). A stream is a Schema message, then
 * dictionary and record batches, each message a FlatBuffers header and a
 * body; a file wraps a stream and lists its batches in a footer, which is
 * what this reader follows, checking that the stream's own schema agrees. */
#include <inttypes.h>
#include <string.h>

#include "core/error.h"
#include "data/arrow.h"

/* Message.fbs: Message's slots and MessageHeader's members; File.fbs's
 * Footer and Block. */
enum { MESSAGE_VERSION = 0, MESSAGE_HEADER_TYPE = 1, MESSAGE_HEADER = 2,
       MESSAGE_BODY_LENGTH = 3 };
enum { HEADER_SCHEMA = 1, HEADER_DICTIONARY = 2, HEADER_RECORD_BATCH = 3 };
enum { FOOTER_SCHEMA = 1, FOOTER_DICTIONARIES = 2, FOOTER_RECORD_BATCHES = 3 };
#define BLOCK_BYTES 24 /* offset (int64), metadata length (int32, padded), body length */
#define METADATA_V4 3  /* Arrow 0.8: the oldest layout this reader knows */
#define METADATA_V5 4

#define CONTINUATION 0xFFFFFFFFu
static const char MAGIC[6] = {'A', 'R', 'R', 'O', 'W', '1'};
/* "ARROW1" and 2 bytes of padding open a file; its footer's length and
 * "ARROW1" close it. */
#define FILE_HEAD 8
#define FILE_TAIL 10

/* The table may grow to this many bytes per byte of the file (and a few
 * MiB more): far above any real file's ratio, far below what a hostile
 * one would have it allocate. */
#define BYTES_PER_FILE_BYTE 4096
#define BUDGET_SLACK ((size_t)16 << 20)

/* One encapsulated message: its header table and its body. */
typedef struct message {
    int64_t header_type;
    ct__fb_table header;
    const uint8_t *body;
    size_t body_len;
    size_t meta_len; /* prefix and padded metadata, as a file's Block counts them */
    size_t end;      /* where the next message starts */
} message;

static const char *header_name(int64_t type)
{
    static const char *const NAMES[] = {"NONE", "Schema", "DictionaryBatch", "RecordBatch",
                                        "Tensor", "SparseTensor"};
    return type >= 0 && type < 6 ? NAMES[type] : "unknown";
}

/* The message at pos of buf[0..len): *m filled, or *end set at the end of
 * the stream (its end marker, or the end of the data). */
static ct_status read_message(const char *path, const uint8_t *buf, size_t len, size_t pos,
                              message *m, int *end)
{
    uint32_t word;
    size_t start = pos, meta;
    int64_t version, body_len;
    ct__fb_table msg;
    *end = 0;
    if (pos == len) {
        *end = 1; /* no end-of-stream marker: the data's end is the stream's */
        return CT_OK;
    }
    if (len - pos < 4)
        return ct__error(CT_ERR_FORMAT, "%s: %zu stray bytes at byte %zu where a message "
                         "should start (a truncated file?)", path, len - pos, pos);
    /* Arrow >= 0.15 writes a continuation word, then the length; older
     * writers the length alone. */
    word = ct__fb_le32(buf + pos);
    pos += 4;
    if (word == CONTINUATION) {
        if (len - pos < 4)
            return ct__error(CT_ERR_FORMAT, "%s: the file ends inside the length of the "
                             "message at byte %zu (a truncated file?)", path, start);
        word = ct__fb_le32(buf + pos);
        pos += 4;
    }
    if (word == 0) {
        *end = 1;
        return CT_OK;
    }
    if (word > INT32_MAX || word > len - pos)
        return ct__error(CT_ERR_FORMAT, "%s: the message at byte %zu says %" PRIu32 " bytes of "
                         "metadata, past the end of the file (a truncated file, or not Arrow "
                         "data?)", path, start, word);
    meta = word;
    if (ct__fb_root(buf + pos, meta, &msg) != CT__FB_OK ||
        ct__fb_scalar(&msg, MESSAGE_VERSION, 2, 1, 0, &version) < 0 ||
        ct__fb_scalar(&msg, MESSAGE_HEADER_TYPE, 1, 0, 0, &m->header_type) < 0 ||
        ct__fb_scalar(&msg, MESSAGE_BODY_LENGTH, 8, 1, 0, &body_len) < 0 ||
        ct__fb_table_field(&msg, MESSAGE_HEADER, &m->header) != CT__FB_OK)
        return ct__error(CT_ERR_FORMAT, "%s: the message at byte %zu is malformed (not Arrow "
                         "data?)", path, start);
    if (version < METADATA_V4 || version > METADATA_V5)
        return ct__error(CT_ERR_FORMAT, "%s: the message at byte %zu is of Arrow metadata "
                         "version V%d; this reader reads V4 (Arrow 0.8) to V5", path, start,
                         (int)version + 1);
    pos += meta;
    if (body_len < 0 || (uint64_t)body_len > len - pos)
        return ct__error(CT_ERR_FORMAT, "%s: the message at byte %zu says a body of %" PRId64
                         " bytes, past the end of the file (a truncated file?)", path, start,
                         body_len);
    m->body = buf + pos;
    m->body_len = (size_t)body_len;
    m->meta_len = pos - start;
    m->end = pos + (size_t)body_len;
    return CT_OK;
}

/* A dictionary or record batch message of either format. */
static ct_status read_batch(ct__arrow_reader *r, const message *m)
{
    if (m->header_type == HEADER_DICTIONARY)
        return ct__arrow_dictionary_batch(r, &m->header, m->body, m->body_len);
    if (m->header_type == HEADER_RECORD_BATCH)
        return ct__arrow_record_batch(r, &m->header, m->body, m->body_len);
    if (m->header_type == HEADER_SCHEMA)
        return ct__error(CT_ERR_FORMAT, "%s: a second Schema message, after %zu record batches",
                         r->path, r->batch);
    return ct__error(CT_ERR_FORMAT, "%s: a message of type %s, where record batches were "
                     "expected", r->path, header_name(m->header_type));
}

/* The stream's first message, which must be its schema; *next is where the
 * message after it starts. */
static ct_status read_stream_schema(ct__arrow_reader *r, const uint8_t *buf, size_t len,
                                    size_t *next)
{
    message m;
    int end;
    ct_status st = read_message(r->path, buf, len, 0, &m, &end);
    if (st != CT_OK)
        return st;
    if (end)
        return ct__error(CT_ERR_FORMAT, "%s: no schema: the stream ends before its first "
                         "message", r->path);
    if (m.header_type != HEADER_SCHEMA)
        return ct__error(CT_ERR_FORMAT, "%s: the stream starts with a message of type %s, "
                         "not its schema", r->path, header_name(m.header_type));
    *next = m.end;
    return ct__arrow_schema_read(&r->schema, &m.header, r->path);
}

static ct_status read_stream(ct__arrow_reader *r, const uint8_t *buf, size_t len)
{
    size_t pos = 0;
    ct_status st = read_stream_schema(r, buf, len, &pos);
    if (st == CT_OK)
        st = ct__arrow_bind(r);
    while (st == CT_OK) {
        message m;
        int end;
        if ((st = read_message(r->path, buf, len, pos, &m, &end)) != CT_OK || end)
            break;
        st = read_batch(r, &m);
        pos = m.end;
    }
    return st;
}

/* The message a footer's Block points at, which must be where and as long
 * as the block says, and of the kind its list holds. */
static ct_status read_block(ct__arrow_reader *r, const uint8_t *buf, size_t footer_start,
                            const ct__fb_vector *blocks, size_t k, int64_t want)
{
    const uint8_t *e = ct__fb_vector_elem(blocks, k);
    int64_t offset = (int64_t)ct__fb_le64(e), body = (int64_t)ct__fb_le64(e + 16);
    int32_t meta = (int32_t)ct__fb_le32(e + 8);
    const char *list = want == HEADER_RECORD_BATCH ? "record batch" : "dictionary";
    message m;
    int end = 0;
    ct_status st;
    if (offset < FILE_HEAD || (uint64_t)offset >= footer_start || meta <= 0 || body < 0)
        return ct__error(CT_ERR_FORMAT, "%s: the footer's %s %zu points outside the file's "
                         "messages (at byte %" PRId64 ")", r->path, list, k, offset);
    /* the message must end before the footer, as long as the block says */
    if ((st = read_message(r->path, buf, footer_start, (size_t)offset, &m, &end)) != CT_OK)
        return st;
    if (end || m.meta_len != (size_t)meta || m.body_len != (uint64_t)body)
        return ct__error(CT_ERR_FORMAT, "%s: the footer's %s %zu (at byte %" PRId64 ") does not "
                         "match the message there", r->path, list, k, offset);
    if (m.header_type != want)
        return ct__error(CT_ERR_FORMAT, "%s: the footer's %s %zu (at byte %" PRId64 ") is a "
                         "message of type %s", r->path, list, k, offset,
                         header_name(m.header_type));
    return read_batch(r, &m);
}

/* The stream inside a file starts with a schema (pyarrow writes it, the
 * JavaScript writer does not) that must say what the footer's does. */
static ct_status check_stream_schema(ct__arrow_reader *r, const uint8_t *buf, size_t end)
{
    ct__arrow_schema s = {0};
    message m;
    int at_end;
    ct_status st = read_message(r->path, buf, end, FILE_HEAD, &m, &at_end);
    if (st != CT_OK || at_end || m.header_type != HEADER_SCHEMA)
        return st;
    if ((st = ct__arrow_schema_read(&s, &m.header, r->path)) == CT_OK &&
        !ct__arrow_schema_same(&s, &r->schema))
        st = ct__error(CT_ERR_FORMAT, "%s: the footer's schema and the stream's differ",
                       r->path);
    ct__arrow_schema_free(&s);
    return st;
}

static ct_status read_file(ct__arrow_reader *r, const uint8_t *buf, size_t len)
{
    ct__fb_table footer, schema;
    ct__fb_vector dicts, batches;
    size_t footer_len, footer_start;
    ct_status st;
    if (len < FILE_HEAD + FILE_TAIL || memcmp(buf + len - 6, MAGIC, 6) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: an Arrow file without its closing \"ARROW1\" (a "
                         "truncated file?)", r->path);
    footer_len = ct__fb_le32(buf + len - FILE_TAIL);
    if (footer_len > len - FILE_HEAD - FILE_TAIL)
        return ct__error(CT_ERR_FORMAT, "%s: the footer's length (%zu bytes) is larger than "
                         "the file", r->path, footer_len);
    footer_start = len - FILE_TAIL - footer_len;
    if (ct__fb_root(buf + footer_start, footer_len, &footer) != CT__FB_OK ||
        ct__fb_table_field(&footer, FOOTER_SCHEMA, &schema) != CT__FB_OK ||
        ct__fb_vector_field(&footer, FOOTER_DICTIONARIES, BLOCK_BYTES, &dicts) < 0 ||
        ct__fb_vector_field(&footer, FOOTER_RECORD_BATCHES, BLOCK_BYTES, &batches) < 0)
        return ct__error(CT_ERR_FORMAT, "%s: the file's footer is malformed", r->path);
    if ((st = ct__arrow_schema_read(&r->schema, &schema, r->path)) != CT_OK ||
        (st = check_stream_schema(r, buf, footer_start)) != CT_OK ||
        (st = ct__arrow_bind(r)) != CT_OK)
        return st;
    /* every dictionary first: a file's batches may use any of them */
    for (size_t k = 0; k < dicts.n; k++)
        if ((st = read_block(r, buf, footer_start, &dicts, k, HEADER_DICTIONARY)) != CT_OK)
            return st;
    for (size_t k = 0; k < batches.n; k++)
        if ((st = read_block(r, buf, footer_start, &batches, k, HEADER_RECORD_BATCH)) != CT_OK)
            return st;
    return CT_OK;
}

ct_status ct__table_read_arrow(ct_table *t, const char *path, const char *bytes, size_t len)
{
    const uint8_t *buf = (const uint8_t *)bytes;
    ct__arrow_reader r;
    ct_status st;
    memset(&r, 0, sizeof r);
    r.path = path;
    r.table = t;
    r.budget = len > (SIZE_MAX - BUDGET_SLACK) / BYTES_PER_FILE_BYTE
                   ? SIZE_MAX : len * BYTES_PER_FILE_BYTE + BUDGET_SLACK;
    if (len >= FILE_HEAD && memcmp(buf, MAGIC, 6) == 0)
        st = read_file(&r, buf, len);
    else
        st = read_stream(&r, buf, len);
    ct__arrow_reader_free(&r);
    return st;
}
