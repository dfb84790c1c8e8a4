/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_wire_result_unpack: the serialized TaskResult a worker leaves in its result file and the
 * agent keeps in its spool. A result that unpacks must pack again into bytes that unpack to the
 * same result. */
#include "fuzz.h"

#include "common/result.h"
#include "common/wire.h"

#include <math.h>

FZ_INITIALIZE()

static int s_streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int s_same(const fb_result_t *a, const fb_result_t *b)
{
    if (!s_streq(a->result_id, b->result_id) || !s_streq(a->task_id, b->task_id) ||
        !s_streq(a->node, b->node) || a->verdict != b->verdict || !s_streq(a->error, b->error) ||
        a->started_ms != b->started_ms || a->finished_ms != b->finished_ms ||
        a->n_metrics != b->n_metrics || a->n_findings != b->n_findings)
        return 0;
    for (size_t i = 0; i < a->n_metrics; i++) {
        const fb_metric_t *x = &a->metrics[i], *y = &b->metrics[i];
        if (!s_streq(x->name, y->name) || !s_streq(x->unit, y->unit))
            return 0;
        if (!(x->value == y->value || (isnan(x->value) && isnan(y->value))))
            return 0;
    }
    for (size_t i = 0; i < a->n_findings; i++) {
        const fb_finding_t *x = &a->findings[i], *y = &b->findings[i];
        if (!s_streq(x->part, y->part) || !s_streq(x->kind, y->kind) || !s_streq(x->what, y->what))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    fb_result_t *r = fb_wire_result_unpack(data, size, err, sizeof err);
    if (!r) {
        FZ_CHECK(err[0] != '\0');
        return 0;
    }
    FZ_CHECK(r->verdict >= FB_VERDICT_PASS && r->verdict <= FB_VERDICT_MAX);
    (void)fb_verdict_name(r->verdict);
    size_t len = 0;
    uint8_t *buf = fb_wire_result_pack(r, &len);
    fb_result_t *again = fb_wire_result_unpack(buf, len, err, sizeof err);
    if (!again)
        fprintf(stderr, "re-unpack failed: %s\n", err);
    FZ_CHECK(again != NULL);
    FZ_CHECK(s_same(r, again));
    fb_result_destroy(&again);
    fb_result_destroy(&r);
    free(buf);
    return 0;
}
