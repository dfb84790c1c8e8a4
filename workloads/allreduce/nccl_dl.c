/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL or RCCL through dlopen: the function table, the mapping of allreduce's dtypes and
 * operators to NCCL's enum values, and error texts that carry NCCL's own explanation
 * (ncclGetLastError, 2.13 and later) next to its result code. Only the entry points allreduce
 * calls are looked up; ncclGetLastError is optional, everything else is required. */
#include "allreduce/nccl_dl.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl.h: ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums (int-sized). */
typedef int nccl_result_t;
#define NCCL_SUCCESS 0
#define NCCL_IN_PROGRESS 7

struct nccl_dl {
    void *handle;
    char *library;
    int version;
    nccl_result_t (*get_version)(int *version);
    nccl_result_t (*get_unique_id)(nccl_dl_id_t *id);
    nccl_result_t (*comm_init_rank)(nccl_dl_comm_t *comm, int nranks, nccl_dl_id_t id, int rank);
    nccl_result_t (*all_reduce)(const void *send, void *recv, size_t count, int dtype, int op,
                                nccl_dl_comm_t comm, void *stream);
    nccl_result_t (*comm_get_async_error)(nccl_dl_comm_t comm, nccl_result_t *async_error);
    nccl_result_t (*comm_destroy)(nccl_dl_comm_t comm);
    nccl_result_t (*comm_abort)(nccl_dl_comm_t comm);
    const char *(*get_error_string)(nccl_result_t result);
    const char *(*get_last_error)(nccl_dl_comm_t comm); /* may be NULL */
};

int nccl_dl_dtype(ar_dtype_t dtype)
{
    switch (dtype) {
    case AR_DT_HALF:
        return 6; /* ncclFloat16 */
    case AR_DT_BF16:
        return 9; /* ncclBfloat16 */
    case AR_DT_DOUBLE:
        return 8; /* ncclFloat64 */
    case AR_DT_INT32:
        return 2; /* ncclInt32 */
    case AR_DT_FLOAT:
    default:
        return 7; /* ncclFloat32 */
    }
}

int nccl_dl_op(ar_op_t op)
{
    switch (op) {
    case AR_OP_PROD:
        return 1; /* ncclProd */
    case AR_OP_MAX:
        return 2; /* ncclMax */
    case AR_OP_MIN:
        return 3; /* ncclMin */
    case AR_OP_SUM:
    default:
        return 0; /* ncclSum */
    }
}

void nccl_dl_version_text(int code, char *buf, size_t len)
{
    if (code >= 10000)
        snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
    else if (code > 0)
        snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
    else
        snprintf(buf, len, "unknown");
}

/* Looks name up; required ones missing make the open fail with -ENOSYS. */
static void *s_sym(nccl_dl_t *self, const char *name, bool required, int *rc, char *why,
                   size_t whylen)
{
    void *p = dlsym(self->handle, name);
    if (!p && required && *rc == 0) {
        *rc = -ENOSYS;
        snprintf(why, whylen, "%s has no %s (not an NCCL/RCCL library?)", self->library, name);
    }
    return p;
}

int nccl_dl_open(const char *lib, nccl_dl_t **out, char *why, size_t whylen)
{
    *out = NULL;
    if (whylen)
        why[0] = '\0';
    void *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        snprintf(why, whylen, "cannot load %s: %s", lib, e ? e : "not found");
        return -ENOENT;
    }
    nccl_dl_t *self = xcalloc(1, sizeof *self);
    self->handle = handle;
    self->library = xstrdup(lib);
    int rc = 0;
    /* Casts through void * (POSIX guarantees dlsym's object pointers convert to functions). */
    *(void **)&self->get_version = s_sym(self, "ncclGetVersion", true, &rc, why, whylen);
    *(void **)&self->get_unique_id = s_sym(self, "ncclGetUniqueId", true, &rc, why, whylen);
    *(void **)&self->comm_init_rank = s_sym(self, "ncclCommInitRank", true, &rc, why, whylen);
    *(void **)&self->all_reduce = s_sym(self, "ncclAllReduce", true, &rc, why, whylen);
    *(void **)&self->comm_get_async_error =
        s_sym(self, "ncclCommGetAsyncError", true, &rc, why, whylen);
    *(void **)&self->comm_destroy = s_sym(self, "ncclCommDestroy", true, &rc, why, whylen);
    *(void **)&self->comm_abort = s_sym(self, "ncclCommAbort", true, &rc, why, whylen);
    *(void **)&self->get_error_string = s_sym(self, "ncclGetErrorString", true, &rc, why, whylen);
    *(void **)&self->get_last_error = s_sym(self, "ncclGetLastError", false, &rc, why, whylen);
    if (rc == 0 && self->get_version(&self->version) != NCCL_SUCCESS) {
        snprintf(why, whylen, "%s: ncclGetVersion failed", lib);
        rc = -EIO;
    }
    if (rc) {
        dlclose(handle); /* nothing of NCCL ran yet */
        nccl_dl_close(&self);
        return rc;
    }
    *out = self;
    return 0;
}

