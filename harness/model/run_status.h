/* model/run_status.h — how a run of a backend (or a GPU helper below the backends)
 * ended. Shared by backends/backend.h and the GPU plumbing in kernels/. */
#ifndef ATTNFUZZ_MODEL_RUN_STATUS_H
#define ATTNFUZZ_MODEL_RUN_STATUS_H

/* Status codes of supports()/run(). */
typedef enum {
    AF_RUN_OK = 0,
    AF_RUN_DECLINED = 1, /* cannot serve this case; why holds the reason */
    AF_RUN_ERROR = 2,    /* failed while running (API error, bad status) */
    AF_RUN_CRASH = 3,    /* sticky device error or similar: process state is suspect */
    AF_RUN_RESOURCE = 4, /* out of memory, workspace over budget */
    AF_RUN_HANG = 5,     /* no answer before the deadline (an out-of-process worker, killed) */
    AF_RUN_ADAPTER = 6,  /* the backend's own glue failed before the kernel under test ran or
                            after it returned (a worker adapter's exception): an error of the
                            harness side, no verdict on the kernel */
} af_run_status;

#endif
