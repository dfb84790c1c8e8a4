/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line fault injection checked against the workload schema and the campaign
 * (inject.h). */
#include "inject.h"
#include "campaign.h"
#include "workload.h"
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_EXPECTED_FORM "expected [WORKLOAD.]KEY=VALUE, e.g. memtest.inject_bitflips=4"

/* Whether a stage of c runs workload w (every workload runs when there is no campaign). */
static bool s_runs(const fb_campaign_t *c, const fb_workload_spec_t *w)
{
    for (size_t i = 0; c && i < c->n_stages; i++)
        if (!strcmp(c->stages[i].workload, w->name))
            return true;
    return !c;
}

/* "memtest, sleep": the workloads c runs (every one without c). */
static const char *s_workloads_run(const fb_campaign_t *c, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < fb_workload_count(); i++) {
        const fb_workload_spec_t *w = fb_workload_at(i);
        if (s_runs(c, w) && o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", w->name);
    }
    return buf;
}

/* Every parameter of w, the fault-injection ones included: they are what --inject is for. */
static const char *s_all_params(const fb_workload_spec_t *w, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->n_params && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", w->params[i].name);
    return buf;
}

static int s_check_value(const fb_workload_spec_t *w, const fb_param_spec_t *p, const char *value,
                         char *err, size_t errlen)
{
    char problem[256], expected[512];
    if (!fb_param_check(p, value, problem, sizeof problem, expected, sizeof expected))
        return 0;
    snprintf(err, errlen, "%s.%s: %s; %s", w->name, p->name, problem, expected);
    return -EINVAL;
}

/* KEY of a named WORKLOAD. */
static int s_check_named(const char *workload, const char *key, const char *value,
                         const fb_campaign_t *c, char *err, size_t errlen)
{
    char shown[128], list[1024];
    const fb_workload_spec_t *w = fb_workload_find(workload);
    if (!w) {
        snprintf(err, errlen, "unknown workload '%s'; expected one of %s",
                 fb_show_value(workload, shown, sizeof shown), s_workloads_run(NULL, list, sizeof list));
        return -EINVAL;
    }
    if (!s_runs(c, w)) {
        snprintf(err, errlen, "no stage of the campaign runs %s, so nothing would be injected; "
                              "expected one of the workloads it runs: %s",
                 w->name, s_workloads_run(c, list, sizeof list));
        return -EINVAL;
    }
    const fb_param_spec_t *p = fb_workload_param(w, key);
    if (!p) {
        snprintf(err, errlen, "%s has no parameter '%s'; expected one of %s", w->name,
                 fb_show_value(key, shown, sizeof shown), s_all_params(w, list, sizeof list));
        return -EINVAL;
    }
    return s_check_value(w, p, value, err, errlen);
}

/* KEY without a workload: every task of the agent gets it, so some workload must take it. */
static int s_check_any(const char *key, const char *value, const fb_campaign_t *c, char *err,
                       size_t errlen)
{
    bool found = false;
    for (size_t i = 0; i < fb_workload_count(); i++) {
        const fb_workload_spec_t *w = fb_workload_at(i);
        const fb_param_spec_t *p = s_runs(c, w) ? fb_workload_param(w, key) : NULL;
        if (p && s_check_value(w, p, value, err, errlen))
            return -EINVAL;
        found = found || p;
    }
    if (found)
        return 0;
    char shown[128], list[1024];
    snprintf(err, errlen, "'%s' is not a parameter of %s (%s); %s",
             fb_show_value(key, shown, sizeof shown),
             c ? "any workload the campaign runs" : "any workload",
             s_workloads_run(c, list, sizeof list), S_EXPECTED_FORM);
    return -EINVAL;
}

int fb_inject_check(const char *spec, const fb_campaign_t *c, char *err, size_t errlen)
{
    char shown[128];
    const char *eq = spec ? strchr(spec, '=') : NULL;
    if (!eq || eq == spec) {
        snprintf(err, errlen, "'%s': %s", fb_show_value(spec ? spec : "", shown, sizeof shown),
                 S_EXPECTED_FORM);
        return -EINVAL;
    }
    const char *dot = memchr(spec, '.', (size_t)(eq - spec));
    char *workload = dot ? xstrndup(spec, (size_t)(dot - spec)) : NULL;
    char *key = dot ? xstrndup(dot + 1, (size_t)(eq - dot - 1)) : xstrndup(spec, (size_t)(eq - spec));
    int rc = workload ? s_check_named(workload, key, eq + 1, c, err, errlen)
                      : s_check_any(key, eq + 1, c, err, errlen);
    free(workload);
    free(key);
    return rc;
}
