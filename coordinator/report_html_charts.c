/* SPDX-License-Identifier: Apache-2.0 */
/* The HTML report's workload charts, drawn from the metrics and findings results carry:
 *   - GPU peer-to-peer: the copy-engine bandwidth matrix of a node (p2p.ce_uni.I_J, GB/s) as a
 *     heatmap; on a fleet, the nodes with the slowest link first, a few of them;
 *   - allreduce: bus bandwidth against message size (allreduce.BYTES.busbw_gbs) per group, and
 *     the baseline's median curve dashed when the report is compared with one;
 *   - memory errors: memtest's miscompare findings counted by node and physical address range
 *     (1 GiB), with the DIMM the finding named, so a bad rank or a bad DIMM shows as one range.
 * Every section says plainly when the campaign had nothing to draw for it. */
#include "report_html_internal.h"
#include "scheduler/robust.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GPUs per node a p2p matrix is drawn for (device indices 0..S_GPUS_MAX-1). */
#define S_GPUS_MAX 16
/* p2p matrices drawn at most. */
#define S_P2P_NODES 4
/* allreduce groups drawn one by one before only the median and the slowest are. */
#define S_AR_SERIES 6
/* Message sizes an allreduce curve holds at most. */
#define S_AR_SIZES 64
/* Address ranges listed at most. */
#define S_MEM_ROWS 30

static bool s_stage_is(const store_stage_t *st, const char *workload)
{
    return st->workload && !strcmp(st->workload, workload);
}

static size_t s_stages_of(const store_campaign_t *c, const char *workload)
{
    size_t n = 0;
    for (size_t s = 0; s < c->n_stages; s++)
        n += s_stage_is(&c->stages[s], workload);
    return n;
}

/* ---- GPU peer-to-peer -------------------------------------------------------------------- */

typedef struct {
    const fb_result_t *result;
    double m[S_GPUS_MAX * S_GPUS_MAX];
    size_t n; /* GPUs: highest index seen + 1 */
    double min;
} s_p2p_t;

/* The p2p.ce_uni matrix of a result; false when it has none. */
static bool s_p2p_matrix(const fb_result_t *r, s_p2p_t *p)
{
    static const char prefix[] = "p2p.ce_uni.";
    p->result = r;
    p->n = 0;
    p->min = INFINITY;
    for (size_t k = 0; k < S_GPUS_MAX * S_GPUS_MAX; k++)
        p->m[k] = NAN;
    for (size_t k = 0; k < r->n_metrics; k++) {
        const char *name = r->metrics[k].name;
        unsigned i, j;
        char end;
        if (!name || strncmp(name, prefix, sizeof prefix - 1) ||
            sscanf(name + sizeof prefix - 1, "%u_%u%c", &i, &j, &end) != 2 || i >= S_GPUS_MAX ||
            j >= S_GPUS_MAX || !isfinite(r->metrics[k].value))
            continue;
        p->m[i * S_GPUS_MAX + j] = r->metrics[k].value;
        p->n = i + 1 > p->n ? i + 1 : p->n;
        p->n = j + 1 > p->n ? j + 1 : p->n;
        p->min = r->metrics[k].value < p->min ? r->metrics[k].value : p->min;
    }
    return p->n >= 2;
}

static int s_cmp_p2p(const void *a, const void *b)
{
    double x = ((const s_p2p_t *)a)->min, y = ((const s_p2p_t *)b)->min;
    return x < y ? -1 : x > y;
}

static void s_p2p_draw(report_html_t *h, const s_p2p_t *p, double hi, const char *id)
{
    char labels_buf[S_GPUS_MAX][24]; /* "gpu" and any size_t */
    const char *labels[S_GPUS_MAX];
    double m[S_GPUS_MAX * S_GPUS_MAX];
    for (size_t i = 0; i < p->n; i++) {
        snprintf(labels_buf[i], sizeof labels_buf[i], "gpu%zu", i);
        labels[i] = labels_buf[i];
        for (size_t j = 0; j < p->n; j++)
            m[i * p->n + j] = p->m[i * S_GPUS_MAX + j];
    }
    char *title = xasprintf("%s: copy engine GB/s, row: source, column: destination (slowest "
                            "%.1f)",
                            p->result->node ? p->result->node : "?", p->min);
    report__html_matrix(h->out, id, title, labels, p->n, m, 0, hi, "GB/s");
    free(title);
}

