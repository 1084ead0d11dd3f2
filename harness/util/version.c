/* version.c — the build's version strings (util/version.h). */
#include "util/version.h"

#ifndef AF_VERSION
#define AF_VERSION "unknown"
#endif
#ifndef AF_GIT_COMMIT
#define AF_GIT_COMMIT "unknown"
#endif
#ifndef AF_CUDA_COMPILER
#define AF_CUDA_COMPILER ""
#endif

const char *af_version(void) { return AF_VERSION; }
const char *af_git_commit(void) { return AF_GIT_COMMIT[0] ? AF_GIT_COMMIT : "unknown"; }
const char *af_cuda_compiler_version(void) { return AF_CUDA_COMPILER; }
