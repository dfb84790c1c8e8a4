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
