/* SPDX-License-Identifier: Apache-2.0 */
/* The result of one task as plain C data: verdict, metrics, findings and an error text.
 * Workers fill one; the agent spools it; the coordinator stores it. wire.h converts it to and
 * from the TaskResult message. */
#ifndef FB_RESULT_H
#define FB_RESULT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    FB_VERDICT_NONE = 0, /* not decided yet */
    FB_VERDICT_PASS = 1,
    FB_VERDICT_FAIL = 2,
    FB_VERDICT_SKIPPED = 3,
    FB_VERDICT_TIMEOUT = 4,
    FB_VERDICT_LOST = 5,
    FB_VERDICT_ERROR = 6,
} fb_verdict_t;
#define FB_VERDICT_MAX FB_VERDICT_ERROR

/* "pass", "fail", "skipped", "timeout", "lost", "error"; "pending" for NONE. */
const char *fb_verdict_name(fb_verdict_t v);
/* Returns the verdict named by name, or -1. */
int fb_verdict_parse(const char *name);
/* True for verdicts that do not make a campaign fail (pass, skipped). */
int fb_verdict_ok(fb_verdict_t v);

typedef struct {
    char *name;
    double value;
    char *unit;
} fb_metric_t;

typedef struct {
    char *part; /* the suspect part: node, DIMM label, node/gpu0 ... */
    char *kind; /* node, gpu, dimm, nic, link, memory */
    char *what; /* evidence, for people */
} fb_finding_t;

typedef struct {
    char *result_id;
    char *task_id;
    char *node;
    fb_verdict_t verdict;
    char *error;
    uint64_t started_ms, finished_ms;
    fb_metric_t *metrics;
    size_t n_metrics, cap_metrics;
    fb_finding_t *findings;
    size_t n_findings, cap_findings;
} fb_result_t;

fb_result_t *fb_result_new(void);
void fb_result_destroy(fb_result_t **self_p);

void fb_result_add_metric(fb_result_t *self, const char *name, double value, const char *unit);
/* Sets or replaces the metric called name. */
void fb_result_set_metric(fb_result_t *self, const char *name, double value, const char *unit);
/* Returns the metric called name, or NULL (borrowed). */
const fb_metric_t *fb_result_metric(const fb_result_t *self, const char *name);
void fb_result_add_finding(fb_result_t *self, const char *part, const char *kind, const char *what);
void fb_result_add_findingf(fb_result_t *self, const char *part, const char *kind, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));
/* Replaces the error text (copied). */
void fb_result_set_error(fb_result_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* fb_result_set_error with the arguments in ap. */
void fb_result_set_errorv(fb_result_t *self, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
void fb_result_set_ids(fb_result_t *self, const char *result_id, const char *task_id,
                       const char *node);

#endif
