/* campaign/provenance.h — DIR/provenance.json: what made this campaign directory, so
 * that `attnfuzz triage DIR` rebuilds reports that say it (triage/report.h).
 *
 * One JSON object {"format_version": 1, "runs": [RUN, ...]}, one RUN per run of the
 * campaign (a resume appends one), oldest first. Keys of a RUN (stable; a value that is
 * not known is null):
 *   attnfuzz_version, git_commit   this build (util/version.h)
 *   command_line    the command as typed, quoted for sh ("attnfuzz campaign --time 5 ...")
 *   arguments       its words, an array
 *   seed            the --seed that replays this run's stream, as a decimal string
 *   seed_given      whether --seed was given (else it was drawn from the clock and pid)
 *   host, gpu, nvidia_driver, cuda_driver, cuda_runtime, cudnn   util/hostinfo.h
 *   backend, engine, mode, jobs
 *   target          a worker:NAME backend's hello: {name, device, versions}, else null
 *   start_time_utc, end_time_utc   ISO 8601 (end null while it runs, or when it was killed)
 *   outcome         "clean" | "findings" | "interrupted" | "backend_lost" | "error" (null while it
 *                   runs)
 *   successful      the run completed (clean or findings), null while it runs
 * Written atomically (util/fsutil.h); a file that does not parse is replaced (said on
 * stderr by the caller through why). */
#ifndef ATTNFUZZ_CAMPAIGN_PROVENANCE_H
#define ATTNFUZZ_CAMPAIGN_PROVENANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t;

typedef struct {
    const char *const *argv; /* the command's words ("attnfuzz", "campaign", ...), NULL = unknown */
    int argc;
    uint64_t seed;
    bool seed_given;
    const char *backend, *engine, *mode;
    int jobs;
    double start_unix;
    const struct json_t *target_hello; /* a worker's hello, or NULL */
} af_provenance_run;

/* Append this run (end unknown) to DIR/provenance.json. 0 or -1 with why. */
int af_provenance_begin(const char *dir, const af_provenance_run *run, char *why, size_t cap);
/* Close the last run: end time, outcome, successful; target_hello (when not NULL) replaces
 * its target. 0 or -1 with why. */
int af_provenance_end(const char *dir, double end_unix, const char *outcome, bool successful,
                      const struct json_t *target_hello, char *why, size_t cap);

/* attnfuzz merge: OUT/provenance.json gets the runs of every dirs[i]/provenance.json (n of
 * them) after its own, each run once (an identical run already there is not added). 0 or
 * -1 with why. */
int af_provenance_merge(const char *out, const char *const *dirs, int n, char *why, size_t cap);

#endif
