/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's comparison with its baseline (`report --format html --baseline ID`): the
 * regressions and improvements `fleetburn compare` finds (compare.c; docs/regressions.md), and
 * what changed in the nodes' environment between the two campaigns, right after the diagnosis,
 * since a part that got worse is the next thing an operator looks at. */
#include "compare.h"
#include "report_html_internal.h"

#include <math.h>
#include <stdlib.h>

/* Rows listed per table before "and N more": the JSON report has them all. */
#define S_ROWS_MAX 50

static void s_value(FILE *out, double v, const char *unit)
{
    if (isnan(v))
        fputs("-", out);
    else
        report__html_textf(out, "%.4g%s%s", v, unit && *unit ? " " : "", unit ? unit : "");
}

static void s_change(FILE *out, const compare_item_t *it)
{
    if (isnan(it->change))
        fputs("from 0", out);
    else
        fprintf(out, "%+.1f%%", it->change * 100);
}

static void s_items(FILE *out, const char *title, const char *css, const compare_item_t *items,
                    size_t n)
{
    fprintf(out, "<h3>%s: %zu</h3>", title, n);
    if (!n)
        return;
    fputs("<table><tr><th>stage</th><th>part</th><th>metric</th><th>base</th><th>now</th>"
          "<th>change</th><th>judged</th></tr>",
          out);
    for (size_t i = 0; i < n && i < S_ROWS_MAX; i++) {
        const compare_item_t *it = &items[i];
        fputs("<tr><td>", out);
        report__html_text(out, it->stage);
        fputs("</td><td>", out);
        report__html_text(out, it->fleet_wide ? "the whole stage" : it->part);
        fputs("</td><td>", out);
        report__html_text(out, it->metric);
        fputs("</td><td class=\"num\">", out);
        s_value(out, it->base, it->unit);
        fputs("</td><td class=\"num\">", out);
        s_value(out, it->now, it->unit);
        fprintf(out, "</td><td class=\"num\"><span class=\"badge %s\">", css);
        s_change(out, it);
        fputs("</span></td><td>", out);
        if (it->by_fleet && !isnan(it->fleet_change))
            report__html_textf(out, "against the fleet's median change %+.1f%% of %zu",
                               it->fleet_change * 100, it->fleet_parts);
        else
            report__html_textf(out, "on its tolerance alone (%zu value%s)", it->fleet_parts,
                               it->fleet_parts == 1 ? "" : "s");
        fputs("</td></tr>", out);
    }
    fputs("</table>", out);
    if (n > S_ROWS_MAX)
        fprintf(out, "<p class=\"muted\">and %zu more (fleetburn compare)</p>", n - S_ROWS_MAX);
}

static void s_fp_changes(FILE *out, const compare_t *cmp)
{
    if (!cmp->n_fp_changes) {
        fputs("<p>The nodes' environment (driver, firmware, kernel, libraries) is unchanged.</p>",
              out);
        return;
    }
    fputs("<h3>What changed on the nodes</h3><table><tr><th>component</th><th>base</th>"
          "<th>now</th><th>nodes</th></tr>",
          out);
    for (size_t i = 0; i < cmp->n_fp_changes && i < S_ROWS_MAX; i++) {
        const compare_fp_change_t *f = &cmp->fp_changes[i];
        fputs("<tr><td>", out);
        report__html_text(out, f->component);
        fputs("</td><td>", out);
        report__html_text(out, f->base ? f->base : "-");
        fputs("</td><td>", out);
        report__html_text(out, f->now ? f->now : "-");
        fputs("</td><td>", out);
        for (size_t k = 0; k < f->n_nodes && k < 8; k++) {
            report__html_text(out, f->nodes[k]);
            fputs(k + 1 < f->n_nodes ? " " : "", out);
        }
        if (f->n_nodes > 8)
            fprintf(out, "and %zu more", f->n_nodes - 8);
        fputs("</td></tr>", out);
    }
    fputs("</table>", out);
}

void report__html_compare(report_html_t *h)
{
    if (!h->base)
        return;
    FILE *out = h->out;
    compare_t *cmp = NULL;
    char *error = NULL;
    fputs("<section id=\"compare\"><h2>Compared with the baseline</h2>", out);
    int rc = compare_campaigns(h->store, h->base->id, h->c->id, &cmp, &error);
    if (rc) {
        fputs("<p>The comparison could not be made: ", out);
        report__html_text(out, error ? error : "the store could not be read");
        fputs("</p></section>\n", out);
        free(error);
        return;
    }
    fputs("<p>", out);
    report__html_textf(out, "Every metric of this campaign against %s (%s): %zu values of %zu parts "
                            "compared (docs/regressions.md).",
                       h->base->id, h->base->name ? h->base->name : "", cmp->values_compared,
                       cmp->parts_compared);
    fputs("</p>", out);
    s_items(out, "Regressions", "v-fail", cmp->regressions, cmp->n_regressions);
    s_items(out, "Improvements", "v-pass", cmp->improvements, cmp->n_improvements);
    s_fp_changes(out, cmp);
    fputs("</section>\n", out);
    compare_destroy(&cmp);
}
