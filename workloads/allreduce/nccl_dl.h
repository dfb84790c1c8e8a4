/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL (libnccl.so.2) or RCCL (librccl.so.1) loaded at run time. Which collective library a node
 * has, and its version, is a property of the node, not of the build: the library is opened with
 * dlopen and the few functions allreduce needs are looked up by name. The types are declared here
 * from nccl.h's C ABI (RCCL keeps the same one): a 128-byte unique id passed by value, an opaque
 * communicator pointer, int-sized enums for results, data types and reduction operators, and the
 * stream as a pointer (cudaStream_t / hipStream_t). nccl.h is not needed to build.
 *
 * Functions return 0 or a negative errno: -ENOENT library not installed, -ENOSYS a function
 * missing from it, -EIO any NCCL error (err gets "what: NCCL's text; its last error"). A handle
 * belongs to one process; it is not meant to be shared across fork. */
#ifndef FB_NCCL_DL_H
#define FB_NCCL_DL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "allreduce/ar.h"

#define NCCL_DL_NVIDIA "libnccl.so.2"
#define NCCL_DL_AMD "librccl.so.1"
#define NCCL_DL_ID_BYTES 128

/* ncclUniqueId */
typedef struct {
    char internal[NCCL_DL_ID_BYTES];
} nccl_dl_id_t;

typedef struct nccl_dl nccl_dl_t;
typedef struct nccl_dl_comm *nccl_dl_comm_t; /* ncclComm_t */

/* ncclDataType_t / ncclRedOp_t values of an allreduce dtype / op. */
int nccl_dl_dtype(ar_dtype_t dtype);
int nccl_dl_op(ar_op_t op);
/* NCCL_VERSION_CODE as "2.28.9" (codes below 10000 are the pre-2.9 form X*1000+Y*100+Z). */
void nccl_dl_version_text(int code, char *buf, size_t len);

/* Opens lib (a file name looked up by the dynamic loader, or a path) and reads its version.
 * why gets a one-line reason on failure. */
int nccl_dl_open(const char *lib, nccl_dl_t **out, char *why, size_t whylen);
/* NULL-safe; nulls *self_p. Communicators must be destroyed first. */
void nccl_dl_close(nccl_dl_t **self_p);
/* The library as opened (borrowed) and ncclGetVersion's code. */
const char *nccl_dl_library(const nccl_dl_t *self);
int nccl_dl_version(const nccl_dl_t *self);

/* ncclGetUniqueId. The calling process hosts the bootstrap root, so it must live until every
 * rank has joined (ncclCommInitRank returned everywhere). */
int nccl_dl_unique_id(nccl_dl_t *self, nccl_dl_id_t *id, char *err, size_t errlen);
/* ncclCommInitRank on the current device. Blocks until all nranks ranks have joined. */
int nccl_dl_comm_init(nccl_dl_t *self, nccl_dl_comm_t *comm, int nranks, const nccl_dl_id_t *id,
                      int rank, char *err, size_t errlen);
/* ncclAllReduce (out-of-place when send != recv), enqueued on stream. */
int nccl_dl_allreduce(nccl_dl_t *self, const void *send, void *recv, size_t count, ar_dtype_t dtype,
                      ar_op_t op, nccl_dl_comm_t comm, void *stream, char *err, size_t errlen);
/* ncclCommGetAsyncError: 0 while the communicator is healthy (or in progress), -EIO with the
 * error once one was raised (a peer died, the network failed). */
int nccl_dl_async_error(nccl_dl_t *self, nccl_dl_comm_t comm, char *err, size_t errlen);
/* ncclCommDestroy, or ncclCommAbort when abort (after an error: does not wait for peers).
 * NULL-safe; nulls *comm. */
void nccl_dl_comm_end(nccl_dl_t *self, nccl_dl_comm_t *comm, bool abort);

#ifdef __cplusplus
}
#endif

#endif
