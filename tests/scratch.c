/* The suites' shared scratch folder: see scratch.h. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scratch.h"

char scratch_dir[64];

void scratch_make(void)
{
    strcpy(scratch_dir, "/tmp/ct_check_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch_dir));
}

void scratch_remove(void)
{
    char cmd[128];
    if (!scratch_dir[0])
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch_dir);
    ck_assert_int_eq(system(cmd), 0);
    scratch_dir[0] = '\0';
}

const char *scratch_at(const char *name)
{
    static char path[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof path[k], "%s/%s", scratch_dir, name);
    return path[k];
}

const char *scratch_long_path(size_t len)
{
    static char path[4096];
    size_t n = strlen(scratch_dir);
    ck_assert(len < sizeof path && len >= n + 2);
    memcpy(path, scratch_dir, n);
    while (n < len) {
        size_t name = len - n - 1 < 200 ? len - n - 1 : 200;
        if (len - n - 1 - name == 1) /* no room left for a "/x" after it */
            name--;
        path[n++] = '/';
        memset(path + n, 'd', name);
        n += name;
    }
    path[n] = '\0';
    return path;
}

void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: cannot create", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    ck_assert_msg(d != NULL, "%s: cannot list", dir);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

int path_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}
