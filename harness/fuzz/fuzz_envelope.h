/* fuzz/fuzz_envelope.h — a backend's envelope, learnt from its declines.
 *
 * The fuzzer draws from every config cell (fuzz_tables.c), whatever a backend serves; a
 * backend declines what it cannot serve. Each run's outcome is noted per cell (dtype x
 * head-dim class of d_qk and of d_v x mask + alignment x window x layout x padding x
 * paged x backward; the head-dim class is the log2 bucket and whether d % 8 == 0). A
 * cell whose last AF_ENVELOPE_LEARN_AFTER outcomes were all declines is outside the
 * envelope: the fuzzer redraws instead of running a case there, except one draw in
 * AF_ENVELOPE_EXPLORE, so that a backend that starts serving the cell (a new version) is
 * noticed: one served run puts the cell back inside. One table per fuzzing process
 * (the campaign's, or a libFuzzer worker's), for one backend.
 */
#ifndef ATTNFUZZ_FUZZ_ENVELOPE_H
#define ATTNFUZZ_FUZZ_ENVELOPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "model/case.h"

#define AF_ENVELOPE_CELLS       1024
#define AF_ENVELOPE_LEARN_AFTER 3
#define AF_ENVELOPE_EXPLORE     16
#define AF_ENVELOPE_KEY_MAX     112

typedef struct {
    char key[AF_ENVELOPE_KEY_MAX]; /* af_envelope_cell_key */
    long long runs, declines;      /* outcomes noted */
    int decline_streak;            /* declines since the last served run */
    char reason[160];              /* the last decline's reason */
} af_envelope_cell;

typedef struct {
    char backend[AF_NAME_MAX];
    int n_cells;
    af_envelope_cell cells[AF_ENVELOPE_CELLS];
    long long redrawn;  /* draws into an outside cell that were redrawn */
    long long explored; /* draws into an outside cell run anyway (exploration share) */
    long long dropped;  /* outcomes not noted: the table was full */
} af_fuzz_envelope;

void af_envelope_init(af_fuzz_envelope *e, const char *backend);
/* "bf16 dqk=64-127 dv=64-127/odd8 mask=causal_br win=no layout=bshd pad=no paged=no bwd=yes":
 * "/odd8" marks d % 8 != 0. */
void af_envelope_cell_key(const af_case *c, char *buf, size_t cap);
/* Note one run of c: declined (reason: the backend's one line) or served. */
void af_envelope_note(af_fuzz_envelope *e, const af_case *c, bool declined, const char *reason);
/* Is c's cell outside the learnt envelope? */
bool af_envelope_outside(const af_fuzz_envelope *e, const af_case *c);
/* Draw decision: true = redraw c (its cell is outside and rnd does not pick it for
 * exploration); counts redrawn / explored. */
bool af_envelope_redraw(af_fuzz_envelope *e, const af_case *c, uint64_t rnd);
/* {"backend":..., "redrawn":N, "explored":N, "cells_seen":N, "outside":[{"cell", "runs",
 *  "declines", "reason"}, ...]} (the cells outside, in the order first seen). */
json_t *af_envelope_json(const af_fuzz_envelope *e);

#endif
