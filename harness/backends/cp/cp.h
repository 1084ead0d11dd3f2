/* backends/cp/cp.h — the context-parallel (CP) wrapper: a case with cp = SIZE COMM runs
 * as virtual ranks in one process, each rank's kernel call a separate run of an inner
 * backend on that rank's sub-case, and the reassembled global O, LSE, dQ, dK, dV are
 * what the judge sees (docs/cp.md).
 *
 * Every registered backend is wrapped (af_registry_add): with cp = 1 the wrapper
 * forwards every call unchanged; with cp > 1 it splits the case. Planted CP bugs (self
 * test) exist only under the name cp-bug:PLANT:INNER and only while the environment
 * says ATTNFUZZ_CP_PLANT=PLANT, so a case file alone can never enable one.
 */
#ifndef ATTNFUZZ_CP_H
#define ATTNFUZZ_CP_H

#include "backends/backend.h"

typedef enum {
    AF_CP_PLANT_NONE = 0,
    AF_CP_PLANT_LSE_NO_MAX,          /* LSE merge log(sum exp(lse_i)) without subtracting the max */
    AF_CP_PLANT_CHUNK_SWAP,          /* ranks concatenate their chunks as (2cp-1-r, r), masks assume (r, 2cp-1-r) */
    AF_CP_PLANT_NO_HALF_MASK,        /* causal half steps (source rank > rank) run every query row, unmasked */
    AF_CP_PLANT_DKDV_NOT_REDUCED,    /* dK/dV partials of other ranks never reach the owner rank */
    AF_CP_PLANT_WINDOW_LEFT_DROPPED, /* all_gather: the second query chunk's call loses the window's left bound */
    AF_CP_PLANT_KV_REPEAT_TILED,     /* a2a, heads_kv < cp: K/V heads replicated by tiling, not interleaving */
    AF_CP_PLANT_A2A_SKIPPED,         /* a2a: the all-to-all never runs; each rank attends over its local chunks */
    AF_CP_PLANT_SINK_PER_RANK,       /* sinks: each call's denominator keeps the sink, merged once per call */
    AF_CP_PLANT_BIAS_LOCAL,          /* bias: each call generates its bias from its own sub-case's indices */
    AF_CP_PLANT_COUNT
} af_cp_plant;

const char *af_cp_plant_name(af_cp_plant p);
/* One line: the bug the plant carries and where it lives (docs/cp.md). */
const char *af_cp_plant_description(af_cp_plant p);
/* AF_CP_PLANT_NONE .. COUNT-1 by name; -1 when unknown. */
int af_cp_plant_parse(const char *name);

/* The wrapper over inner (taken over: destroying the wrapper destroys inner). It keeps
 * inner's name, flags and state, so code that reads a backend's state still works. */
af_backend *af_cp_wrap(af_backend *inner);

/* A planted CP backend's name, cp-bug:PLANT:INNER: 0 with *plant and *inner (INNER, a
 * pointer into name), or -1 with why when the name is malformed, PLANT unknown or
 * ATTNFUZZ_CP_PLANT is not PLANT (a planted bug never resolves from a case file alone).
 * The registry finds INNER and calls af_cp_planted_new (backends/registry.c). */
int af_cp_planted_parse(const char *name, af_cp_plant *plant, const char **inner, char *why, size_t cap);
/* The planted CP backend `name` over inner (the registry's INNER, wrapped or not; not
 * taken over: the registry keeps it); NULL when out of memory. */
af_backend *af_cp_planted_new(af_backend *inner, af_cp_plant plant, const char *name);

#endif
