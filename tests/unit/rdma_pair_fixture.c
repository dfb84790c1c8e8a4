/* SPDX-License-Identifier: Apache-2.0 */
/* A pair of RDMA workload members run at once (rdma_pair_fixture.h). */
#include "rdma_pair_fixture.h"

#include "common/util.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

typedef struct {
    rdma_pair_member_t *member;
    const rdmabw_opts_t *opts;
} s_thread_arg_t;

static void *s_member(void *arg)
{
    s_thread_arg_t *a = arg;
    a->member->verdict = rdmabw_run_opts(a->member->ctx, a->opts);
    return NULL;
}

void rdma_pair_run(rdma_pair_member_t m[2], const rdmabw_opts_t *opts)
{
    char tmpl[] = "/tmp/fbrdma-pair-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    setenv("FLEETBURN_EXCHANGE_DIR", dir, 1);
    const char *peers[] = {"node01", "node02"};
    for (unsigned r = 0; r < 2; r++)
        worker_ctx_set_group(m[r].ctx, r, 2, peers, NULL);
    s_thread_arg_t args[2] = {{&m[0], opts}, {&m[1], opts}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, s_member, &args[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    unsetenv("FLEETBURN_EXCHANGE_DIR");
    char *cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}