void report__html_p2p(report_html_t *h)
{
    if (!s_stages_of(h->c, "p2p"))
        return;
    size_t n = 0, cap = 8;
    s_p2p_t *mats = xmalloc(cap * sizeof *mats);
    for (size_t s = 0; s < h->c->n_stages; s++) {
        const store_stage_t *st = &h->c->stages[s];
        for (size_t t = 0; s_stage_is(st, "p2p") && t < st->n_tasks; t++)
            for (size_t r = 0; r < st->tasks[t].n_results; r++) {
                if (n == cap)
                    mats = xrealloc(mats, (cap *= 2) * sizeof *mats);
                n += s_p2p_matrix(st->tasks[t].results[r].result, &mats[n]);
            }
    }
    fputs("<section id=\"p2p\"><h2>GPU peer-to-peer bandwidth</h2>", h->out);
    if (!n) {
        fputs("<p class=\"muted\">No node measured a peer-to-peer matrix (fewer than two GPUs, "
              "or the stage did not run).</p></section>\n",
              h->out);
        free(mats);
        return;
    }
    qsort(mats, n, sizeof *mats, s_cmp_p2p);
    double hi = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < S_GPUS_MAX * S_GPUS_MAX; i++)
            hi = isfinite(mats[k].m[i]) && mats[k].m[i] > hi ? mats[k].m[i] : hi;
    if (n > S_P2P_NODES)
        fprintf(h->out,
                "<p class=\"muted\">%zu nodes measured; shown are the %d with the slowest "
                "link.</p>",
                n, S_P2P_NODES);
    for (size_t k = 0; k < n && k < S_P2P_NODES; k++)
        s_p2p_draw(h, &mats[k], hi, k == 0 ? "p2p-matrix" : NULL);
    fputs("</section>\n", h->out);
    free(mats);
}

/* ---- Allreduce ---------------------------------------------------------------------------- */

typedef struct {
    double x[S_AR_SIZES], y[S_AR_SIZES];
    size_t n;
    char *label;
} s_curve_t;

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The busbw-by-size curve of a result (sorted by size); false when it has no sizes. */
static bool s_ar_curve(const fb_result_t *r, s_curve_t *c)
{
    double pairs[S_AR_SIZES][2];
    size_t n = 0;
    for (size_t k = 0; k < r->n_metrics && n < S_AR_SIZES; k++) {
        const char *name = r->metrics[k].name;
        unsigned long long bytes;
        int used = 0;
        if (!name || sscanf(name, "allreduce.%llu.busbw_gbs%n", &bytes, &used) != 1 || name[used] ||
            !isfinite(r->metrics[k].value))
            continue;
        pairs[n][0] = (double)bytes;
        pairs[n][1] = r->metrics[k].value;
        n++;
    }
    qsort(pairs, n, sizeof pairs[0], s_cmp_double); /* by size: the first member */
    for (size_t i = 0; i < n; i++) {
        c->x[i] = pairs[i][0];
        c->y[i] = pairs[i][1];
    }
    c->n = n;
    return n > 0;
}

/* The curves of a stage's group tasks, one per task (its first result with sizes). */
static size_t s_ar_curves(const store_stage_t *st, s_curve_t **out)
{
    size_t n = 0;
    s_curve_t *v = xcalloc(st->n_tasks ? st->n_tasks : 1, sizeof *v);
    for (size_t t = 0; t < st->n_tasks; t++)
        for (size_t r = 0; r < st->tasks[t].n_results; r++)
            if (s_ar_curve(st->tasks[t].results[r].result, &v[n])) {
                const store_task_t *task = &st->tasks[t];
                v[n++].label =
                    task->n_nodes > 2    ? xasprintf("%s +%zu", task->nodes[0], task->n_nodes - 1)
                    : task->n_nodes == 2 ? xasprintf("%s,%s", task->nodes[0], task->nodes[1])
                    : task->n_nodes == 1 ? xstrdup(task->nodes[0])
                                         : xstrdup(task->id);
                break;
            }
    *out = v;
    return n;
}

static void s_curves_free(s_curve_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].label);
    free(v);
}

/* The median curve: for each size of the first curve, the median of every curve's value. */
static void s_ar_median(const s_curve_t *v, size_t n, s_curve_t *med)
{
    med->n = 0;
    double *vals = xmalloc((n ? n : 1) * sizeof *vals);
    for (size_t i = 0; n && i < v[0].n; i++) {
        size_t k = 0;
        for (size_t c = 0; c < n; c++)
            for (size_t j = 0; j < v[c].n; j++)
                if (v[c].x[j] == v[0].x[i])
                    vals[k++] = v[c].y[j];
        med->x[med->n] = v[0].x[i];
        med->y[med->n++] = fb_robust_median(vals, k);
    }
    free(vals);
}

