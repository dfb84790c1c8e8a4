/* SPDX-License-Identifier: Apache-2.0 */
/* The `sleep` workload: takes a given time and then passes, fails, crashes or hangs on request.
 * Integration tests use it to exercise deadlines, cancellation, crashes and lost agents with
 * tasks of known length; it loads nothing. */
#include "sleep.h"
#include "common/units.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* All-gathers the members' node names through the coordinator and checks that rank r's value is
 * the node the group says holds rank r: proves the rendezvous end to end. */
static fb_verdict_t s_exchange_names(worker_ctx_t *ctx)
{
    const char *me = worker_node(ctx);
    worker_blob_t *values = NULL;
    char err[512];
    int rc = worker_exchange(ctx, "names", me, strlen(me), 60000, &values, err, sizeof err);
    if (rc)
        return worker_error(ctx, "%s", err);
    fb_verdict_t verdict = FB_VERDICT_PASS;
    for (unsigned r = 0; r < worker_size(ctx); r++) {
        const char *peer = worker_peer(ctx, r);
        if (values[r].len != strlen(peer) || memcmp(values[r].data, peer, values[r].len)) {
            verdict = worker_error(ctx, "exchange: rank %u posted '%.*s', expected '%s'", r,
                                   (int)values[r].len, (const char *)values[r].data, peer);
            break;
        }
    }
    worker_blobs_free(&values, worker_size(ctx));
    if (verdict == FB_VERDICT_PASS) {
        worker_log(ctx, "exchange: %u members agree on the group (rank %u)", worker_size(ctx),
                   worker_rank(ctx));
        fb_result_add_metric(worker_result(ctx), "sleep.group_size", worker_size(ctx), "");
    }
    return verdict;
}

static void s_sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

fb_verdict_t sleep_run(worker_ctx_t *ctx)
{
    fb_result_t *result = worker_result(ctx);
    const char *duration = worker_param(ctx, "duration");
    const char *exit_mode = worker_param(ctx, "exit");
    uint64_t ms = 1000;
    if (duration && fb_parse_duration_ms(duration, &ms)) {
        fb_result_set_error(result, "duration: '%s' is not a duration", duration);
        return FB_VERDICT_ERROR;
    }
    if (!exit_mode)
        exit_mode = "pass";
    const char *exchange = worker_param(ctx, "exchange");
    bool do_exchange = false;
    if (exchange && fb_parse_bool(exchange, &do_exchange)) {
        fb_result_set_error(result, "exchange: '%s' is not a boolean", exchange);
        return FB_VERDICT_ERROR;
    }
    if (do_exchange) {
        fb_verdict_t v = s_exchange_names(ctx);
        if (v != FB_VERDICT_PASS)
            return v;
    }
    uint64_t step = ms / 10 ? ms / 10 : 1;
    for (uint64_t done = 0; done < ms; done += step) {
        worker_progress(ctx, (double)done / (double)ms, "sleeping");
        /* A sample per step so that tests see telemetry reach the timeline. */
        fb_metric_t sample = {"sleep.elapsed_ms", (double)done, "ms"};
        worker_telemetry(ctx, &sample, 1);
        s_sleep_ms(step < ms - done ? step : ms - done);
    }
    fb_result_add_metric(result, "slept_ms", (double)ms, "ms");
    if (!strcmp(exit_mode, "crash")) {
        raise(SIGSEGV);
    } else if (!strcmp(exit_mode, "hang")) {
        for (;;)
            pause();
    } else if (!strcmp(exit_mode, "fail")) {
        fb_result_add_findingf(result, worker_node(ctx), "node", "sleep asked to fail");
        return FB_VERDICT_FAIL;
    } else if (strcmp(exit_mode, "pass")) {
        fb_result_set_error(result, "exit: '%s' is not one of pass, fail, crash, hang", exit_mode);
        return FB_VERDICT_ERROR;
    }
    return FB_VERDICT_PASS;
}
