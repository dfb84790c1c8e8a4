/* SPDX-License-Identifier: Apache-2.0 */
/* Each node's outcome in an ended campaign (report_outcome.h has the definitions): the diagnosis
 * the reports show (report.c) turned into nodes to drain, nodes that passed, and notes for what
 * names no node. Everything here reads a campaign already loaded; nothing touches the store. */
#include "report_outcome.h"

#include "report_internal.h"
#include "hostlist.h"
#include "strmap.h"
#include "util.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    report_outcome_t *out;
    fb_strmap_t *nodes;      /* the campaign's nodes (values unused) */
    fb_strmap_t *excluded;   /* nodes that cannot have passed */
    size_t notes_dropped; /* notes past REPORT_OUTCOME_MAX_NOTES */
    char *watch;          /* the first undecided parts on watch, comma-separated */
    size_t n_watch;
} s_build_t;

static void s_note(s_build_t *b, char *text)
{
    report_outcome_t *o = b->out;
    if (o->n_notes >= REPORT_OUTCOME_MAX_NOTES) {
        b->notes_dropped++;
        free(text);
        return;
    }
    o->notes = xrealloc(o->notes, (o->n_notes + 1) * sizeof *o->notes);
    o->notes[o->n_notes++] = text;
}

static void s_add_node(s_build_t *b, const char *node)
{
    if (!node || fb_strmap_get(b->nodes, node))
        return;
    report_outcome_t *o = b->out;
    o->nodes = xrealloc(o->nodes, (o->n_nodes + 1) * sizeof *o->nodes);
    o->nodes[o->n_nodes] = xstrdup(node);
    fb_strmap_put(b->nodes, node, o->nodes[o->n_nodes]);
    o->n_nodes++;
}

static void s_add_bad(s_build_t *b, const char *node, const char *part, const char *what)
{
    report_outcome_t *o = b->out;
    for (size_t i = 0; i < o->n_bad; i++)
        if (!strcmp(o->bad[i].node, node) && !strcmp(o->bad[i].part, part))
            return;
    o->bad = xrealloc(o->bad, (o->n_bad + 1) * sizeof *o->bad);
    o->bad[o->n_bad++] = (report_bad_node_t){xstrdup(node), xstrdup(part), xstrdup(what)};
    fb_strmap_put(b->excluded, node, b);
}

static bool s_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/* The campaign's nodes a part names as whole words: "n3<->n7" names n3 and n7 ('-' alone, and
 * the '<' '>' around it, are no node), "n17/mlx5_2" names n17. Heap array of borrowed names. */
