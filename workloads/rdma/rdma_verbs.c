/* SPDX-License-Identifier: Apache-2.0 */
/* Loads libibverbs with dlopen and looks up the functions rdmabw calls, so that the worker starts
 * on nodes without RDMA libraries and says what is missing instead of failing to exec. The data
 * path (post send/recv, poll) goes through provider ops in the context and needs no lookup. */
#include "rdma_verbs.h"

#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FB_HAVE_VERBS

bool rdma_verbs_built(void)
{
    return false;
}

int rdma_verbs_open(const char *lib, rdma_verbs_t **out, char *err, size_t errlen)
{
    (void)lib;
    *out = NULL;
    snprintf(err, errlen, "built without verbs (libibverbs headers were not found at build time)");
    return -ENOSYS;
}

void rdma_verbs_close(rdma_verbs_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

bool rdma_verbs_has_device(rdma_verbs_t *v, const char *name)
{
    (void)v;
    (void)name;
    return false;
}

bool rdma_verbs_has_dmabuf(const rdma_verbs_t *v)
{
    (void)v;
    return false;
}

#else

bool rdma_verbs_built(void)
{
    return true;
}

/* Looks up name into *fn; a required one that is missing is an error naming it. */
static int s_sym(void *lib, const char *name, void *fn, bool required, char *err, size_t errlen)
{
    void *p = dlsym(lib, name);
    memcpy(fn, &p, sizeof p);
    if (!p && required) {
        snprintf(err, errlen, "libibverbs has no %s (too old?)", name);
        return -ENOTSUP;
    }
    return 0;
}

int rdma_verbs_open(const char *lib, rdma_verbs_t **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *name = lib ? lib : "libibverbs.so.1";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen,
                 "%s does not load (%s): install libibverbs1 and the provider package "
                 "(rdma-core / ibverbs-providers)",
                 name, why ? why : "unknown reason");
        return -ENOENT;
    }
    rdma_verbs_t *v = xcalloc(1, sizeof *v);
    v->lib = h;
    int rc = 0;
#define REQ(field, sym)                                                                            \
    if (rc == 0)                                                                                   \
    rc = s_sym(h, sym, &v->field, true, err, errlen)
    REQ(get_device_list, "ibv_get_device_list");
    REQ(free_device_list, "ibv_free_device_list");
    REQ(get_device_name, "ibv_get_device_name");
    REQ(open_device, "ibv_open_device");
    REQ(close_device, "ibv_close_device");
    REQ(query_device, "ibv_query_device");
    REQ(query_port_compat, "ibv_query_port");
    REQ(query_gid, "ibv_query_gid");
    REQ(alloc_pd, "ibv_alloc_pd");
    REQ(dealloc_pd, "ibv_dealloc_pd");
    REQ(reg_mr, "ibv_reg_mr");
    REQ(dereg_mr, "ibv_dereg_mr");
    REQ(create_cq, "ibv_create_cq");
    REQ(destroy_cq, "ibv_destroy_cq");
    REQ(create_qp, "ibv_create_qp");
    REQ(modify_qp, "ibv_modify_qp");
    REQ(destroy_qp, "ibv_destroy_qp");
    REQ(wc_status_str, "ibv_wc_status_str");
#undef REQ
    if (rc == 0) {
        s_sym(h, "ibv_reg_mr_iova2", &v->reg_mr_iova2, false, err, errlen);
        s_sym(h, "ibv_reg_dmabuf_mr", &v->reg_dmabuf_mr, false, err, errlen);
    }
    if (rc < 0) {
        dlclose(h);
        free(v);
        return rc;
    }
    *out = v;
    return 0;
}

void rdma_verbs_close(rdma_verbs_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    /* The library stays loaded: providers register destructors and threads that do not all
     * survive being unloaded, and the worker exits soon after anyway. */
    free(*self_p);
    *self_p = NULL;
}

bool rdma_verbs_has_dmabuf(const rdma_verbs_t *v)
{
    return v && v->reg_dmabuf_mr;
}

struct ibv_context *rdma_verbs_open_device(rdma_verbs_t *v, const char *name)
{
    int n = 0;
    struct ibv_device **list = v->get_device_list(&n);
    struct ibv_context *ctx = NULL;
    for (int i = 0; list && i < n && !ctx; i++) {
        const char *dn = v->get_device_name(list[i]);
        if (dn && !strcmp(dn, name))
            ctx = v->open_device(list[i]);
    }
    if (list)
        v->free_device_list(list);
    return ctx;
}

bool rdma_verbs_has_device(rdma_verbs_t *v, const char *name)
{
    int n = 0;
    struct ibv_device **list = v->get_device_list(&n);
    bool found = false;
    for (int i = 0; list && i < n && !found; i++) {
        const char *dn = v->get_device_name(list[i]);
        found = dn && !strcmp(dn, name);
    }
    if (list)
        v->free_device_list(list);
    return found;
}

int rdma_verbs_query_port(const rdma_verbs_t *v, struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr)
{
    struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
    if (vctx)
        return vctx->query_port(ctx, port, attr, sizeof *attr);
    memset(attr, 0, sizeof *attr);
    return v->query_port_compat(ctx, port, (struct _compat_ibv_port_attr *)attr);
}

#endif
