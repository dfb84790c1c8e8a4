/* SPDX-License-Identifier: Apache-2.0 */
/* The progress line of `fleetburn run`, local or remote (cli.h). */
#include "cli.h"
#include "report.h"
#include "conns.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* --- progress display ----------------------------------------------------------------------- */

void cli_show_progress(progress_view_t *view, const char *stage, unsigned idx, unsigned count,
                       unsigned total, unsigned done, unsigned failed, uint64_t elapsed_ms,
                       bool finished)
{
    uint64_t now = fb_mono_ms();
    bool changed = !view->printed || idx != view->last_stage || done != view->last_done;
    if (!finished && !changed && now - view->last_print < (view->tty ? 1000u : 10000u))
        return;
    char elapsed[32];
    fb_format_duration(elapsed_ms, elapsed, sizeof elapsed);
    if (finished) {
        if (view->tty)
            fprintf(stderr, "\r\033[K");
        fprintf(stderr, "campaign finished after %s\n", elapsed);
    } else {
        fprintf(stderr, "%s[stage %u/%u %s] %u/%u nodes done, %u failed, %s elapsed%s",
                view->tty ? "\r\033[K" : "", idx + 1 > count ? count : idx + 1, count, stage, done,
                total, failed, elapsed, view->tty ? "" : "\n");
    }
    fflush(stderr);
    view->last_print = now;
    view->last_stage = idx;
    view->last_done = done;
    view->printed = true;
}