static int s_cmp_curve_last(const void *a, const void *b)
{
    const s_curve_t *x = a, *y = b;
    double vx = x->n ? x->y[x->n - 1] : 0, vy = y->n ? y->y[y->n - 1] : 0;
    return vx < vy ? -1 : vx > vy;
}

static const store_stage_t *s_base_stage(const report_html_t *h, const store_stage_t *st)
{
    for (size_t s = 0; h->base && s < h->base->n_stages; s++)
        if (!strcmp(h->base->stages[s].name, st->name) &&
            s_stage_is(&h->base->stages[s], st->workload))
            return &h->base->stages[s];
    return NULL;
}

/* <p class="muted">STAGE WHAT</p>, the stage's name escaped. */
static void s_muted_note(FILE *out, const char *stage, const char *what)
{
    fputs("<p class=\"muted\">", out);
    report__html_text(out, stage);
    fputs(what, out);
    fputs("</p>", out);
}

/* Whether every point of every curve is 0: groups of one rank, whose bus bandwidth is 0 by
 * definition (nothing crosses a link), e.g. a node-scope stage on a one-GPU node. */
static bool s_ar_all_zero(const s_curve_t *v, size_t n)
{
    for (size_t c = 0; c < n; c++)
        for (size_t i = 0; i < v[c].n; i++)
            if (v[c].y[i] != 0)
                return false;
    return n > 0;
}

static void s_ar_stage(report_html_t *h, const store_stage_t *st, const char *id)
{
    s_curve_t *v, *bv = NULL, med, base_med;
    size_t n = s_ar_curves(st, &v), nb = 0;
    report_html_series_t series[S_AR_SERIES + 2];
    size_t ns = 0;
    qsort(v, n, sizeof *v, s_cmp_curve_last); /* slowest at the largest size first */
    if (n > S_AR_SERIES) {
        s_ar_median(v, n, &med);
        series[ns++] = (report_html_series_t){"median of groups", med.x, med.y, med.n, false, "s0"};
    }
    for (size_t i = 0; i < n && ns < S_AR_SERIES; i++) {
        static const char *const css[] = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s0"};
        series[ns] = (report_html_series_t){v[i].label, v[i].x, v[i].y, v[i].n, false, css[ns % 8]};
        ns++;
    }
    const store_stage_t *bst = s_base_stage(h, st);
    char *base_label = NULL;
    if (bst && (nb = s_ar_curves(bst, &bv)) > 0) {
        s_ar_median(bv, nb, &base_med);
        base_label = xasprintf("baseline %s", h->base->id);
        series[ns++] =
            (report_html_series_t){base_label, base_med.x, base_med.y, base_med.n, true, "base"};
    }
    char *title = xasprintf("%s: bus bandwidth against message size (%zu group%s)", st->name, n,
                            n == 1 ? "" : "s");
    report_html_chart_t chart = {.id = id,
                                 .title = title,
                                 .x_label = "message size",
                                 .y_label = "busbw GB/s",
                                 .log2_x = true,
                                 .x_bytes = true};
    if (s_ar_all_zero(v, n))
        s_muted_note(h->out, st->name,
                     ": bus bandwidth 0 at every size: each group had one rank, so nothing crossed "
                     "a link; its latency and algorithm bandwidth per size are in the JSON report.");
    else if (n)
        report__html_line_chart(h->out, &chart, series, ns);
    else
        s_muted_note(h->out, st->name, ": no per-size bandwidth in its results.");
    free(title);
    free(base_label);
    s_curves_free(v, n);
    if (bv)
        s_curves_free(bv, nb);
}

void report__html_allreduce(report_html_t *h)
{
    if (!s_stages_of(h->c, "allreduce"))
        return;
    fputs("<section id=\"allreduce\"><h2>Allreduce bus bandwidth</h2>", h->out);
    if (h->base)
        fputs("<p class=\"muted\">Dashed: the median of the baseline's groups in the stage of the "
              "same name.</p>",
              h->out);
    bool first = true;
    for (size_t s = 0; s < h->c->n_stages; s++)
        if (s_stage_is(&h->c->stages[s], "allreduce")) {
            s_ar_stage(h, &h->c->stages[s], first ? "allreduce-chart" : NULL);
            first = false;
        }
    fputs("</section>\n", h->out);
}

/* ---- Memory errors by address range -------------------------------------------------------- */

typedef struct {
    const char *node;
    uint64_t range; /* address >> 30: the GiB the errors are in */
    bool phys;      /* a physical address (else virtual: the kernel did not tell) */
    char dimm[96];  /* the DIMM the finding named, "" when none */
    size_t count;
} s_memrange_t;

/* The address a memtest finding names ("phys 0x..." preferred, else "virt 0x..."). */
static bool s_finding_address(const char *what, uint64_t *addr, bool *phys)
{
    const char *p = strstr(what, "phys 0x");
    *phys = p != NULL;
    if (!p)
        p = strstr(what, "virt 0x");
    if (!p)
        return false;
    char *end;
    *addr = strtoull(p + 5, &end, 16);
    return end != p + 5;
}

static void s_finding_dimm(const char *what, char *dimm, size_t len)
{
    const char *p = strstr(what, "; DIMM ");
    dimm[0] = '\0';
    if (!p || !strncmp(p + 7, "not ", 4))
        return;
    p += 7;
    size_t n = strcspn(p, ":;, ");
    snprintf(dimm, len, "%.*s", (int)(n < len - 1 ? n : len - 1), p);
}

static void s_mem_add(s_memrange_t **v, size_t *n, const char *node, const fb_finding_t *f)
{
    uint64_t addr;
    bool phys;
    if (!f->what || !f->kind || strcmp(f->kind, "memory") ||
        !s_finding_address(f->what, &addr, &phys) || strncmp(f->what, "miscompare", 10))
        return;
    char dimm[96];
    s_finding_dimm(f->what, dimm, sizeof dimm);
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].node, node) && (*v)[i].range == addr >> 30 && (*v)[i].phys == phys) {
            (*v)[i].count++;
            return;
        }
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[*n] = (s_memrange_t){.node = node, .range = addr >> 30, .phys = phys, .count = 1};
    fb_strlcpy((*v)[*n].dimm, dimm, sizeof(*v)[*n].dimm);
    (*n)++;
}

static int s_cmp_mem(const void *a, const void *b)
{
    const s_memrange_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    int c = strcmp(x->node, y->node);
    return c ? c : x->range < y->range ? -1 : x->range > y->range;
}

static void s_mem_row(FILE *out, const s_memrange_t *m, size_t max)
{
    fputs("<tr><td class=\"part\">", out);
    report__html_text(out, m->node);
    fprintf(out, "</td><td>%s 0x%" PRIx64 "&ndash;0x%" PRIx64 "</td><td>",
            m->phys ? "phys" : "virt", m->range << 30, ((m->range + 1) << 30) - 1);
    report__html_text(out, m->dimm[0] ? m->dimm : "-");
    fprintf(out,
            "</td><td class=\"num\">%zu</td><td><svg width=\"204\" height=\"12\">"
            "<rect class=\"v-fail\" width=\"%.0f\" height=\"12\"/></svg></td></tr>",
            m->count, 4 + 200.0 * (double)m->count / (double)(max ? max : 1));
}

void report__html_memory(report_html_t *h)
{
    if (!s_stages_of(h->c, "memtest"))
        return;
    s_memrange_t *v = NULL;
    size_t n = 0;
    for (size_t s = 0; s < h->c->n_stages; s++) {
        const store_stage_t *st = &h->c->stages[s];
        for (size_t t = 0; s_stage_is(st, "memtest") && t < st->n_tasks; t++)
            for (size_t r = 0; r < st->tasks[t].n_results; r++) {
                const fb_result_t *res = st->tasks[t].results[r].result;
                for (size_t f = 0; f < res->n_findings; f++)
                    s_mem_add(&v, &n, res->node ? res->node : "?", &res->findings[f]);
            }
    }
    fputs("<section id=\"memory-errors\"><h2>Memory errors by address range</h2>", h->out);
    if (!n) {
        fputs("<p class=\"muted\" id=\"memory-errors-none\">No memtest miscompare was "
              "itemised.</p></section>\n",
              h->out);
        return;
    }
    qsort(v, n, sizeof *v, s_cmp_mem);
    fputs("<p class=\"muted\">Itemised miscompares per node and 1 GiB address range: errors "
          "packed in one range point at one DIMM or rank; errors spread over all ranges at the "
          "memory controller or the CPU.</p><table id=\"memory-ranges\"><tr><th>node</th>"
          "<th>address range</th><th>DIMM named</th><th>miscompares</th><th></th></tr>",
          h->out);
    for (size_t i = 0; i < n && i < S_MEM_ROWS; i++)
        s_mem_row(h->out, &v[i], v[0].count);
    fputs("</table>", h->out);
    if (n > S_MEM_ROWS)
        fprintf(h->out, "<p class=\"muted\">and %zu more ranges</p>", n - S_MEM_ROWS);
    fputs("</section>\n", h->out);
    free(v);
}
