/* The scratch folder the C suites write their files into: one at a time, made
 * fresh by a fixture (or a test) and removed with everything in it. Every
 * suite that needs a folder uses this one, so the runner leaves nothing in
 * /tmp behind. */
#ifndef CT_TESTS_SCRATCH_H
#define CT_TESTS_SCRATCH_H

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

/* Write text to path (made or truncated); fails the test if it cannot. */
void write_text(const char *path, const char *text);

/* Whether anything (file, folder, link target) exists at path. */
int path_exists(const char *path);

#endif
