/* TensorBoard event files: TFRecord framing (length, masked CRC-32C of the
 * length, data, masked CRC-32C of the data) around Event protocol buffers
 * encoded by hand — the few fields a scalar needs, in field order, proto3
 * defaults left out, as protobuf's own serializer writes them. */
#include "train/tb_events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/fileio.h"
#include "core/strbuf.h"

struct ct__tb_writer {
    int fd;
    off_t size;        /* bytes of whole records: where the next one goes */
    ct_status failed;  /* sticky: a record could not be written */
    char path[];
};

/* TensorBoard's _global_uid: the writers of this process, from 0. */
static atomic_uint writers_opened;

double ct__tb_wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- protocol buffer wire format ---------------------------------------- */

static void put_varint(ct__strbuf *sb, uint64_t v)
{
    char b[10];
    size_t n = 0;
    do {
        b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    ct__sb_append(sb, b, n);
}

static void put_le(ct__strbuf *sb, uint64_t v, size_t bytes)
{
    char b[8];
    for (size_t i = 0; i < bytes; i++)
        b[i] = (char)(v >> (8 * i));
    ct__sb_append(sb, b, bytes);
}

/* key = field number << 3 | wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32) */
static void put_key(ct__strbuf *sb, unsigned field, unsigned wire)
{
    put_varint(sb, (uint64_t)(field << 3 | wire));
}

static void put_double(ct__strbuf *sb, unsigned field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_key(sb, field, 1);
    put_le(sb, bits, 8);
}

static void put_float(ct__strbuf *sb, unsigned field, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_key(sb, field, 5);
    put_le(sb, bits, 4);
}

static void put_bytes(ct__strbuf *sb, unsigned field, const char *data, size_t len)
{
    put_key(sb, field, 2);
    put_varint(sb, len);
    ct__sb_append(sb, data, len);
}

/* Event fields (tensorboard/compat/proto/event.proto) and Summary's. */
enum { EVENT_WALL_TIME = 1, EVENT_STEP = 2, EVENT_FILE_VERSION = 3, EVENT_SUMMARY = 5 };
enum { SUMMARY_VALUE = 1, VALUE_TAG = 1, VALUE_SIMPLE_VALUE = 2 };

/* ---- records -------------------------------------------------------------- */

static ct_status write_all(int fd, const char *p, size_t n, off_t at)
{
    while (n) {
        ssize_t k = pwrite(fd, p, n, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : ENOSPC;
        p += k;
        n -= (size_t)k;
        at += k;
    }
    return 0;
}

/* Frame the event in `event` and append it. */
static ct_status write_record(ct__tb_writer *w, ct__strbuf *event)
{
    ct__strbuf rec = {0};
    char len_bytes[8];
    uint32_t crc;
    int err;
    if (w->failed)
        return ct__error(w->failed, "%s: an earlier event could not be written", w->path);
    if (event->failed)
        return ct__error_prefix((ct_status)event->failed, "%s: building an event", w->path);
    for (int i = 0; i < 8; i++)
        len_bytes[i] = (char)((uint64_t)event->len >> (8 * i));
    ct__sb_append(&rec, len_bytes, 8);
    crc = ct__crc32c_mask(ct__crc32c(len_bytes, 8));
    put_le(&rec, crc, 4);
    ct__sb_append(&rec, event->data, event->len);
    crc = ct__crc32c_mask(ct__crc32c(event->data, event->len));
    put_le(&rec, crc, 4);
    if (rec.failed) {
        ct__sb_free(&rec);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory framing an event", w->path);
    }
    err = write_all(w->fd, rec.data, rec.len, w->size);
    if (err == 0) {
        w->size += (off_t)rec.len;
        ct__sb_free(&rec);
        return CT_OK;
    }
    ct__sb_free(&rec);
    /* A torn record would end the file for every reader: cut it off. */
    if (ftruncate(w->fd, w->size) != 0) {
        /* nothing more to do: the writer refuses further records anyway */
    }
    w->failed = CT_ERR_IO;
    return ct__error(CT_ERR_IO, "%s: cannot write a TensorBoard event: %s", w->path,
                     strerror(err));
}

ct_status ct__tb_add_scalar(ct__tb_writer *w, const char *tag, double value, int64_t step,
                            double wall_time)
{
    ct__strbuf value_msg = {0}, summary = {0}, event = {0};
    ct_status st;
    CT__CHECK_ARG(w);
    CT__CHECK_ARG(tag);
    put_bytes(&value_msg, VALUE_TAG, tag, strlen(tag));
    put_float(&value_msg, VALUE_SIMPLE_VALUE, (float)value); /* a oneof: written even if 0 */
    put_bytes(&summary, SUMMARY_VALUE, value_msg.data, value_msg.len);
    put_double(&event, EVENT_WALL_TIME, wall_time);
    if (step != 0) { /* proto3 leaves a default out */
        put_key(&event, EVENT_STEP, 0);
        put_varint(&event, (uint64_t)step);
    }
    put_bytes(&event, EVENT_SUMMARY, summary.data, summary.len);
    if (value_msg.failed || summary.failed)
        event.failed = CT_ERR_NOMEM;
    st = write_record(w, &event);
    ct__sb_free(&value_msg);
    ct__sb_free(&summary);
    ct__sb_free(&event);
    return st;
}

ct_status ct__tb_add_log_value(ct__tb_writer *w, const char *key, double value, int64_t step)
{
    ct__strbuf tag = {0};
    char *text;
    ct_status st;
    CT__CHECK_ARG(w);
    CT__CHECK_ARG(key);
    if (!strncmp(key, "eval_", 5))
        ct__sb_printf(&tag, "eval/%s", key + 5);
    else if (!strncmp(key, "test_", 5))
        ct__sb_printf(&tag, "test/%s", key + 5);
    else
        ct__sb_printf(&tag, "train/%s", key);
    if ((st = ct__sb_finish(&tag, "a TensorBoard tag", &text)) != CT_OK)
        return st;
    st = ct__tb_add_scalar(w, text, value, step, ct__tb_wall_time());
    free(text);
    return st;
}

/* ---- the file ------------------------------------------------------------- */

ct_status ct__tb_open(const char *logdir, ct__tb_writer **out)
{
    ct__tb_writer *w;
    ct__strbuf first = {0};
    char host[256];
    size_t cap;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(logdir);
    if (!*logdir)
        return ct__error(CT_ERR_INVALID_ARG, "logging_dir: empty path");
    if ((st = ct__make_dirs(logdir, "logging_dir")) != CT_OK)
        return st;
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    cap = strlen(logdir) + strlen(host) + 96;
    if (!(w = calloc(1, sizeof *w + cap)))
        return ct__error(CT_ERR_NOMEM, "out of memory opening an event file");
    /* A name already taken (another writer of this second, pid and count,
     * e.g. a pid reused) takes the next count rather than overwriting. */
    for (int tries = 0;; tries++) {
        double now = ct__tb_wall_time();
        unsigned uid = atomic_fetch_add(&writers_opened, 1u);
        snprintf(w->path, cap, "%s/events.out.tfevents.%010lld.%s.%ld.%u", logdir,
                 (long long)now, host, (long)getpid(), uid);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0)
            break;
        if (errno != EEXIST || tries == 100) {
            st = ct__error(CT_ERR_IO, "logging_dir: cannot create the event file %s: %s",
                           w->path, strerror(errno));
            free(w);
            return st;
        }
    }
    put_double(&first, EVENT_WALL_TIME, ct__tb_wall_time());
    put_bytes(&first, EVENT_FILE_VERSION, "brain.Event:2", 13);
    st = write_record(w, &first);
    ct__sb_free(&first);
    if (st != CT_OK) {
        close(w->fd);
        unlink(w->path);
        free(w);
        return st;
    }
    *out = w;
    return CT_OK;
}

const char *ct__tb_path(const ct__tb_writer *w)
{
    return w ? w->path : NULL;
}

void ct__tb_close(ct__tb_writer *w)
{
    if (!w)
        return;
    close(w->fd);
    free(w);
}
