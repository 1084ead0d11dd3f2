/* campaign/store.h — where a campaign's findings go: stored in DIR/findings (triage's
 * af_finding_store), counted in the bucket their raw signature minimised into
 * (DIR/rawmap), or deferred to DIR/pending for the campaign to minimise once.
 * rawmap entries and pending verdicts are small binary files (a header of magic and
 * part sizes, so a file written by another build reads as absent), replaced atomically
 * (util/fsutil.h). */
#ifndef ATTNFUZZ_CAMPAIGN_STORE_H
#define ATTNFUZZ_CAMPAIGN_STORE_H

#include "campaign/session.h"
#include "judge/evidence.h"

/* Store (or defer, per mode) a verdict obtained elsewhere, e.g. a crash seen by the
 * parent. Returns like af_session_result.stored (-1: nothing to store), or
 * AF_SESSION_STORE_FAILED when a file could not be written: s->store_error says which
 * and why (nothing is half written: files are replaced atomically, util/fsutil.h).
 * AF_STORE_FUZZ with defer_new: the raw signature is looked up in DIR/rawmap; a known
 * one bumps the count of the bucket it minimised into (bucket = that bucket, returns
 * 0); a new one goes to DIR/pending (bucket = the raw id, returns 2). */
#define AF_SESSION_STORE_FAILED (-2)
int af_session_store(af_session *s, const af_case *c, const af_verdict *v, af_store_mode mode, const af_case *original,
                     const af_heatmap *heatmap, const af_leak_matrix *leaks, char bucket[AF_BUCKET_ID_LEN + 1]);

/* ---- raw signature -> bucket (DIR/rawmap) ------------------------------------------- */

typedef struct {
    char bucket[AF_BUCKET_ID_LEN + 1]; /* where the raw signature's findings are counted */
    af_case best;                      /* the stored (minimised) case of that bucket */
    af_verdict verdict;                /* its verdict: af_finding_store(best, verdict) bumps */
} af_rawmap_entry;

/* 0 when DIR/rawmap/<raw_id> exists and is readable, else -1. */
int af_rawmap_get(const char *dir, const char *raw_id, af_rawmap_entry *e);
/* Write it atomically (rename). 0 or -1 with why (path and reason). */
int af_rawmap_put(const char *dir, const char *raw_id, const af_rawmap_entry *e, char *why, size_t cap);
/* The verdict a pending finding had when found (PATH.case -> PATH.verdict). 0 or -1. */
int af_pending_verdict(const char *case_path, af_verdict *v);
/* PATH.case -> PATH.verdict (the file af_pending_verdict reads). */
void af_pending_verdict_path(const char *case_path, char *out, size_t cap);

#endif
