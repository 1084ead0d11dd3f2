/* backends/worker/worker_backend.c — the af_backend `worker:NAME` over a worker process
 * (backends/worker/worker.h, docs/worker-protocol.md). The process starts on first use
 * and lives for many cases; one that dies, hangs past the request's deadline or sends a
 * reply that is not the protocol is killed, the request becomes a crash / hang status
 * for that case, and the next request starts a fresh process. A worker whose hello lists
 * the feature backward_given also serves the backend's backward_given (CP backward): a run
 * request marked "given", whose O and LSE must come back bitwise unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/worker/worker.h"
#include "backends/worker/worker_ipc.h"
#include "backends/worker/worker_proc.h"
#include "backends/worker/worker_proto.h"
#include "backends/worker/worker_shm.h"
#include "util/clock.h"

typedef struct {
    af_worker_config cfg;
    char backend_name[AF_NAME_MAX + 8]; /* "worker:NAME" */
    char description[512];
    af_worker_proc proc;
    af_worker_shm shm;
    long long next_id;
    json_t *hello;    /* the worker's hello (capabilities), NULL before the first start */
    bool cuda_device; /* hello: device = cuda */
    bool deterministic;
    bool has_engines;
    int starts;
    pid_t owner;    /* the process that started the worker (0: none running) */
    af_backend *be; /* the backend over this state: its backward_given follows the hello */
} worker_state;

static af_run_status worker_backward_given(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                           af_run_info *info, char *why, size_t cap);

static double now(void) { return af_clock_mono(); }

/* A forked child (a campaign's pool worker) inherits the parent's worker connection and
 * shared region. They are not its own: sharing them mixes requests and replies of two
 * processes (a reply to another process's request, another process's tensors in the
 * region). The child forgets its copies (closing only its own descriptors: the parent's
 * worker runs on) and starts its own worker on first use. True when that happened. */
static bool forget_inherited(worker_state *st) {
    if (!st->owner || st->owner == getpid()) return false;
    af_worker_proc_forget(&st->proc);
    af_worker_shm_close(&st->shm);
    st->owner = 0;
    return true;
}

static void worker_kill(worker_state *st) {
    if (!forget_inherited(st)) af_worker_proc_stop(&st->proc);
}

/* Why the last request ended badly, with the worker's exit once reaped. */
static void exit_reason(worker_state *st, const char *what, char *why, size_t cap) {
    af_worker_proc_close(&st->proc, 2.0); /* give it a moment to finish dying on its own */
    char how[160];
    af_worker_proc_describe_exit(&st->proc, how, sizeof how);
    snprintf(why, cap, "%s: worker process %s during %s (restarted for the next request)", st->backend_name, how, what);
}

/* The module named by a Python "No module named 'x'" (or "No module named x.y", as
 * `python3 -m` says it) in line, into out: true when there is one. */
static bool missing_python_module(const char *line, char *out, size_t cap) {
    const char *at = strstr(line, "No module named ");
    if (!at || cap == 0) return false;
    at += strlen("No module named ");
    bool quoted = *at == '\'';
    if (quoted) at++;
    size_t n = 0;
    while (at[n] && (quoted ? at[n] != '\'' : at[n] != ' ') && n + 1 < cap) n++;
    snprintf(out, cap, "%.*s", (int)n, at);
    return n > 0;
}

/* Why the worker ended during its start (reaped), as the backend's unavailability: a
 * missing Python module named as such, else its exit and the last line of its stderr. */
static void start_failure(worker_state *st, char *why, size_t cap) {
    af_worker_proc_close(&st->proc, 2.0); /* its last words reach us while it finishes dying */
    char how[160], module[128];
    af_worker_proc_describe_exit(&st->proc, how, sizeof how);
    const char *last = af_worker_proc_last_stderr(&st->proc);
    if (missing_python_module(last, module, sizeof module))
        snprintf(why, cap,
                 "%s unavailable: python module '%s' not found (the worker process %s during its start; "
                 "its stderr: %s)",
                 st->backend_name, module, how, last);
    else
        snprintf(why, cap, "%s unavailable: the worker process %s during its start%s%s", st->backend_name, how,
                 last[0] ? "; its stderr: " : "", last);
}

