/* judge/signature.h — the number-free identity of a finding, and its dedup bucket.
 *
 * Signature = verdict kind | backend[:engine] | tensor | config class. It never holds a
 * measured number (error, ratio, seed, exact lengths), so two runs of the same bug land
 * in the same bucket whatever their data. Example:
 *   leak|planted:window_off_by_one|O|fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd,fwd,sq=skv
 *
 */
#ifndef ATTNFUZZ_JUDGE_SIGNATURE_H
#define ATTNFUZZ_JUDGE_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>
#include "model/case.h"
#include "judge/verdict.h"

#define AF_BUCKET_ID_LEN 12
#define AF_SIGNATURE_MAX 512

/* ---- signatures -------------------------------------------------------------- */

/* Coarse, number-free description of the case: dtype, mask kind + alignment, window
 * sides bounded, padding (none|padding|thd), GQA class, d_qk vs d_v, head-dim class and
 * alignment, layout + packing/own K/V and dO layouts/gaps/paging, cp, fwd|bwd, sq vs skv. Returns the length
 * the full text needs (like snprintf). */
size_t af_config_class(const af_case *c, char *buf, size_t cap);
/* The full signature (see top of file). Tensor is "-" when the verdict has no finding
 * (crash, hang, declined...). Returns the length the full text needs. */
size_t af_signature(const af_case *c, const af_verdict *v, char *buf, size_t cap);
/* The finding's identity: the signature without the config class,
 * "kind|backend[:engine]|tensor". The minimiser keeps it while it simplifies the case
 * (layout, mask, dtype ... may change); the bucket is the signature of the minimised
 * case. Returns the length the full text needs. */
size_t af_finding_identity(const af_case *c, const af_verdict *v, char *buf, size_t cap);
/* 12 hex digits of FNV-1a 64 of the signature, NUL-terminated (out holds 13 bytes). */
void af_bucket_id(const char *signature, char out[AF_BUCKET_ID_LEN + 1]);

#endif
