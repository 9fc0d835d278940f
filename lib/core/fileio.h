/* Internal whole-file I/O: read a file into memory, and write one atomically
 * (temporary file in the same folder, fsync, rename, fsync the folder). */
#ifndef CT_CORE_FILEIO_H
#define CT_CORE_FILEIO_H

#include <stddef.h>

#include "core/error.h"

struct stat;
struct ct__strbuf;
/* Open an input for reading without ever blocking in open(): a FIFO, a
 * device, a socket or a directory is refused by name (CT_ERR_IO, "is a
 * FIFO, not a regular file"). The fd (blocking again) or -1 with the error
 * set; *sb is its fstat. */
int ct__open_regular(const char *path, struct stat *sb) CT__MUST_USE;

/* *data is malloc'ed, NUL-terminated (not counted in *len). CT_ERR_IO names
 * the path and the system's reason. max_bytes guards against absurd files. */
ct_status ct__read_file(const char *path, size_t max_bytes, char **data, size_t *len) CT__MUST_USE;

/* Either `path` ends up holding exactly data[0..len) or it is left as it was
 * (and no temporary file remains). */
ct_status ct__write_file_atomic(const char *path, const void *data, size_t len) CT__MUST_USE;

/* Open a temporary file beside `path` (named path.tmp.XXXXXX); *tmp_path is
 * malloc'ed. Used with ct__commit_file for writers that stream. */
ct_status ct__open_temp_beside(const char *path, int *fd, char **tmp_path) CT__MUST_USE;
/* fsync fd, close it, rename tmp_path onto path, fsync the folder. On any
 * failure the temporary file is removed. Always closes fd. */
ct_status ct__commit_file(int fd, const char *tmp_path, const char *path) CT__MUST_USE;
/* fsync a folder, so that renames into it survive a crash (EINVAL, a
 * filesystem that cannot, is not an error). */
ct_status ct__fsync_dir(const char *dir) CT__MUST_USE;
/* Close fd and remove the temporary file (abandoning a write). */
void ct__abandon_file(int fd, const char *tmp_path);
/* ct__write_file_atomic of a text built in sb, which is freed either way.
 * A text whose building failed (out of memory, a string not UTF-8) writes
 * nothing: its error, after "path: what: " ("path: " when what is NULL). */
ct_status ct__write_text_atomic(const char *path, struct ct__strbuf *sb,
                                const char *what) CT__MUST_USE;

/* mkdir -p of dir (mode 0755 for what it makes): CT_ERR_IO, prefixed with
 * `what` ("output_dir", "logging_dir"), naming the part that cannot be
 * made or that exists and is not a folder. */
ct_status ct__make_dirs(const char *dir, const char *what) CT__MUST_USE;

/* A path formatted into buf (size bytes): CT_ERR_INVALID_ARG, naming the
 * path's start, when it does not fit, rather than a cut path that names
 * another file. */
ct_status ct__path_format(char *buf, size_t size, const char *fmt, ...) CT__PRINTF(3, 4)
    CT__MUST_USE;
/* dir/name in new memory (one slash between them); NULL (no error set) when
 * there is none. */
char *ct__join_path(const char *dir, const char *name);
/* For inputs given as a file or as the folder that holds it (a tokenizer's
 * vocab.txt, a model's config.json): *file is path/name when path is a
 * folder, else path itself, in new memory; *is_dir says which (may be
 * NULL). A path that does not exist is CT_ERR_IO "path: reason". */
ct_status ct__file_or_folder(const char *path, const char *name, char **file,
                             int *is_dir) CT__MUST_USE;

#endif
