/* The scratch folder the C suites write their files into: one at a time, made
 * fresh by a fixture (or a test) and removed with everything in it. Every
 * suite that needs a folder uses this one, so the runner leaves nothing in
 * /tmp behind. */
#ifndef CT_TESTS_SCRATCH_H
#define CT_TESTS_SCRATCH_H

#include <stddef.h>

/* The folder's path: empty until scratch_make, again after scratch_remove. */
extern char scratch_dir[64];

/* Make a new /tmp/ct_check_XXXXXX folder (fails the test if it cannot). As
 * an unchecked fixture it is made once before a TCase's tests fork, and all
 * of them see it. */
void scratch_make(void);

/* Remove the folder and all in it, if one was made. */
void scratch_remove(void);

/* scratch_dir/name, in one of 8 rotating buffers, so that a call may take
 * several paths at once. */
const char *scratch_at(const char *name);

/* A path under scratch_dir exactly len bytes long (len < 4096, at least
 * scratch_dir's length + 2), of folder names 200 bytes or shorter; one
 * buffer, overwritten by the next call. Nothing is made. */
const char *scratch_long_path(size_t len);

/* Write text to path (made or truncated); fails the test if it cannot. */
void write_text(const char *path, const char *text);

/* How many entries the folder holds besides . and .. (fails the test if it
 * cannot be listed). */
int entries_in(const char *dir);

/* Whether anything (file, folder, link target) exists at path. */
int path_exists(const char *path);

#endif
