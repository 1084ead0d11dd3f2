/* backends/worker/worker.h — `worker:NAME` backends: an attention kernel in another
 * process (any language) speaking the line-JSON protocol of docs/worker-protocol.md.
 *
 *   worker_config.c   the worker's command: --worker-cmd "argv..." or a config file
 *   worker_proc.c     the process: socketpair, execv (no shell), deadlines, reaping
 *   worker_shm.c      the host transport: one memfd region both sides map
 *   worker_ipc.c      the GPU transport: CUDA IPC handles of attnfuzz's device buffers
 *   worker_proto.c    the messages: problem, tensor descriptors, replies
 *   worker_backend.c  the af_backend over all of it (restarts a worker that died)
 *
 * A worker's command comes only from the command line (or a config file named there),
 * never from a case file: a case that names `backend = worker:X` finds no command and
 * starts nothing.
 */
#ifndef ATTNFUZZ_WORKER_H
#define ATTNFUZZ_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/backend.h"

#define AF_WORKER_PROTOCOL_VERSION 1
#define AF_WORKER_MAX_ARGS         64

typedef enum {
    AF_WORKER_TRANSPORT_AUTO = 0, /* cuda_ipc when the worker's device is cuda and CUDA is built, else shm */
    AF_WORKER_TRANSPORT_SHM,      /* host shared memory; a GPU worker copies to its device itself */
    AF_WORKER_TRANSPORT_CUDA_IPC, /* device buffers shared by cudaIpcGetMemHandle */
} af_worker_transport;

typedef struct {
    char name[AF_NAME_MAX];             /* the NAME of worker:NAME */
    char *argv[AF_WORKER_MAX_ARGS + 1]; /* owned strings, NULL-terminated; argv[0] = program */
    int argc;
    double timeout_s;       /* deadline of one request (a case run); past it: hang */
    double start_timeout_s; /* deadline of the start and the hello (importing torch takes seconds) */
    af_worker_transport transport;
    char origin[512]; /* where the command came from: "--worker-cmd" or "FILE:LINE" */
    /* how the command line named it, for printed commands (af_worker_cli_options): the
     * config file's path as given, and the --worker-cmd text as typed ("" = not given) */
    char config_path[1024];
    char command_text[2048];
} af_worker_config;

void af_worker_config_init(af_worker_config *cfg, const char *name);
void af_worker_config_free(af_worker_config *cfg);

/* Split a command line into argv without a shell: words separated by blanks, '...' and
 * "..." quote (no variables, globs or redirections). 0, or -1 with why. */
int af_worker_split_command(const char *text, af_worker_config *cfg, char *why, size_t cap);

/* Read a worker config file (`key = value` lines, `#` comments):
 *   command = python3 -m attnfuzz_worker.examples.torch_sdpa   (required)
 *   name = torch-sdpa          (default: the name asked for)
 *   timeout = 60              seconds per request
 *   start_timeout = 120       seconds to start and say hello
 *   transport = auto | shm | cuda_ipc
 * Errors name FILE:LINE and the key. 0, or -1 with why. */
int af_worker_config_load(const char *path, const char *name, af_worker_config *cfg, char *why, size_t cap);

/* The backend (takes ownership of cfg's strings; cfg is left empty). Starts nothing until
 * its first use. */
af_backend *af_backend_worker_new(af_worker_config *cfg);

/* Register worker:NAME in r from the command line's --worker-cmd / --worker-config
 * (either may be NULL; both NULL does nothing). backend_name is the --backend value: its
 * NAME part names a --worker-cmd worker. 0, or -1 with why. */
int af_worker_register(af_registry *r, const char *backend_name, const char *worker_cmd, const char *worker_config,
                       char *why, size_t cap);
/* Register a worker:NAME backend over a loaded config (which this frees): 0, or -1 with why. */
int af_worker_register_config(af_registry *r, af_worker_config *cfg, char *why, size_t cap);

/* The options that start this very worker in another attnfuzz process, for commands
 * printed for a user (a finding's Reproduce line): "--worker-config", FILE and/or
 * "--worker-cmd", TEXT, as the command line gave them, into out (cap + 1 entries,
 * NULL-terminated; pointers into be, valid while it lives). Returns how many words;
 * 0 (out[0] = NULL) for a backend that is no worker. */
int af_worker_cli_options(const af_backend *be, const char **out, int cap);

/* The hello (a JSON object: name, device, versions, ...) a worker:NAME backend received
 * when it last started (after be->available() returned 0); owned by the backend, valid
 * until it restarts or is destroyed. NULL before a start or when be is no worker backend. */
const struct json_t *af_worker_hello(const af_backend *be);

#endif