/* Does the JSON list name `name`? */
static bool list_names(const json_t *list, const char *name) {
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (json_is_string(item) && !strcmp(json_string_value(item), name)) return true;
    }
    return false;
}

/* true when the hello lists name in its array key (an absent list allows everything). */
static bool hello_allows(const worker_state *st, const char *key, const char *name) {
    json_t *list = st->hello ? json_object_get(st->hello, key) : NULL;
    return !json_is_array(list) || list_names(list, name);
}

/* Does the hello's list `key` name `name` (no list: no)? */
static bool hello_lists(const worker_state *st, const char *key, const char *name) {
    json_t *list = st->hello ? json_object_get(st->hello, key) : NULL;
    return json_is_array(list) && hello_allows(st, key, name);
}

/* The recipe flag for a run, set after each run (the judge reads it then): recipes are
 * legitimate kernel roundings the judge models per backend when declared
 * (docs/worker-protocol.md); lse_rowsum_dtype_p: the LSE from the row sum of the P rounded
 * to the dtype (AF_BACKEND_LSE_ROWSUM_DTYPE_P). The hello's list is what the worker may
 * declare; a reply's "recipes" list (that call's) narrows it, a reply without one keeps it. */
static void take_run_recipes(worker_state *st, const json_t *body) {
    const json_t *list = body ? json_object_get(body, "recipes") : NULL;
    bool rowsum = hello_lists(st, "recipes", "lse_rowsum_dtype_p") &&
                  (!json_is_array(list) || list_names(list, "lse_rowsum_dtype_p"));
    st->be->flags &= ~(unsigned)AF_BACKEND_LSE_ROWSUM_DTYPE_P;
    if (rowsum) st->be->flags |= AF_BACKEND_LSE_ROWSUM_DTYPE_P;
}

/* Apply the capabilities of a hello. */
static int take_hello(worker_state *st, json_t *hello, char *why, size_t cap) {
    json_t *ver = json_object_get(hello, "protocol");
    if (!json_is_integer(ver) || json_integer_value(ver) != AF_WORKER_PROTOCOL_VERSION) {
        snprintf(why, cap, "%s: worker speaks protocol %s, attnfuzz speaks %d", st->backend_name,
                 json_is_integer(ver) ? "another version" : "(no \"protocol\")", AF_WORKER_PROTOCOL_VERSION);
        return -1;
    }
    const char *dev = json_string_value(json_object_get(hello, "device"));
    st->cuda_device = dev && !strcmp(dev, "cuda");
    st->be->flags &= ~(unsigned)AF_BACKEND_ON_GPU;
    if (st->cuda_device) st->be->flags |= AF_BACKEND_ON_GPU;
    st->deterministic = json_is_true(json_object_get(hello, "deterministic"));
    st->has_engines = json_is_true(json_object_get(hello, "engines"));
    const char *desc = json_string_value(json_object_get(hello, "description"));
    const char *name = json_string_value(json_object_get(hello, "name"));
    snprintf(st->description, sizeof st->description, "worker %s (%s, device %s) from %s: %s", name ? name : "?",
             st->cfg.argv[0], dev ? dev : "cpu", st->cfg.origin, desc ? desc : "");
    if (st->hello) json_decref(st->hello);
    st->hello = json_incref(hello);
    /* backward from given O and LSE (the CP wrapper's ranks): only for a worker whose
     * features list it; NULL otherwise, so CP backward keeps its decline */
    json_t *features = json_object_get(hello, "features");
    bool given = json_is_array(features) && hello_allows(st, "features", "backward_given");
    st->be->backward_given = given ? worker_backward_given : NULL;
    return 0;
}

