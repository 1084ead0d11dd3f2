/* cudnn_plan_disk.h — execution plans kept on disk between processes (ATTNFUZZ_CUDNN_PLAN_DIR).
 *
 * A plan of cuDNN's SDPA engines is compiled at run time (NVRTC) when it is finalized: about
 * 0.1-0.2 s a plan on an H100, and a fresh process (a campaign's worker, a restart after a
 * crash, the next night's run) builds every plan again. cuDNN serializes a finalized plan
 * (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION) and finalizes a plan descriptor from that
 * text again. Here one file per plan, DIR/<key>.plan:
 *
 *   line 1   "attnfuzz-cudnn-plan 1 ws=<workspace bytes> num=<notes> beh=<notes>\n"
 *            the engine's numerical and behaviour notes as comma-separated numbers (a
 *            plan read back has no engine descriptor to ask: nondeterminism follows them)
 *   then     cuDNN's JSON text
 *
 * The key (32 hex digits: two FNV-1a hashes from two offsets) covers the graph's whole description
 * (af_sdpa_desc, bytes included: it is zeroed before it is filled), the graph kind, the
 * alignment form, the engine config (global index and knobs) and a context: the cuDNN
 * library (version and file), the GPU (name and SM) and the attnfuzz executable itself
 * (its path, size and modification time), so a rebuilt binary, another cuDNN or another
 * GPU never reads a plan it did not write. A file is written to a temporary name and
 * renamed, so workers sharing DIR see whole files or none. A plan that cuDNN will not
 * finalize from its text, or whose workspace differs from the recorded one, is built
 * anew and the file replaced. cuDNN makes the plan's kernels from its text: DIR is trusted
 * as the binary is (docs/cudnn.md); a symbolic link there is not read.
 */
#ifndef ATTNFUZZ_CUDNN_PLAN_DISK_H
#define ATTNFUZZ_CUDNN_PLAN_DISK_H

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stdbool.h>
#include <stdint.h>

#include "backends/cudnn/cudnn_api.h"
#include "backends/cudnn/cudnn_engines.h"
#include "backends/cudnn/cudnn_sdpa.h"

#define AF_CUDNN_PLAN_KEY_LEN 33 /* 32 hex digits and the terminator */

/* The context part of every key: cuDNN's version and file, the GPU, the executable. */
uint64_t af_cudnn_plan_disk_context(const af_cudnn_api *api, const char *device, int sm);

/* The file name (without the folder) of the plan of config id of graph kind `kind` of
 * description d. */
void af_cudnn_plan_disk_key(uint64_t context, const af_sdpa_desc *d, int kind, int align_form,
                            const af_cudnn_cfg_id *id, char key[AF_CUDNN_PLAN_KEY_LEN]);

/* Read DIR/<key>.plan into a finalized plan (plan->engine, cfg stay NULL; the notes and
 * workspace come from the file). cuDNN needs a handle to make a plan from its text
 * (CUDNN_ATTR_EXECUTION_PLAN_HANDLE, set before finalizing, as cudnn-frontend's loadFromJson
 * does; without it every plan read back crashed the process, cuDNN 9.19 on an H100): `handle` is the one the plan's graph would have been built with.
 * 0 on success; -1 when there is no usable file (missing, unreadable, not this format, or
 * cuDNN refuses the text: then *why says so when why is not NULL, and a refused file is
 * removed). */
int af_cudnn_plan_disk_load(const af_cudnn_api *api, cudnnHandle_t handle, const char *dir, const char *key,
                            af_cudnn_plan *plan, char *why, size_t cap);

/* Keep at most max_files plan files in DIR: when there are more, the oldest (by modification
 * time, then name) are removed until 90 % of max_files remain. Only regular files named
 * <32 hex digits>.plan count and go; anything else in DIR stays. Workers trimming the
 * same folder at once may find a file gone: that is no error. The files removed, or -1
 * with why (DIR unreadable). max_files <= 0: nothing. */
int af_cudnn_plan_disk_trim(const char *dir, long max_files, char *why, size_t cap);

/* Write a built plan's text as DIR/<key>.plan (DIR is created when missing). 0, or -1
 * with why (the run goes on: the plan is only not kept). */
int af_cudnn_plan_disk_store(const af_cudnn_api *api, const char *dir, const char *key, const af_cudnn_plan *plan,
                             char *why, size_t cap);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif
