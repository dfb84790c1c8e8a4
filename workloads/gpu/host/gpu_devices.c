/* SPDX-License-Identifier: Apache-2.0 */
/* Device selection and the no-device verdict shared by the GPU workloads. */
#include "gpu_devices.h"
#include "common/units.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Copies text[0..len) without surrounding blanks into a new heap string. */
static char *s_trimmed(const char *text, size_t len)
{
    while (len && isspace((unsigned char)*text))
        text++, len--;
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    return xstrndup(text, len);
}

int gpu_parse_devices(const char *text, int n_visible, int **list_out, size_t *n_out)
{
    *list_out = NULL;
    *n_out = 0;
    if (!text)
        return -EINVAL;
    char *whole = s_trimmed(text, strlen(text));
    bool all = !strcmp(whole, "all");
    free(whole);
    if (all) {
        if (n_visible <= 0)
            return -ENODEV;
        int *list = xcalloc((size_t)n_visible, sizeof *list);
        for (int i = 0; i < n_visible; i++)
            list[i] = i;
        *list_out = list;
        *n_out = (size_t)n_visible;
        return 0;
    }
    size_t cap = 1;
    for (const char *s = text; *s; s++)
        cap += *s == ',';
    int *list = xcalloc(cap, sizeof *list);
    size_t n = 0;
    int rc = 0;
    for (const char *s = text; rc == 0;) {
        const char *end = strchr(s, ',');
        char *item = s_trimmed(s, end ? (size_t)(end - s) : strlen(s));
        uint64_t v = 0;
        if (fb_parse_uint(item, 1u << 20, &v)) {
            rc = -EINVAL;
        } else if ((int64_t)v >= n_visible) {
            rc = -ENODEV;
        } else {
            for (size_t k = 0; k < n; k++)
                if (list[k] == (int)v)
                    rc = -EINVAL;
            list[n++] = (int)v;
        }
        free(item);
        if (!end)
            break;
        s = end + 1;
    }
    if (rc) {
        free(list);
        return rc;
    }
    *list_out = list;
    *n_out = n;
    return 0;
}

fb_verdict_t gpu_no_devices(worker_ctx_t *ctx, const char *workload, const char *vendor,
                            const char *why)
{
    const char *vendors = getenv("FLEETBURN_GPU_VENDORS");
    if (vendors && strstr(vendors, vendor))
        return worker_error(ctx, "%s: this node has %s GPUs but the runtime sees none: %s",
                            workload, vendor, why);
    fb_result_set_error(worker_result(ctx), "%s skipped: no GPUs on this node (%s)", workload, why);
    worker_log(ctx, "%s skipped: no GPUs (%s)", workload, why);
    return FB_VERDICT_SKIPPED;
}
