/* campaign/gpus.h — `campaign --gpus all|0,1,...`: the GPUs a campaign spreads its workers
 * over, as the CUDA_VISIBLE_DEVICES value each worker gets (gpus.c).
 *
 * A worker process sets CUDA_VISIBLE_DEVICES to its GPU's entry before anything else it
 * does (worker_pool.c, session_child.c), so the CUDA runtime it initialises later sees
 * exactly that one device. This file never calls CUDA: the campaign's parent process
 * must not initialise it (a CUDA context does not survive fork, campaign/session.h). */
#ifndef ATTNFUZZ_CAMPAIGN_GPUS_H
#define ATTNFUZZ_CAMPAIGN_GPUS_H

#include <stddef.h>

#define AF_GPUS_MAX   64 /* GPUs one campaign uses at most (one worker each at least) */
#define AF_GPU_ID_MAX 96 /* one CUDA_VISIBLE_DEVICES entry: an ordinal, or a GPU-/MIG- UUID */

/* Where the NVIDIA driver lists its GPUs, one entry per GPU (named by PCI bus id). */
#define AF_GPUS_PROC_DIR "/proc/driver/nvidia/gpus"

typedef struct {
    int n;                               /* GPUs listed */
    char id[AF_GPUS_MAX][AF_GPU_ID_MAX]; /* id[i]: worker i's CUDA_VISIBLE_DEVICES value */
} af_gpu_list;

enum {
    AF_GPUS_OK = 0,
    AF_GPUS_BAD_LIST = 1, /* the text is not "all" or a list of distinct ordinals */
    AF_GPUS_NONE = 2,     /* "all", and no GPU is there */
};

/* Parse a --gpus value: "all" or comma-separated, distinct, non-negative decimal ordinals
 * ("0,1,3"). "all" = the entries of visible (the CUDA_VISIBLE_DEVICES of this process,
 * NULL = unset) when it is set, else one ordinal per entry of proc_dir (AF_GPUS_PROC_DIR;
 * ordinals 0..n-1, the order CUDA numbers them in is its own). Returns AF_GPUS_OK with
 * out filled, or AF_GPUS_BAD_LIST / AF_GPUS_NONE with a one-line why naming the value
 * ("--gpus: '0,x' is not a list of GPU ordinals"). */
int af_gpus_resolve(const char *text, const char *visible, const char *proc_dir, af_gpu_list *out, char *why,
                    size_t cap);

/* The index of id in list, or -1 (list NULL or id not in it). */
int af_gpus_find(const af_gpu_list *list, const char *id);

#endif
