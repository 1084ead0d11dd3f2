/* cudnn_api.h — the cuDNN entry points attnfuzz uses, loaded at run time.
 *
 * libcudnn.so.9 is opened with dlopen so that one binary runs with any cuDNN 9
 * (select it with LD_LIBRARY_PATH) and on machines without cuDNN at all. Types and
 * enumerators come from the cuDNN headers (cudnn_graph.h); functions only through
 * this table, never by linking.
 */
#ifndef ATTNFUZZ_CUDNN_API_H
#define ATTNFUZZ_CUDNN_API_H

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stddef.h>
#include <stdint.h>
#include <cudnn_graph.h>

typedef struct {
    void *lib;      /* dlopen handle of libcudnn.so.9 */
    size_t version; /* cudnnGetVersion(): e.g. 91900 */
    char path[512]; /* file the library was loaded from (dladdr) */
    size_t (*GetVersion)(void);
    const char *(*GetErrorString)(cudnnStatus_t);
    void (*GetLastErrorString)(char *, size_t);
    cudnnStatus_t (*Create)(cudnnHandle_t *);
    cudnnStatus_t (*Destroy)(cudnnHandle_t);
    cudnnStatus_t (*BackendCreateDescriptor)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
    cudnnStatus_t (*BackendDestroyDescriptor)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*BackendFinalize)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*BackendSetAttribute)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                                         cudnnBackendAttributeType_t, int64_t, const void *);
    cudnnStatus_t (*BackendGetAttribute)(cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t,
                                         cudnnBackendAttributeType_t, int64_t, int64_t *, void *);
    cudnnStatus_t (*BackendExecute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
} af_cudnn_api;

/* Load libcudnn.so.9 once (process-wide, read-only afterwards). Returns the table, or
 * NULL with why ("libcudnn.so.9: cannot open shared object file ..."). */
const af_cudnn_api *af_cudnn_api_load(char *why, size_t cap);

/* "CUDNN_STATUS_NOT_SUPPORTED (3000): <cudnnGetLastErrorString text>" into buf. */
void af_cudnn_status_text(const af_cudnn_api *api, cudnnStatus_t st, char *buf, size_t cap);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif
