/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm as pure logic: `nodes: slurm:...` selections and their resolutions, sinfo's output
 * parsed as untrusted text, fleetburn's drain reasons, and the plan of drains and resumes at the
 * end of a campaign, breaker included. Programs are run by the coordinator
 * (coordinator/slurm_client.c); this file only reads and decides. */
#include "slurm.h"

#include "campaign.h"
#include "common/hostlist.h"
#include "common/strmap.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NAME_MAX 128

/* ---- nodes: slurm:... ---------------------------------------------------------------------- */

bool fb_slurm_is_selection(const char *expr)
{
    return expr && !strncmp(expr, FB_SLURM_SELECTION_PREFIX, strlen(FB_SLURM_SELECTION_PREFIX));
}

static bool s_partition_ok(const char *p, size_t len)
{
    if (len == 0 || len > FB_SLURM_PARTITION_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '.' && p[i] != '_' && p[i] != '-')
            return false;
    return true;
}

int fb_slurm_selection_parse(const char *expr, char **partition_out, bool *idle_out, char *err,
                             size_t errlen)
{
    static const char expected[] = "expected slurm:idle, slurm:PARTITION or slurm:PARTITION:idle";
    if (partition_out)
        *partition_out = NULL;
    if (!fb_slurm_is_selection(expr)) {
        snprintf(err, errlen, "not a Slurm selection; %s", expected);
        return -EINVAL;
    }
    const char *rest = expr + strlen(FB_SLURM_SELECTION_PREFIX);
    if (!strcmp(rest, "idle")) {
        if (idle_out)
            *idle_out = true;
        return 0;
    }
    const char *colon = strchr(rest, ':');
    size_t plen = colon ? (size_t)(colon - rest) : strlen(rest);
    if (colon && strcmp(colon + 1, "idle")) {
        snprintf(err, errlen, "'%.40s' after the partition is not 'idle'; %s", colon + 1, expected);
        return -EINVAL;
    }
    if (!s_partition_ok(rest, plen)) {
        snprintf(err, errlen,
                 "'%.*s' is not a partition name (letters, digits, '.', '_', '-', at most %d); %s",
                 (int)(plen > 40 ? 40 : plen), rest, FB_SLURM_PARTITION_MAX, expected);
        return -EINVAL;
    }
    if (idle_out)
        *idle_out = colon != NULL;
    if (partition_out)
        *partition_out = xstrndup(rest, plen);
    return 0;
}

static void s_add_unique(const char **exprs, size_t cap, size_t *n, const char *expr)
{
    if (!fb_slurm_is_selection(expr))
        return;
    for (size_t i = 0; i < *n && i < cap; i++)
        if (!strcmp(exprs[i], expr))
            return;
    if (exprs && *n < cap)
        exprs[*n] = expr;
    (*n)++;
}

size_t fb_campaign_slurm_selections(const fb_campaign_t *c, const char **exprs, size_t cap)
{
    /* Counting needs the names seen so far even when the caller's array is smaller. */
    size_t total = 1 + c->n_stages;
    const char **seen = xcalloc(total, sizeof *seen);
    size_t n = 0;
    s_add_unique(seen, total, &n, c->nodes_expr);
    for (size_t i = 0; i < c->n_stages; i++)
        s_add_unique(seen, total, &n, c->stages[i].nodes_expr);
    for (size_t i = 0; exprs && i < n && i < cap; i++)
        exprs[i] = seen[i];
    free(seen);
    return n;
}

int fb_campaign_resolve_selection(fb_campaign_t *c, const char *expr, const char *nodes)
{
    size_t count = 0;
    if (!nodes || fb_hostlist_check(nodes, &count, NULL, 0) || count == 0)
        return -EINVAL;
    for (size_t i = 0; i < c->n_selections; i++)
        if (!strcmp(c->selections[i].expr, expr)) {
            free(c->selections[i].nodes);
            c->selections[i].nodes = xstrdup(nodes);
            return 0;
        }
    c->selections = xrealloc(c->selections, (c->n_selections + 1) * sizeof *c->selections);
    c->selections[c->n_selections++] = (fb_node_selection_t){xstrdup(expr), xstrdup(nodes)};
    return 0;
}

const char *fb_campaign_selection(const fb_campaign_t *c, const char *expr)
{
    for (size_t i = 0; expr && i < c->n_selections; i++)
        if (!strcmp(c->selections[i].expr, expr))
            return c->selections[i].nodes;
    return NULL;
}

void fb_campaign_selections_free(fb_campaign_t *c)
{
    for (size_t i = 0; i < c->n_selections; i++) {
        free(c->selections[i].expr);
        free(c->selections[i].nodes);
    }
    free(c->selections);
    c->selections = NULL;
    c->n_selections = 0;
}

/* ---- what sinfo says --------------------------------------------------------------------- */

bool fb_slurm_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > S_NAME_MAX || !isalnum((unsigned char)name[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
            return false;
    return true;
}

/* sinfo's long states are lower-case words joined by '+' ("idle+drain" in some versions),
 * followed by at most one of its flag characters (* not responding, ~ powered off, # powering
 * up, ! pending power down, % powering down, $ maintenance, @ pending reboot, ^ rebooting,
 * - planned). */
static bool s_state_ok(const char *s, size_t len)
{
    if (len == 0 || len > 64)
        return false;
    size_t body = len;
    if (strchr("*~#!%$@^-", s[len - 1]))
        body--;
    if (body == 0 || s[0] == '+' || s[body - 1] == '+')
        return false;
    for (size_t i = 0; i < body; i++)
        if (!(islower((unsigned char)s[i]) || s[i] == '_' || s[i] == '+'))
            return false;
    return true;
}

static void s_ignore(fb_slurm_nodes_t *out, size_t line, const char *fmt, const char *token,
                     size_t token_len)
{
    if (out->n_ignored++ == 0) {
        char shown[64], *copy = xstrndup(token, token_len);
        fb_show_value(copy, shown, sizeof shown);
        free(copy);
        char what[128];
        snprintf(what, sizeof what, fmt, shown);
        snprintf(out->ignored, sizeof out->ignored, "line %zu: %s", line, what);
    }
}

/* A printable copy of a reason: control and non-ASCII bytes become '?'; "none" is no reason. */
static char *s_reason_copy(const char *r, size_t len)
{
    while (len && (r[len - 1] == ' ' || r[len - 1] == '\r'))
        len--;
    if (len == 0 || (len == 4 && !memcmp(r, "none", 4)))
        return NULL;
    char *copy = xstrndup(r, len);
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            *p = '?';
    return copy;
}

/* The node called name, added when it is new. index maps a name to its index + 1 (out->v
 * moves as it grows). */
static fb_slurm_node_t *s_node_get(fb_slurm_nodes_t *out, fb_strmap_t *index, const char *name,
                                   const char *state, size_t state_len, const char *reason,
                                   size_t reason_len)
{
    uintptr_t at = (uintptr_t)fb_strmap_get(index, name);
    if (at) /* the same node in another partition: its state and reason are the same */
        return &out->v[at - 1];
    out->v = xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    fb_slurm_node_t *n = &out->v[out->n++];
    *n = (fb_slurm_node_t){.name = xstrdup(name),
                           .state = xstrndup(state, state_len),
                           .reason = s_reason_copy(reason, reason_len)};
    fb_strmap_put(index, n->name, (void *)(uintptr_t)out->n);
    return n;
}

static void s_add_partition(fb_slurm_node_t *n, const char *p, size_t len)
{
    if (len && p[len - 1] == '*') /* the default partition */
        len--;
    if (!s_partition_ok(p, len))
        return;
    for (size_t i = 0; i < n->n_partitions; i++)
        if (strlen(n->partitions[i]) == len && !memcmp(n->partitions[i], p, len))
            return;
    n->partitions = xrealloc(n->partitions, (n->n_partitions + 1) * sizeof *n->partitions);
    n->partitions[n->n_partitions++] = xstrndup(p, len);
}

/* One line "name|state|partition|reason". */
static void s_parse_line(fb_slurm_nodes_t *out, fb_strmap_t *index, const char *line, size_t len,
                         size_t lineno)
{
    const char *f[3];
    size_t flen[3];
    const char *p = line, *end = line + len;
    for (int i = 0; i < 3; i++) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar) {
            s_ignore(out, lineno, "'%s' has not the four fields name|state|partition|reason", line,
                     len);
            return;
        }
        f[i] = p;
        flen[i] = (size_t)(bar - p);
        p = bar + 1;
    }
    char name[S_NAME_MAX + 1];
    if (flen[0] > S_NAME_MAX || memchr(f[0], 0, flen[0])) {
        s_ignore(out, lineno, "node name '%s' is not a hostname", f[0], flen[0]);
        return;
    }
    memcpy(name, f[0], flen[0]);
    name[flen[0]] = '\0';
    if (!fb_slurm_name_ok(name)) {
        s_ignore(out, lineno, "node name '%s' is not a hostname", f[0], flen[0]);
        return;
    }
    if (!s_state_ok(f[1], flen[1])) {
        s_ignore(out, lineno, "'%s' is not a state sinfo prints", f[1], flen[1]);
        return;
    }
    fb_slurm_node_t *n = s_node_get(out, index, name, f[1], flen[1], p, (size_t)(end - p));
    s_add_partition(n, f[2], flen[2]);
}

void fb_slurm_nodes_parse(const char *text, size_t len, fb_slurm_nodes_t *out)
{
    memset(out, 0, sizeof *out);
    fb_strmap_t *index = fb_strmap_new(); /* name -> index + 1 (s_node_get) */
    size_t lineno = 0;
    for (size_t at = 0; text && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t l = nl ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        if (l > 0 && !memchr(text + at, 0, l))
            s_parse_line(out, index, text + at, l, lineno);
        else if (l > 0)
            s_ignore(out, lineno, "a NUL byte in '%s'", text + at, strnlen(text + at, l));
        at += l + 1;
    }
    fb_strmap_destroy(&index);
}

void fb_slurm_nodes_fini(fb_slurm_nodes_t *nodes)
{
    for (size_t i = 0; i < nodes->n; i++) {
        fb_slurm_node_t *n = &nodes->v[i];
        free(n->name);
        free(n->state);
        free(n->reason);
        for (size_t k = 0; k < n->n_partitions; k++)
            free(n->partitions[k]);
        free(n->partitions);
    }
    free(nodes->v);
    memset(nodes, 0, sizeof *nodes);
}

const fb_slurm_node_t *fb_slurm_nodes_find(const fb_slurm_nodes_t *nodes, const char *name)
{
    for (size_t i = 0; name && i < nodes->n; i++)
        if (!strcmp(nodes->v[i].name, name))
            return &nodes->v[i];
    return NULL;
}

static bool s_in_partition(const fb_slurm_node_t *n, const char *partition)
{
    for (size_t i = 0; i < n->n_partitions; i++)
        if (!strcmp(n->partitions[i], partition))
            return true;
    return false;
}

char **fb_slurm_nodes_select(const fb_slurm_nodes_t *nodes, const char *partition, bool idle,
                             size_t *n_out)
{
    char **names = xcalloc(nodes->n + 1, sizeof *names);
    size_t n = 0;
    for (size_t i = 0; i < nodes->n; i++) {
        const fb_slurm_node_t *node = &nodes->v[i];
        if (partition && !s_in_partition(node, partition))
            continue;
        if (idle && strcmp(node->state, "idle"))
            continue;
        names[n++] = xstrdup(node->name);
    }
    *n_out = n;
    return names;
}

/* The state without its flag suffix contains word (as a whole '+'-separated word, or as the
 * start of one: "drained", "draining" for "drain"). */
static bool s_state_has(const char *state, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = state; p && *p;) {
        if (!strncmp(p, word, wl))
            return true;
        p = strchr(p, '+');
        if (p)
            p++;
    }
    return false;
}

bool fb_slurm_state_drained(const char *state)
{
    return s_state_has(state, "drain");
}

bool fb_slurm_state_resumable(const char *state)
{
    return fb_slurm_state_drained(state) && !s_state_has(state, "down") &&
           !s_state_has(state, "fail");
}

/* ---- drain reasons ------------------------------------------------------------------------- */

bool fb_slurm_reason_ours(const char *reason)
{
    return reason && !strncmp(reason, FB_SLURM_REASON_PREFIX, strlen(FB_SLURM_REASON_PREFIX));
}

/* Characters a reason never holds besides control and non-ASCII ones: quotes and backslash
 * (nothing may read as quoting), '|' (sinfo's field separator here) and '@' (sinfo and
 * scontrol print "[user@time]" after a reason). */
static bool s_reason_char_ok(unsigned char ch)
{
    return ch >= 0x20 && ch < 0x7f && !strchr("\"'`\\|@", ch);
}

