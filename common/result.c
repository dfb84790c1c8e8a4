/* SPDX-License-Identifier: Apache-2.0 */
/* Task results as growable arrays of metrics and findings. */
#include "result.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *s_verdict_names[] = {"pending", "pass", "fail", "skipped",
                                        "timeout", "lost", "error"};

const char *fb_verdict_name(fb_verdict_t v)
{
    if ((int)v < 0 || v > FB_VERDICT_MAX)
        return "invalid";
    return s_verdict_names[v];
}

int fb_verdict_parse(const char *name)
{
    for (int i = 0; i <= FB_VERDICT_MAX; i++)
        if (name && !strcmp(name, s_verdict_names[i]))
            return i;
    return -1;
}

int fb_verdict_ok(fb_verdict_t v)
{
    return v == FB_VERDICT_PASS || v == FB_VERDICT_SKIPPED;
}

fb_result_t *fb_result_new(void)
{
    return xcalloc(1, sizeof(fb_result_t));
}

void fb_result_destroy(fb_result_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_result_t *self = *self_p;
    for (size_t i = 0; i < self->n_metrics; i++) {
        free(self->metrics[i].name);
        free(self->metrics[i].unit);
    }
    for (size_t i = 0; i < self->n_findings; i++) {
        free(self->findings[i].part);
        free(self->findings[i].kind);
        free(self->findings[i].what);
    }
    free(self->metrics);
    free(self->findings);
    free(self->result_id);
    free(self->task_id);
    free(self->node);
    free(self->error);
    free(self);
    *self_p = NULL;
}

void fb_result_add_metric(fb_result_t *self, const char *name, double value, const char *unit)
{
    if (self->n_metrics == self->cap_metrics) {
        self->cap_metrics = self->cap_metrics ? self->cap_metrics * 2 : 8;
        self->metrics = xrealloc(self->metrics, self->cap_metrics * sizeof(fb_metric_t));
    }
    fb_metric_t *m = &self->metrics[self->n_metrics++];
    m->name = xstrdup(name);
    m->value = value;
    m->unit = xstrdup(unit ? unit : "");
}

void fb_result_set_metric(fb_result_t *self, const char *name, double value, const char *unit)
{
    for (size_t i = 0; i < self->n_metrics; i++) {
        if (!strcmp(self->metrics[i].name, name)) {
            self->metrics[i].value = value;
            free(self->metrics[i].unit);
            self->metrics[i].unit = xstrdup(unit ? unit : "");
            return;
        }
    }
    fb_result_add_metric(self, name, value, unit);
}

const fb_metric_t *fb_result_metric(const fb_result_t *self, const char *name)
{
    for (size_t i = 0; i < self->n_metrics; i++)
        if (!strcmp(self->metrics[i].name, name))
            return &self->metrics[i];
    return NULL;
}

void fb_result_add_finding(fb_result_t *self, const char *part, const char *kind, const char *what)
{
    if (self->n_findings == self->cap_findings) {
        self->cap_findings = self->cap_findings ? self->cap_findings * 2 : 8;
        self->findings = xrealloc(self->findings, self->cap_findings * sizeof(fb_finding_t));
    }
    fb_finding_t *f = &self->findings[self->n_findings++];
    f->part = xstrdup(part ? part : "");
    f->kind = xstrdup(kind ? kind : "");
    f->what = xstrdup(what ? what : "");
}

void fb_result_add_findingf(fb_result_t *self, const char *part, const char *kind, const char *fmt,
                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    fb_result_add_finding(self, part, kind, what);
    free(what);
}

void fb_result_set_error(fb_result_t *self, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fb_result_set_errorv(self, fmt, ap);
    va_end(ap);
}

void fb_result_set_errorv(fb_result_t *self, const char *fmt, va_list ap)
{
    char *text = xvasprintf(fmt, ap);
    free(self->error);
    self->error = text;
}

void fb_result_set_ids(fb_result_t *self, const char *result_id, const char *task_id,
                       const char *node)
{
    free(self->result_id);
    free(self->task_id);
    free(self->node);
    self->result_id = xstrdup(result_id);
    self->task_id = xstrdup(task_id);
    self->node = xstrdup(node);
}
