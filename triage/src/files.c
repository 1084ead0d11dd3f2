/* files.c — reading a findings directory that may come from someone else (atomic
 * writes: util/fsutil.h). A bucket's files are read only when they are regular files
 * inside the campaign directory: a finding.case that is a symlink to /etc/passwd, or a
 * bucket directory linked out of DIR, never reaches a report. */
#include "triage/src/triage_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util/fsutil.h"

char *tr_read_in(const char *dir, const char *bucket_dir, const char *name, size_t *len) {
    char path[1200], why[1500];
    snprintf(path, sizeof path, "%s/%s", bucket_dir, name);
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) return NULL; /* optional file absent: nothing to say */
    char *text = NULL;
    if (af_read_file_inside(dir, path, TR_READ_MAX, &text, len, why, sizeof why) != 0) {
        fprintf(stderr, "attnfuzz triage: %s\n", why);
        return NULL;
    }
    return text;
}