bool fb_slurm_reason_ok(const char *reason)
{
    if (!fb_slurm_reason_ours(reason) || strlen(reason) > FB_SLURM_REASON_MAX)
        return false;
    for (const char *p = reason; *p; p++)
        if (!s_reason_char_ok((unsigned char)*p))
            return false;
    return true;
}

char *fb_slurm_reason(const char *campaign_id, const char *part, const char *what)
{
    char *raw = xasprintf("%s %s: %s%s%s", FB_SLURM_REASON_PREFIX, campaign_id ? campaign_id : "",
                          part ? part : "", what && *what ? " " : "", what ? what : "");
    char *out = xmalloc(FB_SLURM_REASON_MAX + 1);
    size_t n = 0;
    for (const char *p = raw; *p && n < FB_SLURM_REASON_MAX; p++) {
        unsigned char ch = (unsigned char)*p;
        char c = ch == '\t' || ch == '\n' || ch == '\r' ? ' '
                 : s_reason_char_ok(ch)                 ? (char)ch
                                                        : '_';
        if (c == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = c;
    }
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
    free(raw);
    return out;
}

/* ---- what to drain and resume ------------------------------------------------------------ */

static void s_op(fb_slurm_plan_t *p, fb_slurm_op_kind_t kind, const char *node, char *reason,
                 char *message)
{
    p->ops = xrealloc(p->ops, (p->n_ops + 1) * sizeof *p->ops);
    p->ops[p->n_ops++] = (fb_slurm_op_t){kind, xstrdup(node), reason, message};
    p->n_drain += kind == FB_SLURM_OP_DRAIN;
    p->n_resume += kind == FB_SLURM_OP_RESUME;
}

static bool s_listed(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return true;
    return false;
}

/* The drains: one per node of a bad part, in the order the parts came. */
static void s_plan_drains(const fb_slurm_input_t *in, fb_slurm_plan_t *p)
{
    const char **done = xcalloc(in->n_bad + 1, sizeof *done);
    size_t n_done = 0;
    for (size_t i = 0; i < in->n_bad; i++) {
        const fb_slurm_bad_t *b = &in->bad[i];
        if (s_listed(done, n_done, b->node))
            continue;
        done[n_done++] = b->node;
        size_t more = 0;
        for (size_t k = i + 1; k < in->n_bad; k++)
            more += !strcmp(in->bad[k].node, b->node) && strcmp(in->bad[k].part, b->part);
        const fb_slurm_node_t *sn = fb_slurm_nodes_find(in->slurm, b->node);
        if (!fb_slurm_name_ok(b->node)) {
            s_op(p, FB_SLURM_OP_NOTE, b->node, NULL,
                 xasprintf("%s is bad (%s) but its name cannot be given to scontrol; not drained",
                           b->node, b->part));
        } else if (!sn) {
            s_op(p, FB_SLURM_OP_NOTE, b->node, NULL,
                 xasprintf("%s is bad (%s) but Slurm does not list it; not drained", b->node,
                           b->part));
        } else if (fb_slurm_reason_ours(sn->reason)) {
            s_op(p, FB_SLURM_OP_NOTE, b->node, NULL,
                 xasprintf("%s is bad (%s) and drained by fleetburn already (%s, reason '%s'); "
                           "left as it is",
                           b->node, b->part, sn->state, sn->reason));
        } else if (sn->reason || fb_slurm_state_drained(sn->state)) {
            s_op(p, FB_SLURM_OP_NOTE, b->node, NULL,
                 xasprintf("%s is bad (%s) but is %s with someone else's reason '%s'; left as it "
                           "is",
                           b->node, b->part, sn->state, sn->reason ? sn->reason : "none"));
        } else {
            char *what = more ? xasprintf("%s (+%zu more)", b->what ? b->what : "", more)
                              : xstrdup(b->what ? b->what : "");
            s_op(p, FB_SLURM_OP_DRAIN, b->node, fb_slurm_reason(in->campaign_id, b->part, what),
                 NULL);
            free(what);
        }
    }
    free(done);
}

static void s_plan_resumes(const fb_slurm_input_t *in, fb_slurm_plan_t *p)
{
    for (size_t i = 0; i < in->n_passed; i++) {
        const char *node = in->passed[i];
        const fb_slurm_node_t *sn = fb_slurm_nodes_find(in->slurm, node);
        if (!sn || !fb_slurm_state_drained(sn->state) || !fb_slurm_name_ok(node))
            continue;
        if (!fb_slurm_reason_ours(sn->reason))
            s_op(p, FB_SLURM_OP_NOTE, node, NULL,
                 xasprintf("%s passed but is %s with someone else's reason '%s'; left drained",
                           node, sn->state, sn->reason ? sn->reason : "none"));
        else if (!fb_slurm_state_resumable(sn->state))
            s_op(p, FB_SLURM_OP_NOTE, node, NULL,
                 xasprintf("%s passed and fleetburn drained it, but it is %s as well; left as it "
                           "is (reason '%s')",
                           node, sn->state, sn->reason));
        else
            s_op(p, FB_SLURM_OP_RESUME, node, xstrdup(sn->reason), NULL);
    }
}

/* Campaign nodes drained by fleetburn now that this plan does not resume. */
static size_t s_ours_staying(const fb_slurm_input_t *in, const fb_slurm_plan_t *p)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n_nodes; i++) {
        const fb_slurm_node_t *sn = fb_slurm_nodes_find(in->slurm, in->nodes[i]);
        if (!sn || !fb_slurm_reason_ours(sn->reason))
            continue;
        bool resumed = false;
        for (size_t k = 0; k < p->n_ops && !resumed; k++)
            resumed = p->ops[k].kind == FB_SLURM_OP_RESUME && !strcmp(p->ops[k].node, sn->name);
        n += !resumed;
    }
    return n;
}

