/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_campaign_parse and fb_campaign_attach_files: a campaign as `fleetburn run` reads it
 * and as a Submit carries it to the coordinator, with the files it names. The input is the
 * campaign text, then for each file the campaign names (fb_campaign_file_names order) a NUL byte
 * and that file's content; a chunk more than the campaign names is attached as "extra.topo".
 * A parsed campaign's node selections are checked (and, when small, expanded) and its parameters
 * read, as the runner does, after its Slurm selections are resolved as the coordinator does; an
 * error is one line. */
#include "fuzz.h"

#include "common/hostlist.h"
#include "scheduler/campaign.h"
#include "scheduler/slurm.h"

#include <errno.h>

/* Node lists above this size are checked, not expanded: expansion is linear and slow. */
#define S_EXPAND_MAX 4096
#define S_FILES_MAX 8

FZ_INITIALIZE()

static void s_check_stages(const fb_campaign_t *c)
{
    for (size_t i = 0; i < c->n_stages; i++) {
        const fb_stage_t *s = &c->stages[i];
        FZ_CHECK(s->name && s->workload && s->timeout_ms > 0);
        for (size_t k = 0; k < s->n_params; k++)
            FZ_CHECK(fb_stage_param(s, s->params[k].key) != NULL);
        (void)fb_on_fail_name(s->on_fail);
        /* Parsing checked every hostlist, so the runner's expansion cannot fail. */
        const char *expr = s->nodes_expr ? s->nodes_expr : c->nodes_expr;
        if (fb_slurm_is_selection(expr)) {
            char err[256];
            FZ_CHECK(fb_slurm_selection_parse(expr, NULL, NULL, err, sizeof err) == 0);
            expr = fb_campaign_selection(c, expr);
            FZ_CHECK(expr != NULL);
        }
        size_t count = 0;
        char err[256];
        if (expr && strcmp(expr, "all") != 0) {
            int rc = fb_hostlist_check(expr, &count, err, sizeof err);
            if (rc != 0)
                fprintf(stderr, "stage %s: %s\n", s->name, err);
            FZ_CHECK(rc == 0);
        }
        if (count <= S_EXPAND_MAX) {
            bool all = false;
            char **names = NULL;
            size_t n = 0;
            int rc = fb_stage_nodes(c, s, &all, &names, &n, err, sizeof err);
            if (rc != 0)
                fprintf(stderr, "stage %s: %s\n", s->name, err);
            FZ_CHECK(rc == 0 && (all || (n >= 1 && n <= count)));
            fb_hostlist_free(names, n);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t yaml_len = nul ? (size_t)(nul - text) : size;
    fb_campaign_t *c = NULL;
    char *error = NULL;
    int rc = fb_campaign_parse(text, yaml_len, "fuzz.yaml", &c, &error);
    if (rc != 0) {
        FZ_CHECK((rc == -EINVAL || rc == -EFBIG) && c == NULL);
        FZ_CHECK(error != NULL && error[0] != '\0' && strchr(error, '\n') == NULL);
        free(error);
        return 0;
    }
    FZ_CHECK(c != NULL && error == NULL && c->n_stages >= 1);
    /* The coordinator resolves Slurm selections (sinfo) before the runner expands them. */
    size_t n_sel = fb_campaign_slurm_selections(c, NULL, 0);
    const char **sel = calloc(n_sel + 1, sizeof *sel);
    FZ_CHECK(sel != NULL && fb_campaign_slurm_selections(c, sel, n_sel) == n_sel);
    for (size_t i = 0; i < n_sel; i++)
        FZ_CHECK(fb_campaign_resolve_selection(c, sel[i], "fz[1-2]") == 0);
    free(sel);
    s_check_stages(c);

    /* The files, as a Submit attaches them. */
    const char *names[S_FILES_MAX];
    size_t n_names = fb_campaign_file_names(c, names, S_FILES_MAX);
    fb_campaign_file_t files[S_FILES_MAX + 1];
    size_t n_files = 0;
    const char *p = nul ? nul + 1 : NULL, *end = text + size;
    while (p && p <= end && n_files < S_FILES_MAX + 1) {
        const char *next = memchr(p, '\0', (size_t)(end - p));
        size_t len = next ? (size_t)(next - p) : (size_t)(end - p);
        const char *name =
            n_files < n_names && n_files < S_FILES_MAX ? names[n_files] : "extra.topo";
        files[n_files++] = (fb_campaign_file_t){name, p, len};
        p = next ? next + 1 : NULL;
    }
    if (n_files > 0 || n_names > 0) {
        rc = fb_campaign_attach_files(c, files, n_files, &error);
        if (rc == 0) {
            FZ_CHECK(error == NULL);
            for (size_t i = 0; i < c->n_stages; i++)
                FZ_CHECK((!c->stages[i].topology_path || c->stages[i].topology != NULL) &&
                         (!c->stages[i].routes_path || c->stages[i].routes != NULL));
        } else {
            FZ_CHECK(rc == -EINVAL && error != NULL && strchr(error, '\n') == NULL);
            free(error);
        }
    }
    fb_campaign_destroy(&c);
    FZ_CHECK(c == NULL);
    return 0;
}