/* Start the process and exchange hellos unless it runs. 0, or -1 with why. */
static int ensure_started(worker_state *st, char *why, size_t cap) {
    forget_inherited(st);
    if (af_worker_proc_running(&st->proc)) return 0;
    if (st->shm.fd < 0 && af_worker_shm_open(&st->shm, why, cap)) return -1;
    if (af_worker_proc_start(&st->proc, st->cfg.argv, st->shm.fd, why, cap)) return -1;
    st->owner = getpid();
    st->starts++;
    double deadline = now() + st->cfg.start_timeout_s;
    json_t *h = json_object();
    json_object_set_new(h, "type", json_string("hello"));
    json_object_set_new(h, "protocol", json_integer(AF_WORKER_PROTOCOL_VERSION));
    json_object_set_new(h, "shm_fd", json_integer(AF_WORKER_SHM_FD));
    json_object_set_new(h, "backend", json_string(st->backend_name));
    char *text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    af_wp_status ws = text ? af_worker_proc_send(&st->proc, text, deadline) : AF_WP_IO_ERROR;
    free(text);
    char *line = NULL;
    if (ws == AF_WP_OK) ws = af_worker_proc_recv(&st->proc, &line, deadline);
    if (ws == AF_WP_TIMEOUT) {
        worker_kill(st);
        snprintf(why, cap, "%s: worker did not say hello within %g s (start_timeout; killed)", st->backend_name,
                 st->cfg.start_timeout_s);
        return -1;
    }
    if (ws != AF_WP_OK) {
        start_failure(st, why, cap);
        return -1;
    }
    af_worker_reply r;
    char sub[400];
    int rc = af_worker_reply_parse(line, 0, &r, sub, sizeof sub);
    free(line);
    if (rc == 0 && r.type == AF_WR_UNAVAILABLE) { /* a module it needs is missing, said instead of hello */
        snprintf(why, cap, "%s unavailable: %s", st->backend_name, r.text);
        af_worker_reply_free(&r);
        worker_kill(st);
        return -1;
    }
    if (rc == 0 && r.type != AF_WR_HELLO) {
        snprintf(sub, sizeof sub, "the first reply is not a hello");
        af_worker_reply_free(&r);
        rc = -1;
    }
    if (rc) {
        worker_kill(st);
        snprintf(why, cap, "%s: at start: %s", st->backend_name, sub);
        return -1;
    }
    rc = take_hello(st, r.body, why, cap);
    af_worker_reply_free(&r);
    if (rc) worker_kill(st);
    return rc;
}

/* One request and its reply. On a dead, hung or garbled worker the process is gone
 * afterwards and the status says which (AF_RUN_CRASH, AF_RUN_HANG, AF_RUN_ERROR). */
static af_run_status request(worker_state *st, json_t *msg, const char *what, af_worker_reply *r, char *why,
                             size_t cap) {
    memset(r, 0, sizeof *r);
    if (ensure_started(st, why, cap)) { /* it cannot start here: the backend is unavailable */
        json_decref(msg);
        return AF_RUN_DECLINED;
    }
    long long id = ++st->next_id;
    json_object_set_new(msg, "id", json_integer(id));
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text) {
        snprintf(why, cap, "%s: out of memory building the %s request", st->backend_name, what);
        return AF_RUN_RESOURCE;
    }
    double deadline = now() + st->cfg.timeout_s;
    af_wp_status ws = af_worker_proc_send(&st->proc, text, deadline);
    free(text);
    char *line = NULL;
    if (ws == AF_WP_OK) ws = af_worker_proc_recv(&st->proc, &line, deadline);
    switch (ws) {
        case AF_WP_OK:
            break;
        case AF_WP_TIMEOUT:
            worker_kill(st);
            snprintf(why, cap,
                     "%s: no reply to %s within %g s (the request's deadline; killed, restarted for the next "
                     "request)",
                     st->backend_name, what, st->cfg.timeout_s);
            return AF_RUN_HANG;
        case AF_WP_EXITED:
            exit_reason(st, what, why, cap);
            return AF_RUN_CRASH;
        case AF_WP_TOO_LONG:
            worker_kill(st);
            snprintf(why, cap, "%s: reply to %s longer than %u bytes (killed)", st->backend_name, what,
                     AF_WORKER_MAX_LINE);
            return AF_RUN_ERROR;
        default:
            worker_kill(st);
            snprintf(why, cap, "%s: socket error during %s (killed)", st->backend_name, what);
            return AF_RUN_ERROR;
    }
    char sub[400];
    int rc = af_worker_reply_parse(line, id, r, sub, sizeof sub);
    free(line);
    if (rc) {
        worker_kill(st);
        snprintf(why, cap, "%s: %s: %s (killed, restarted for the next request)", st->backend_name, what, sub);
        return AF_RUN_ERROR;
    }
    return AF_RUN_OK;
}