/* Takes the drains out of the plan and says why. */
static void s_trip_breaker(const fb_slurm_input_t *in, fb_slurm_plan_t *p, size_t staying)
{
    const char **names = xcalloc(p->n_drain + 1, sizeof *names);
    size_t n = 0, kept = 0;
    for (size_t k = 0; k < p->n_ops; k++) {
        fb_slurm_op_t *op = &p->ops[k];
        if (op->kind != FB_SLURM_OP_DRAIN) {
            p->ops[kept++] = *op;
            continue;
        }
        names[n++] = op->node; /* freed below, after the message is made */
        free(op->reason);
    }
    char *list = fb_hostlist_compress(names, n);
    size_t total = n + staying;
    p->breaker_message = xasprintf(
        "breaker: draining %s (%zu node(s)) would leave %zu of the campaign's %zu nodes drained "
        "by fleetburn (%zu already), %.0f%%, over max_fraction %.0f%%; no node drained",
        list, n, total, in->n_nodes, staying,
        in->n_nodes ? 100.0 * (double)total / (double)in->n_nodes : 0.0,
        100.0 * in->conf->max_fraction);
    free(list);
    for (size_t i = 0; i < n; i++)
        free((char *)names[i]);
    free(names);
    p->n_ops = kept;
    p->n_drain = 0;
    p->breaker = true;
}

void fb_slurm_plan(const fb_slurm_input_t *in, fb_slurm_plan_t *out)
{
    memset(out, 0, sizeof *out);
    if (in->conf->drain)
        s_plan_drains(in, out);
    if (in->conf->resume)
        s_plan_resumes(in, out);
    if (out->n_drain) {
        size_t staying = s_ours_staying(in, out);
        /* A small tolerance so that 1 of 4 nodes is within max_fraction 0.25. */
        if ((double)(out->n_drain + staying) > in->conf->max_fraction * (double)in->n_nodes + 1e-9)
            s_trip_breaker(in, out, staying);
    }
    /* drains, then resumes, then notes: what is done comes before what is not */
    fb_slurm_op_t *sorted = xcalloc(out->n_ops + 1, sizeof *sorted);
    size_t n = 0;
    for (int kind = FB_SLURM_OP_DRAIN; kind <= FB_SLURM_OP_NOTE; kind++)
        for (size_t k = 0; k < out->n_ops; k++)
            if ((int)out->ops[k].kind == kind)
                sorted[n++] = out->ops[k];
    free(out->ops);
    out->ops = sorted;
}

void fb_slurm_plan_fini(fb_slurm_plan_t *plan)
{
    for (size_t k = 0; k < plan->n_ops; k++) {
        free(plan->ops[k].node);
        free(plan->ops[k].reason);
        free(plan->ops[k].message);
    }
    free(plan->ops);
    free(plan->breaker_message);
    memset(plan, 0, sizeof *plan);
}
