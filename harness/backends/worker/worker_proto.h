/* backends/worker/worker_proto.h — the messages of docs/worker-protocol.md (version
 * AF_WORKER_PROTOCOL_VERSION): requests attnfuzz builds, replies it parses. */
#ifndef ATTNFUZZ_WORKER_PROTO_H
#define ATTNFUZZ_WORKER_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backends/backend.h"
#include "backends/worker/worker_shm.h"
#include "model/case.h"
#include "model/tensors.h"

/* The problem: af_plugin_problem's fields, the case's features and its canonical text. */
json_t *af_worker_problem_json(const af_case *c);
/* Names of the features a case uses ("backward", "gqa", "padded", ...), into out[cap]. */
int af_worker_case_features(const af_case *c, const char *out[], int cap);

/* Tensor descriptors of t: { "q": {...}, ... } naming the buffer each lives in; the
 * mxfp8 scale arrays at the shm slots of sl. */
json_t *af_worker_tensors_json(const af_case *c, const af_tensors *t, const af_worker_slots *sl);
/* Name of buffer / tensor i ("q", "k", ..., "dv"). */
const char *af_worker_tensor_name(int i);

typedef enum {
    AF_WR_OK = 0,
    AF_WR_DECLINE,
    AF_WR_ERROR,
    AF_WR_RESOURCE,
    AF_WR_ENGINES,
    AF_WR_HELLO,
    AF_WR_UNAVAILABLE, /* the worker cannot serve here (a module it needs is missing): instead of
                          its hello, or as the reply to a request */
} af_worker_reply_type;

typedef struct {
    af_worker_reply_type type;
    char text[512];   /* reason of decline / unavailable, message of error / resource */
    bool adapter;     /* error: "where": "adapter" (the worker's own code failed, not the kernel) */
    char engine[128]; /* ok of a run: the engine that ran ("" = not said) */
    char engine_forward[64], engine_backward[64]; /* ok of a run: "engines": {"forward",
                                                     "backward"}, each pass's ("" = not said) */
    bool nondeterministic;
    json_t *body; /* the whole reply (owned; engines' names, hello's capabilities) */
} af_worker_reply;

/* Parse one reply line answering request id. -1 with why (the line quoted, cut) when
 * it is not JSON, not an object, has no known type or the wrong id. */
int af_worker_reply_parse(const char *line, long long id, af_worker_reply *r, char *why, size_t cap);
void af_worker_reply_free(af_worker_reply *r);
/* The optional "inputs_written" of an ok reply to a run (docs/worker-protocol.md): the
 * kernel arguments the worker saw its kernel change, [{"tensor": "k", "index": N}, ...]
 * (q, k, v, do, and o, lse in a backward_given request; index into the dense logical
 * (B, H, S, D) tensor, -1 unknown), each recorded in info (backend.h). 0, or -1 with why
 * when the field is there but malformed. */
int af_worker_inputs_written(const af_worker_reply *r, af_run_info *info, char *why, size_t cap);

#endif
