/* util/version.h — what this build of attnfuzz is: the version, the git commit at
 * configure time ("unknown" outside a git checkout, "+dirty" when tracked files had
 * changes; CMakeLists.txt defines both for version.c only) and the nvcc version of a
 * CUDA build ("" otherwise). `attnfuzz --version` prints them, every report carries
 * them (triage/report.h: provenance). */
#ifndef ATTNFUZZ_UTIL_VERSION_H
#define ATTNFUZZ_UTIL_VERSION_H

const char *af_version(void);
const char *af_git_commit(void);
const char *af_cuda_compiler_version(void);

#endif