/* A reply's type as a status, why = its reason / message. */
static af_run_status status_of_reply(worker_state *st, const af_worker_reply *r, const char *what, char *why,
                                     size_t cap) {
    switch (r->type) {
        case AF_WR_OK:
            return AF_RUN_OK;
        case AF_WR_DECLINE:
            snprintf(why, cap, "%s: %s", st->backend_name, r->text);
            return AF_RUN_DECLINED;
        case AF_WR_RESOURCE:
            snprintf(why, cap, "%s: %s", st->backend_name, r->text);
            return AF_RUN_RESOURCE;
        case AF_WR_ERROR:
            if (r->adapter) { /* the worker's own code failed, not the kernel under test */
                snprintf(why, cap, "%s: adapter error: %s", st->backend_name, r->text);
                return AF_RUN_ADAPTER;
            }
            snprintf(why, cap, "%s: %s", st->backend_name, r->text);
            return AF_RUN_ERROR;
        case AF_WR_UNAVAILABLE: /* a module the run needs is missing: no kernel ran */
            snprintf(why, cap, "%s unavailable: %s", st->backend_name, r->text);
            return AF_RUN_DECLINED;
        default:
            snprintf(why, cap, "%s: reply of the wrong type to %s", st->backend_name, what);
            return AF_RUN_ERROR;
    }
}

static int worker_available(af_backend *be, char *why, size_t cap) {
    worker_state *st = be->state;
    if (why && cap) why[0] = '\0';
    if (ensure_started(st, why, cap)) return -1;
    be->description = st->description;
    if (st->deterministic) be->flags |= AF_BACKEND_DETERMINISTIC;
    return 0;
}

const struct json_t *af_worker_hello(const af_backend *be) {
    if (!be || be->available != worker_available) return NULL; /* not a worker backend */
    const worker_state *st = be->state;
    return st->hello;
}

/* The worker state of be: a worker backend itself, or the CP wrapper the registry holds
 * every backend through (backends/cp/cp.h), which shares its inner backend's state and
 * keeps its name. NULL for any other backend. */
static const worker_state *worker_state_of(const af_backend *be) {
    if (!be || !be->state) return NULL;
    if (be->available == worker_available) return be->state;
    if (strncmp(be->name, "worker:", 7)) return NULL; /* only a worker:NAME holds a worker's state */
    const worker_state *st = be->state;
    return st->be && st->be->state == st && st->be->available == worker_available ? st : NULL;
}

int af_worker_cli_options(const af_backend *be, const char **out, int cap) {
    int n = 0;
    const worker_state *st = worker_state_of(be);
    if (st && cap >= 4) {
        if (st->cfg.config_path[0]) {
            out[n++] = "--worker-config";
            out[n++] = st->cfg.config_path;
        }
        if (st->cfg.command_text[0]) {
            out[n++] = "--worker-cmd";
            out[n++] = st->cfg.command_text;
        }
    }
    out[n] = NULL;
    return n;
}