void nccl_dl_close(nccl_dl_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    nccl_dl_t *self = *self_p;
    /* Not dlclose'd: NCCL leaves threads and atexit handlers behind that would run unmapped
     * code; the process ends soon after anyway. */
    free(self->library);
    free(self);
    *self_p = NULL;
}

const char *nccl_dl_library(const nccl_dl_t *self)
{
    return self->library;
}

int nccl_dl_version(const nccl_dl_t *self)
{
    return self->version;
}

/* "what: NCCL's text (its last error)"; returns -EIO. */
static int s_fail(nccl_dl_t *self, nccl_dl_comm_t comm, nccl_result_t r, const char *what,
                  char *err, size_t errlen)
{
    const char *text = self->get_error_string(r);
    const char *last = self->get_last_error ? self->get_last_error(comm) : NULL;
    if (last && *last)
        snprintf(err, errlen, "%s: %s (%s)", what, text ? text : "unknown error", last);
    else
        snprintf(err, errlen, "%s: %s (set NCCL_DEBUG=WARN for details)", what,
                 text ? text : "unknown error");
    return -EIO;
}

int nccl_dl_unique_id(nccl_dl_t *self, nccl_dl_id_t *id, char *err, size_t errlen)
{
    nccl_result_t r = self->get_unique_id(id);
    return r == NCCL_SUCCESS ? 0 : s_fail(self, NULL, r, "ncclGetUniqueId", err, errlen);
}

int nccl_dl_comm_init(nccl_dl_t *self, nccl_dl_comm_t *comm, int nranks, const nccl_dl_id_t *id,
                      int rank, char *err, size_t errlen)
{
    *comm = NULL;
    nccl_result_t r = self->comm_init_rank(comm, nranks, *id, rank);
    if (r == NCCL_SUCCESS)
        return 0;
    *comm = NULL;
    return s_fail(self, NULL, r, "ncclCommInitRank", err, errlen);
}

int nccl_dl_allreduce(nccl_dl_t *self, const void *send, void *recv, size_t count, ar_dtype_t dtype,
                      ar_op_t op, nccl_dl_comm_t comm, void *stream, char *err, size_t errlen)
{
    nccl_result_t r =
        self->all_reduce(send, recv, count, nccl_dl_dtype(dtype), nccl_dl_op(op), comm, stream);
    return r == NCCL_SUCCESS ? 0 : s_fail(self, comm, r, "ncclAllReduce", err, errlen);
}

int nccl_dl_async_error(nccl_dl_t *self, nccl_dl_comm_t comm, char *err, size_t errlen)
{
    nccl_result_t async = NCCL_SUCCESS;
    nccl_result_t r = self->comm_get_async_error(comm, &async);
    if (r != NCCL_SUCCESS)
        return s_fail(self, comm, r, "ncclCommGetAsyncError", err, errlen);
    if (async != NCCL_SUCCESS && async != NCCL_IN_PROGRESS)
        return s_fail(self, comm, async, "NCCL communicator", err, errlen);
    return 0;
}

void nccl_dl_comm_end(nccl_dl_t *self, nccl_dl_comm_t *comm, bool abort)
{
    if (!comm || !*comm)
        return;
    if (abort)
        self->comm_abort(*comm);
    else
        self->comm_destroy(*comm);
    *comm = NULL;
}
