/* SPDX-License-Identifier: Apache-2.0 */
/* libibverbs loaded at run time (dlopen "libibverbs.so.1"), so that one worker binary runs on
 * every node, HCA or not. Only the library's exported functions are looked up; the verbs.h inline
 * wrappers on the data path (ibv_post_send, ibv_post_recv, ibv_poll_cq) call through the context's
 * provider ops and need no symbol. ibv_query_port is an inline wrapper too: rdma_verbs_query_port
 * does what it does, with the exported compat function as the fallback.
 *
 * Without verbs headers at build time (WITH_VERBS off, or libibverbs-dev absent) the functions
 * here still exist and say "built without verbs". */
#ifndef FB_RDMA_VERBS_H
#define FB_RDMA_VERBS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rdma_verbs rdma_verbs_t;

/* True when this worker was built against the verbs headers. */
bool rdma_verbs_built(void);

/* Loads lib (NULL: "libibverbs.so.1") and every function rdmabw needs. Returns 0, -ENOSYS when
 * built without verbs, -ENOENT when the library does not load, -ENOTSUP when it lacks a required
 * function; err says which in words. */
int rdma_verbs_open(const char *lib, rdma_verbs_t **out, char *err, size_t errlen);
void rdma_verbs_close(rdma_verbs_t **self_p);

/* True when libibverbs lists a device called name (a provider for it is installed). */
bool rdma_verbs_has_device(rdma_verbs_t *v, const char *name);
/* True when the library can register dma-buf memory (ibv_reg_dmabuf_mr, rdma-core 34+). */
bool rdma_verbs_has_dmabuf(const rdma_verbs_t *v);

#ifdef FB_HAVE_VERBS
#include <infiniband/verbs.h>

struct rdma_verbs {
    void *lib;
    struct ibv_device **(*get_device_list)(int *num);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    int (*query_port_compat)(struct ibv_context *ctx, uint8_t port,
                             struct _compat_ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    /* optional: NULL in old libraries */
    struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                   unsigned access);
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
                                    int fd, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
                                struct ibv_comp_channel *channel, int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    const char *(*wc_status_str)(enum ibv_wc_status status);
};

/* ibv_query_port as the verbs.h inline does it: the extended provider op when there is one,
 * else the exported function with the older, shorter structure. */
int rdma_verbs_query_port(const rdma_verbs_t *v, struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr);
/* Opens the device called name; NULL when libibverbs does not list it. */
struct ibv_context *rdma_verbs_open_device(rdma_verbs_t *v, const char *name);
#endif

#endif