static const char **s_part_nodes(s_build_t *b, const char *part, size_t *n_out)
{
    size_t len = strlen(part), n = 0;
    const char **found = xcalloc(len / 2 + 2, sizeof *found);
    for (size_t i = 0; i < len;) {
        if (!s_name_char(part[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && s_name_char(part[j]))
            j++;
        char *word = xstrndup(part + i, j - i);
        const char *node = fb_strmap_get(b->nodes, word);
        free(word);
        bool dup = false;
        for (size_t k = 0; node && k < n && !dup; k++)
            dup = !strcmp(found[k], node);
        if (node && !dup)
            found[n++] = node;
        i = j;
    }
    *n_out = n;
    return found;
}

/* One line of evidence for a part: "<stage>: <the engine's summary>", or from findings
 * "<stage>: <what>" and, when there are several, "<stage>: 4 memory findings, first: <what>".
 * Heap. */
static char *s_what(const report_suspect_t *sus)
{
    const char *stage = sus->stage && sus->stage->name ? sus->stage->name : "";
    const char *kind = sus->kind ? sus->kind : "part";
    if (sus->summary)
        return xasprintf("%s: %s", stage, sus->summary);
    const char *first = sus->n_evidence ? sus->evidence[0].what : NULL;
    if (sus->n_evidence > 1)
        return xasprintf("%s: %zu %s findings, first: %s", stage, sus->n_evidence, kind,
                         first ? first : "");
    return xasprintf("%s: %s", stage, first ? first : kind);
}

static void s_bad_part(s_build_t *b, const report_suspect_t *sus)
{
    size_t n = 0;
    const char **nodes = s_part_nodes(b, sus->part, &n);
    if (n == 0) { /* a DIMM label, a GPU index: the node that reported it */
        free(nodes);
        nodes = xcalloc(sus->n_evidence + 1, sizeof *nodes);
        for (size_t k = 0; k < sus->n_evidence; k++) {
            const fb_result_t *r = sus->evidence[k].result;
            const char *node = r && r->node ? fb_strmap_get(b->nodes, r->node) : NULL;
            bool dup = false;
            for (size_t m = 0; node && m < n && !dup; m++)
                dup = !strcmp(nodes[m], node);
            if (node && !dup)
                nodes[n++] = node;
        }
    }
    if (n == 0)
        s_note(b, xasprintf("bad part %s (%s) names no node of the campaign; nothing to drain",
                            sus->part, sus->kind ? sus->kind : "part"));
    char *what = s_what(sus);
    for (size_t i = 0; i < n; i++)
        s_add_bad(b, nodes[i], sus->part, what);
    free(what);
    free(nodes);
}

/* Undecided parts on watch shown by name in their note; the report lists them all. */
#define S_WATCH_NAMED 8

/* An undecided part whose passes rule out a steady fault holds no node back: only a fault in
 * bursts is left open, which no number of passes bounds, and holding every node with one
 * spurious failure would keep a large share of a fleet out of service after every campaign.
 * Its nodes are resumed when they passed otherwise; one note lists these parts. */
static void s_watch_part(s_build_t *b, const report_suspect_t *sus)
{
    if (b->n_watch++ < S_WATCH_NAMED) {
        char *more = xasprintf("%s%s%s", b->watch ? b->watch : "", b->watch ? ", " : "", sus->part);
        free(b->watch);
        b->watch = more;
    }
}

static void s_watch_note(s_build_t *b)
{
    if (!b->n_watch)
        return;
    char more[64] = "";
    if (b->n_watch > S_WATCH_NAMED)
        snprintf(more, sizeof more, " and %zu more", b->n_watch - S_WATCH_NAMED);
    s_note(b, xasprintf("%zu undecided part(s) on watch (their passes rule out a steady fault, "
                        "not one in bursts): not drained, and their nodes are resumed if they "
                        "passed otherwise: %s%s",
                        b->n_watch, b->watch, more));
    free(b->watch);
    b->watch = NULL;
}

static void s_undecided_part(s_build_t *b, const report_suspect_t *sus)
{
    if (sus->on_watch) {
        s_watch_part(b, sus);
        return;
    }
    size_t n = 0;
    const char **nodes = s_part_nodes(b, sus->part, &n);
    for (size_t i = 0; i < n; i++)
        fb_strmap_put(b->excluded, nodes[i], b);
    s_note(b, xasprintf("undecided part %s (%s): not drained, and its nodes are not resumed",
                        sus->part, sus->kind ? sus->kind : "part"));
    free(nodes);
}

static bool s_is_bisect(const store_stage_t *stage)
{
    return stage->on_fail && !strcmp(stage->on_fail, "bisect");
}

static bool s_is_diagnosis_task(const store_stage_t *stage, const store_task_t *task)
{
    size_t n = strlen(task->id);
    return s_is_bisect(stage) && n > 10 && !strcmp(task->id + n - 10, "/diagnosis");
}

/* Failed tasks no finding or diagnosis explains: a node task that failed or timed out is its
 * node's failure; anything else names no node for sure. */
static void s_unattributed(s_build_t *b, const store_stage_t *stage, const store_task_t *task)
{
    if (!report__unattributed(stage, task))
        return;
    const char *verdict = fb_verdict_name(task->verdict);
    if (task->n_nodes == 1 &&
        (task->verdict == FB_VERDICT_FAIL || task->verdict == FB_VERDICT_TIMEOUT)) {
        char *what = xasprintf("%s: %s%s%s", stage->name, verdict, task->error ? ": " : "",
                               task->error ? task->error : "");
        s_add_bad(b, task->nodes[0], task->nodes[0], what);
        free(what);
        return;
    }
    char *nodes = task->n_nodes ? fb_hostlist_compress((const char *const *)task->nodes, task->n_nodes)
                                : xstrdup("no node");
    s_note(b, xasprintf("task %s (%s) on %s names no bad part; not drained%s", task->id, verdict,
                        nodes,
                        task->n_nodes > 1 ? " (on_fail: bisect names the part of a group or "
                                            "pair test)"
                                          : ""));
    free(nodes);
}

/* Whether node had a task in stage, and whether every one of them counts as passed. */
static void s_node_in_stage(const store_stage_t *stage, const char *node, bool *had, bool *ok)
{
    *had = false;
    *ok = true;
    for (size_t t = 0; t < stage->n_tasks; t++) {
        const store_task_t *task = &stage->tasks[t];
        if (s_is_diagnosis_task(stage, task))
            continue;
        bool member = false;
        for (size_t k = 0; k < task->n_nodes && !member; k++)
            member = !strcmp(task->nodes[k], node);
        if (!member)
            continue;
        *had = true;
        bool explained = s_is_bisect(stage) && task->verdict == FB_VERDICT_FAIL;
        if (task->verdict == FB_VERDICT_NONE || (!fb_verdict_ok(task->verdict) && !explained))
            *ok = false;
    }
}

static bool s_selected(const store_stage_t *stage, const char *node)
{
    for (size_t k = 0; k < stage->n_nodes; k++)
        if (!strcmp(stage->nodes[k], node))
            return true;
    return false;
}

static void s_passed(s_build_t *b, const store_campaign_t *c)
{
    for (size_t s = 0; s < c->n_stages; s++)
        if (!c->stages[s].started_ms) {
            s_note(b, xasprintf("stage %s did not run; no node passed every stage, none resumed",
                                c->stages[s].name));
            return;
        }
    report_outcome_t *o = b->out;
    for (size_t i = 0; i < o->n_nodes; i++) {
        const char *node = o->nodes[i];
        bool passed = !fb_strmap_get(b->excluded, node);
        for (size_t s = 0; s < c->n_stages && passed; s++) {
            bool had, ok;
            s_node_in_stage(&c->stages[s], node, &had, &ok);
            passed = ok && (had || !s_selected(&c->stages[s], node));
        }
        if (!passed)
            continue;
        o->passed = xrealloc(o->passed, (o->n_passed + 1) * sizeof *o->passed);
        o->passed[o->n_passed++] = xstrdup(node);
    }
}

void report_outcome_build(const store_campaign_t *c, report_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    s_build_t b = {.out = out, .nodes = fb_strmap_new(), .excluded = fb_strmap_new()};
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++)
            if (!s_is_diagnosis_task(&c->stages[s], &c->stages[s].tasks[t]))
                for (size_t k = 0; k < c->stages[s].tasks[t].n_nodes; k++)
                    s_add_node(&b, c->stages[s].tasks[t].nodes[k]);
    report_diag_t d;
    report__diag_build(&d, c);
    for (size_t k = 0; k < d.n; k++) {
        if (d.v[k].state == REPORT_BAD)
            s_bad_part(&b, &d.v[k]);
        else if (d.v[k].state == REPORT_UNDECIDED)
            s_undecided_part(&b, &d.v[k]);
    }
    report__diag_free(&d);
    s_watch_note(&b);
    for (size_t s = 0; s < c->n_stages; s++)
        for (size_t t = 0; t < c->stages[s].n_tasks; t++)
            s_unattributed(&b, &c->stages[s], &c->stages[s].tasks[t]);
    s_passed(&b, c);
    if (b.notes_dropped) {
        out->notes = xrealloc(out->notes, (out->n_notes + 1) * sizeof *out->notes);
        out->notes[out->n_notes++] =
            xasprintf("... and %zu more note(s) like these (`fleetburn report` has every task)",
                      b.notes_dropped);
    }
    fb_strmap_destroy(&b.nodes);
    fb_strmap_destroy(&b.excluded);
}

void report_outcome_free(report_outcome_t *o)
{
    for (size_t i = 0; i < o->n_nodes; i++)
        free(o->nodes[i]);
    free(o->nodes);
    for (size_t i = 0; i < o->n_bad; i++) {
        free(o->bad[i].node);
        free(o->bad[i].part);
        free(o->bad[i].what);
    }
    free(o->bad);
    for (size_t i = 0; i < o->n_passed; i++)
        free(o->passed[i]);
    free(o->passed);
    for (size_t i = 0; i < o->n_notes; i++)
        free(o->notes[i]);
    free(o->notes);
    memset(o, 0, sizeof *o);
}
