/* util/datadir.h — where attnfuzz finds its data (corpora/, policies/, python/) and an
 * install's plugins, from any working directory.
 *
 * A relative name such as "corpora/seed" is looked for, in order, at
 *   1. $ATTNFUZZ_DATA_DIR/NAME                 (util/config.h; unset or empty: skipped)
 *   2. NAME                                    (the current directory: a checkout, as before)
 *   3. <bindir>/../share/attnfuzz/NAME         (an install: cmake --install build --prefix P)
 *   4. <bindir>/../NAME                        (a build folder inside the checkout: build/attnfuzz)
 * where <bindir> is the running binary's folder (/proc/self/exe). The first that exists
 * wins; every candidate is recorded so that an error can name each place looked. No state
 * is kept between calls. */
#ifndef ATTNFUZZ_UTIL_DATADIR_H
#define ATTNFUZZ_UTIL_DATADIR_H

#include <limits.h>
#include <stddef.h>

#define AF_DATADIR_MAX_CANDIDATES 4

/* Where to look: the roots, explicit so that a test can give its own. */
typedef struct {
    const char *data_dir;  /* $ATTNFUZZ_DATA_DIR, or NULL */
    char prefix[PATH_MAX]; /* the folder above the binary's ("" = unknown) */
} af_datadir_roots;

/* The candidates of one lookup, in the order they were tried. */
typedef struct {
    char tried[AF_DATADIR_MAX_CANDIDATES][PATH_MAX + 64];
    int n;
} af_datadir_search;

/* This process's roots: $ATTNFUZZ_DATA_DIR and /proc/self/exe's folder's parent. */
void af_datadir_roots_here(af_datadir_roots *roots);

/* The folder above the running binary's (bin/attnfuzz -> the prefix; build/attnfuzz -> the
 * checkout) into out. 0, or -1 when /proc/self/exe cannot be read. */
int af_datadir_exe_prefix(char *out, size_t cap);

/* Look NAME (relative) up under roots: 0 with the first existing candidate in out (NAME
 * itself for the current directory, so a checkout's paths read as before), or -1 when none
 * exists. search (may be NULL) gets every candidate, in the order they are tried. */
int af_datadir_find_in(const af_datadir_roots *roots, const char *name, char *out, size_t cap,
                       af_datadir_search *search);

/* af_datadir_find_in with this process's roots. */
int af_datadir_find(const char *name, char *out, size_t cap, af_datadir_search *search);

/* "A, B, C": the places a search tried, for one error line. */
void af_datadir_tried(const af_datadir_search *search, char *out, size_t cap);

#endif