static af_run_status local_declines(worker_state *st, const af_case *c, char *why, size_t cap) {
    if (c->cp_size > 1) {
        snprintf(why, cap, "%s: context parallelism (cp %d) is not part of the worker protocol", st->backend_name,
                 c->cp_size);
        return AF_RUN_DECLINED;
    }
    if (c->layout == AF_LAYOUT_THD && af_case_layout_kv(c) != AF_LAYOUT_THD) { /* one `ragged` for both sides */
        snprintf(why, cap,
                 "%s: layout = thd with layout_kv = %s (ragged Q over padded K/V): worker protocol %d's problem "
                 "says ragged for Q and K/V alike",
                 st->backend_name, af_layout_name(af_case_layout_kv(c)), AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    if (af_case_heads_v(c) != c->heads_kv) { /* the problem has one K/V head count */
        snprintf(why, cap,
                 "%s: heads_v = %d != heads_kv = %d (V's own head count), which worker protocol %d does not carry",
                 st->backend_name, c->heads_v, c->heads_kv, AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    /* score features: the problem carries dropout, the soft cap, the score_mod and the sinks (below);
     * the others (bias, ALiBi slopes, log2 stats, dLSE) it does not, so a worker would
     * compute another function. Learnable sinks with backward need the sink logits'
     * gradient, an output the protocol has no slot for. */
    af_case score_only = *c;
    score_only.dropout_p = 0.0;
    score_only.softcap = 0.0;
    score_only.score_mod = AF_SCORE_MOD_NONE;
    score_only.softmax = AF_SOFTMAX_VANILLA;
    if (c->outputs != AF_OUTPUTS_LSE) {
        snprintf(why, cap, "%s: outputs = %s: worker protocol %d carries no score statistics outputs", st->backend_name,
                 af_outputs_name(c->outputs), AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    if (c->softmax == AF_SOFTMAX_LEARNABLE && c->backward) {
        snprintf(why, cap, "%s: learnable sinks with backward need dsink, which worker protocol %d does not carry",
                 st->backend_name, AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    char score_features[160];
    af_case_features_text(&score_only, score_features, sizeof score_features);
    if (score_features[0]) {
        snprintf(why, cap, "%s: the case uses %s, which worker protocol %d does not carry", st->backend_name,
                 score_features, AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    /* E5M2 storage: the worker package reads f16, bf16, e4m3 and f32 only, and a worker
     * whose hello has no dtype list (all allowed) was written before it */
    if (c->dtype == AF_DT_FP8_E5M2 && !hello_lists(st, "dtypes", "fp8_e5m2")) {
        snprintf(why, cap,
                 "%s: dtype fp8_e5m2 (E5M2 storage) is not carried by the worker package; a worker must list it "
                 "in its hello's dtypes",
                 st->backend_name);
        return AF_RUN_DECLINED;
    }
    if (c->descale_head) {
        snprintf(why, cap, "%s: descale = head (per-(batch, kv head) descales) is not carried by worker protocol %d",
                 st->backend_name, AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    if (c->kv_dtype != AF_KV_SAME) {
        snprintf(why, cap,
                 "%s: kv_dtype = %s is not carried by worker protocol %d (K and V would be fp8 with descales under "
                 "%s Q)",
                 st->backend_name, af_kv_dtype_name(c->kv_dtype), AF_WORKER_PROTOCOL_VERSION, af_dtype_name(c->dtype));
        return AF_RUN_DECLINED;
    }
    if (c->out_dtype != AF_OUT_SAME) {
        snprintf(why, cap, "%s: out_dtype = %s is not carried by worker protocol %d (O would be fp8)", st->backend_name,
                 af_out_dtype_name(c->out_dtype), AF_WORKER_PROTOCOL_VERSION);
        return AF_RUN_DECLINED;
    }
    if (!hello_allows(st, "dtypes", af_dtype_name(c->dtype))) {
        snprintf(why, cap, "%s: dtype %s is not among the worker's dtypes", st->backend_name, af_dtype_name(c->dtype));
        return AF_RUN_DECLINED;
    }
    const char *feat[32];
    int nf = af_worker_case_features(c, feat, 32);
    for (int i = 0; i < nf; i++)
        /* softcap, score_mod and sinks change the function: only a worker that lists them
         * gets them (a hello without a list, written before they were carried, would
         * ignore them) */
        if (!hello_allows(st, "features", feat[i]) ||
            ((!strcmp(feat[i], "softcap") || !strcmp(feat[i], "score_mod") || !strcmp(feat[i], "sinks")) &&
             !hello_lists(st, "features", feat[i]))) {
            snprintf(why, cap, "%s: the case uses '%s', which the worker does not list among its features",
                     st->backend_name, feat[i]);
            return AF_RUN_DECLINED;
        }
    /* dropout only for a worker that lists it: one written before it existed sends no
     * list (all allowed) and would run the case without dropout */
    json_t *listed = st->hello ? json_object_get(st->hello, "features") : NULL;
    if (c->dropout_p != 0.0 && (!json_is_array(listed) || !hello_allows(st, "features", "dropout"))) {
        snprintf(why, cap, "%s: the case uses 'dropout', which the worker does not list among its features",
                 st->backend_name);
        return AF_RUN_DECLINED;
    }
    /* worker protocol 1 carries no returned mask (docs/worker-protocol.md) */
    if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL) {
        snprintf(why, cap, "%s: dropout_rng = kernel: the worker protocol carries no returned dropout mask; not served",
                 st->backend_name);
        return AF_RUN_DECLINED;
    }
    return AF_RUN_OK;
}

static af_run_status worker_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    worker_state *st = be->state;
    if (why && cap) why[0] = '\0';
    if (ensure_started(st, why, cap)) return AF_RUN_DECLINED;
    af_run_status s = local_declines(st, c, why, cap);
    if (s != AF_RUN_OK) return s;
    json_t *msg = json_object();
    json_object_set_new(msg, "type", json_string("supports"));
    json_object_set_new(msg, "problem", af_worker_problem_json(c));
    af_worker_reply r;
    s = request(st, msg, "supports", &r, why, cap);
    if (s != AF_RUN_OK) return s;
    s = status_of_reply(st, &r, "supports", why, cap);
    af_worker_reply_free(&r);
    return s;
}

static int worker_engines(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap_names, char *why,
                          size_t cap) {
    worker_state *st = be->state;
    if (ensure_started(st, why, cap)) return -1;
    if (!st->has_engines) {
        snprintf(names[0], AF_NAME_MAX, "%s", "");
        return 1; /* one (default) engine */
    }
    json_t *msg = json_object();
    json_object_set_new(msg, "type", json_string("engines"));
    json_object_set_new(msg, "problem", af_worker_problem_json(c));
    af_worker_reply r;
    if (request(st, msg, "engines", &r, why, cap) != AF_RUN_OK) return -1;
    if (r.type != AF_WR_ENGINES) {
        status_of_reply(st, &r, "engines", why, cap);
        af_worker_reply_free(&r);
        return -1;
    }
    json_t *list = json_object_get(r.body, "names");
    int n = 0;
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (n < cap_names && json_is_string(item)) snprintf(names[n++], AF_NAME_MAX, "%s", json_string_value(item));
    }
    af_worker_reply_free(&r);
    return n;
}

/* Build the buffers object for the shm transport and copy t in. */
static int shm_stage(worker_state *st, const af_case *c, const af_tensors *t, af_worker_slots *sl, json_t *buffers,
                     char *why, size_t cap) {
    af_worker_slots_plan(c, t, sl);
    if (af_worker_shm_reserve(&st->shm, sl->total, why, cap)) return -1;
    af_worker_shm_copy_in(&st->shm, sl, t);
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!sl->buffer_bytes[i]) continue;
        json_t *b = json_object();
        json_object_set_new(b, "kind", json_string("shm"));
        json_object_set_new(b, "offset", json_integer((json_int_t)sl->buffer_offset[i]));
        json_object_set_new(b, "bytes", json_integer((json_int_t)sl->buffer_bytes[i]));
        json_object_set_new(buffers, af_worker_tensor_name(i), b);
    }
    return 0;
}

static bool use_ipc(const worker_state *st) {
    if (st->cfg.transport == AF_WORKER_TRANSPORT_SHM) return false;
    if (st->cfg.transport == AF_WORKER_TRANSPORT_CUDA_IPC) return true;
    char why[256];
    return st->cuda_device && hello_allows(st, "transports", "cuda_ipc") && af_worker_ipc_usable(why, sizeof why);
}

/* One run request over t. given: a backward_given request (O and LSE are inputs). */
static af_run_status run_request(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                 bool given, char *why, size_t cap) {
    worker_state *st = be->state;
    double t0 = now();
    if (info) {
        memset(info, 0, sizeof *info);
        info->workspace_bytes = -1;
    }
    if (why && cap) why[0] = '\0';
    if (ensure_started(st, why, cap)) return AF_RUN_DECLINED; /* unavailable here, said in why */
    af_run_status s = local_declines(st, c, why, cap);
    if (s != AF_RUN_OK) return s;
    bool ipc = use_ipc(st);
    af_worker_slots sl;
    memset(&sl, 0, sizeof sl);
    json_t *buffers = json_object();
    af_worker_ipc x = {NULL};
    if (ipc) {
        s = af_worker_ipc_begin(&x, t, buffers, why, cap);
        if (s == AF_RUN_OK) { /* the mxfp8 scales travel by shm in both transports */
            af_worker_slots_plan(c, t, &sl);
            if (af_worker_shm_reserve(&st->shm, sl.total, why, cap)) s = AF_RUN_RESOURCE;
            if (s == AF_RUN_OK) af_worker_shm_copy_in(&st->shm, &sl, t);
        }
    } else if (shm_stage(st, c, t, &sl, buffers, why, cap)) {
        s = AF_RUN_RESOURCE;
    }
    if (s != AF_RUN_OK) {
        json_decref(buffers);
        af_worker_ipc_end(&x, t, false, why, cap);
        return s;
    }
    json_t *msg = json_object();
    json_object_set_new(msg, "type", json_string("run"));
    json_object_set_new(msg, "engine", json_string(engine ? engine : ""));
    json_object_set_new(msg, "transport", json_string(ipc ? "cuda_ipc" : "shm"));
    json_object_set_new(msg, "problem", af_worker_problem_json(c));
    json_object_set_new(msg, "buffers", buffers);
    json_object_set_new(msg, "tensors", af_worker_tensors_json(c, t, &sl));
    if (given) {
        json_t *inputs = json_array();
        json_array_append_new(inputs, json_string(af_worker_tensor_name(AF_T_O)));
        json_array_append_new(inputs, json_string(af_worker_tensor_name(AF_T_LSE)));
        json_object_set_new(msg, "given", inputs);
    }
    af_worker_reply r;
    s = request(st, msg, given ? "backward_given run" : "run", &r, why, cap);
    if (s == AF_RUN_OK) {
        s = status_of_reply(st, &r, "run", why, cap);
        if (info) {
            snprintf(info->engine, sizeof info->engine, "%s", r.engine[0] ? r.engine : (engine ? engine : ""));
            info->nondeterministic = r.nondeterministic || !st->deterministic;
            snprintf(info->engine_forward, sizeof info->engine_forward, "%s", r.engine_forward);
            snprintf(info->engine_backward, sizeof info->engine_backward, "%s", r.engine_backward);
        }
        if (s == AF_RUN_OK) take_run_recipes(st, r.body);
        char sub[400];
        if (s == AF_RUN_OK && info && af_worker_inputs_written(&r, info, sub, sizeof sub)) {
            snprintf(why, cap, "%s: %s", st->backend_name, sub);
            s = AF_RUN_ERROR;
        }
        af_worker_reply_free(&r);
    }
    /* What the worker wrote (also when it died mid-write) comes back, guards included. */
    if (ipc) {
        char sub[256];
        af_run_status e = af_worker_ipc_end(&x, t, s == AF_RUN_OK, sub, sizeof sub);
        if (s == AF_RUN_OK && e != AF_RUN_OK) {
            snprintf(why, cap, "%s: %s", st->backend_name, sub);
            s = e;
        }
    } else {
        af_worker_shm_copy_out(&st->shm, &sl, t);
    }
    if (info) info->seconds = now() - t0;
    return s;
}

static af_run_status worker_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                char *why, size_t cap) {
    return run_request(be, c, engine, t, info, false, why, cap);
}

/* A copy of buffer `buffer` of t, guards included (NULL when absent or out of memory). */
static uint8_t *snapshot(const af_tensors *t, int buffer, size_t *bytes) {
    *bytes = t->alloc[buffer] ? t->bytes[buffer] + 2 * AF_GUARD_BYTES : 0;
    uint8_t *copy = *bytes ? malloc(*bytes) : NULL;
    if (copy) memcpy(copy, t->alloc[buffer], *bytes);
    return copy;
}

/* 0 when tensor tid's buffer still equals before (bitwise, guards included); else -1
 * with why naming the tensor and the first changed element. */
static int check_unchanged(const worker_state *st, const af_tensors *t, af_tensor_id tid, const uint8_t *before,
                           size_t bytes, char *why, size_t cap) {
    int buffer = t->plan.view[tid].buffer;
    const uint8_t *after = t->alloc[buffer];
    size_t k = 0;
    while (k < bytes && after[k] == before[k]) k++;
    if (k == bytes) return 0;
    const char *upper = tid == AF_T_O ? "O" : "LSE";
    int elem = af_storage_bytes(t->plan.view[tid].storage);
    if (k < AF_GUARD_BYTES || k >= bytes - AF_GUARD_BYTES)
        snprintf(why, cap,
                 "%s: the worker wrote %s in a backward_given request (an input there): guard byte %zu changed",
                 st->backend_name, upper, k);
    else
        snprintf(why, cap,
                 "%s: the worker wrote %s in a backward_given request (an input there): element %zu of the %s buffer "
                 "differs from the given value",
                 st->backend_name, upper, (k - AF_GUARD_BYTES) / (size_t)elem, af_worker_tensor_name(buffer));
    return -1;
}

/* backward_given (backend.h): a run request marked "given": ["o", "lse"], whose O and LSE
 * buffers hold the caller's values and must come back unchanged. */
static af_run_status worker_backward_given(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                           af_run_info *info, char *why, size_t cap) {
    worker_state *st = be->state;
    if (!c->backward) {
        snprintf(why, cap, "%s: backward_given on a forward-only case", st->backend_name);
        return AF_RUN_ERROR;
    }
    size_t o_bytes, lse_bytes;
    uint8_t *o_given = snapshot(t, t->plan.view[AF_T_O].buffer, &o_bytes);
    uint8_t *lse_given = snapshot(t, t->plan.view[AF_T_LSE].buffer, &lse_bytes);
    if (!o_given || !lse_given) {
        free(o_given);
        free(lse_given);
        snprintf(why, cap, "%s: out of host memory keeping the given O and LSE", st->backend_name);
        return AF_RUN_RESOURCE;
    }
    af_run_status s = run_request(be, c, engine, t, info, true, why, cap);
    if (s == AF_RUN_OK && (check_unchanged(st, t, AF_T_O, o_given, o_bytes, why, cap) ||
                           check_unchanged(st, t, AF_T_LSE, lse_given, lse_bytes, why, cap)))
        s = AF_RUN_ERROR;
    free(o_given);
    free(lse_given);
    return s;
}

static void worker_destroy(af_backend *be) {
    if (!be) return;
    worker_state *st = be->state;
    forget_inherited(st); /* a child never ends its parent's worker */
    if (af_worker_proc_running(&st->proc)) {
        /* a polite goodbye, then the socket closes: a worker exits on end of input */
        af_worker_proc_send(&st->proc, "{\"type\":\"bye\"}", now() + 1.0);
        af_worker_proc_close(&st->proc, 5.0);
    }
    af_worker_shm_close(&st->shm);
    if (st->hello) json_decref(st->hello);
    af_worker_config_free(&st->cfg);
    free(st);
    free(be);
}

af_backend *af_backend_worker_new(af_worker_config *cfg) {
    af_backend *be = calloc(1, sizeof *be);
    worker_state *st = calloc(1, sizeof *st);
    if (!be || !st) {
        free(be);
        free(st);
        return NULL;
    }
    st->cfg = *cfg; /* the strings move */
    memset(cfg->argv, 0, sizeof cfg->argv);
    cfg->argc = 0;
    af_worker_proc_init(&st->proc);
    st->shm.fd = -1;
    snprintf(st->backend_name, sizeof st->backend_name, "worker:%s", st->cfg.name);
    snprintf(st->description, sizeof st->description, "worker %s: %s (from %s; not started)", st->cfg.name,
             st->cfg.argv[0] ? st->cfg.argv[0] : "?", st->cfg.origin);
    be->name = st->backend_name;
    be->description = st->description;
    be->flags = 0;
    be->state = st;
    st->be = be;
    be->available = worker_available;
    be->supports = worker_supports;
    be->engines = worker_engines;
    be->run = worker_run;
    be->destroy = worker_destroy;
    return be;
}
