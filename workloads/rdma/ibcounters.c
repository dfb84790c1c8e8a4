/* SPDX-License-Identifier: Apache-2.0 */
/* Port counters before and after a run, and what their difference says. The PortCounters error
 * fields are narrow and saturate (link_downed stops at 255, local_link_integrity_errors at 15), so
 * a counter already at its maximum is reported as blind rather than clean. Counters are sorted
 * into link (the cable, transceivers, the switch port: symbol errors, recoveries, link downs,
 * packet loss seen as ACK timeouts and sequence errors) and nic (the HCA's transport: CQE errors,
 * access errors, discards by constraint), because that is the part an operator replaces. */
#include "ibcounters.h"

#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    ib_counter_class_t cls;
    unsigned bits; /* PortCounters field width; 0: 64-bit */
} s_counter_info_t;

/* IBTA PortCounters (and the mlx5 hw_counters that mean a fault). Everything else
 * (port_xmit_data, rx_write_requests, congestion-control counters ...) is traffic. */
static const s_counter_info_t s_known[] = {
    {"symbol_error", IB_COUNTER_LINK, 16},
    {"link_error_recovery", IB_COUNTER_LINK, 8},
    {"link_downed", IB_COUNTER_LINK, 8},
    {"port_rcv_errors", IB_COUNTER_LINK, 16},
    {"port_rcv_remote_physical_errors", IB_COUNTER_LINK, 16},
    {"local_link_integrity_errors", IB_COUNTER_LINK, 4},
    {"excessive_buffer_overrun_errors", IB_COUNTER_LINK, 4},
    {"port_xmit_discards", IB_COUNTER_LINK, 16},
    {"port_rcv_switch_relay_errors", IB_COUNTER_NIC, 16},
    {"port_xmit_constraint_errors", IB_COUNTER_NIC, 8},
    {"port_rcv_constraint_errors", IB_COUNTER_NIC, 8},
    /* Subnet management packets dropped: normal while the SM sweeps, never a fault alone. */
    {"VL15_dropped", IB_COUNTER_NOTE, 16},
    /* Packets lost or corrupted on the way: retransmissions the transport had to make. */
    {"hw_counters/local_ack_timeout_err", IB_COUNTER_LINK, 0},
    {"hw_counters/packet_seq_err", IB_COUNTER_LINK, 0},
    {"hw_counters/out_of_sequence", IB_COUNTER_LINK, 0},
    {"hw_counters/implied_nak_seq_err", IB_COUNTER_LINK, 0},
    {"hw_counters/duplicate_request", IB_COUNTER_LINK, 0},
    {"hw_counters/rx_icrc_encapsulated", IB_COUNTER_LINK, 0},
    /* Work requests that completed in error. */
    {"hw_counters/req_cqe_error", IB_COUNTER_NIC, 0},
    {"hw_counters/resp_cqe_error", IB_COUNTER_NIC, 0},
    {"hw_counters/req_remote_access_errors", IB_COUNTER_NIC, 0},
    {"hw_counters/req_remote_invalid_request", IB_COUNTER_NIC, 0},
    {"hw_counters/resp_local_length_error", IB_COUNTER_NIC, 0},
    {"hw_counters/resp_remote_access_errors", IB_COUNTER_NIC, 0},
    {"hw_counters/rnr_nak_retry_err", IB_COUNTER_NIC, 0},
};

ib_counter_class_t ib_counter_class(const char *name, uint64_t *saturate)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(s_known); i++) {
        if (strcmp(s_known[i].name, name) != 0)
            continue;
        if (saturate)
            *saturate = s_known[i].bits ? (UINT64_C(1) << s_known[i].bits) - 1 : 0;
        return s_known[i].cls;
    }
    if (saturate)
        *saturate = 0;
    return IB_COUNTER_IGNORED;
}

/* Reads every counter file of dir into s, names prefixed with prefix. */
static int s_read_dir(ib_snapshot_t *s, const char *dir, const char *prefix, char *err,
                      size_t errlen)
{
    char **names;
    size_t n = fb_list_dir(dir, &names);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        ib_counter_t *c = &s->counters[s->n];
        if (s->n == IB_MAX_COUNTERS)
            break;
        if ((size_t)snprintf(c->name, sizeof c->name, "%s%s", prefix, names[i]) >= sizeof c->name)
            continue;
        ib_counter_class_t cls = ib_counter_class(c->name, NULL);
        char *path = xasprintf("%s/%s", dir, names[i]);
        int r = fb_read_u64(path, &c->value);
        if (r == 0) {
            s->n++;
        } else if (r == -EINVAL && cls != IB_COUNTER_IGNORED) {
            /* A counter that reads but is not a number: the driver or the fixture is broken, and
             * a silent zero would hide errors. Traffic counters with odd content are skipped. */
            char *text = fb_read_file(path, NULL);
            char shown[64];
            snprintf(err, errlen, "%s: '%s' is not a counter value", path,
                     fb_show_value(text ? text : "", shown, sizeof shown));
            free(text);
            rc = -EINVAL;
        }
        free(path);
    }
    fb_names_free(names, n);
    return rc;
}

int ib_snapshot_read(const char *root, const char *hca, unsigned port, ib_snapshot_t *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = ib_port_read(root, hca, port, &out->port);
    if (rc == -ENOENT) {
        snprintf(err, errlen, "%s:%u: no such port under %s/sys/class/infiniband", hca, port, root);
        return rc;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", out->port.problem);
        return rc;
    }
    char *dir = xasprintf("%s/sys/class/infiniband/%s/ports/%u/counters", root, hca, port);
    rc = s_read_dir(out, dir, "", err, errlen);
    free(dir);
    if (rc == 0) {
        dir = xasprintf("%s/sys/class/infiniband/%s/ports/%u/hw_counters", root, hca, port);
        rc = s_read_dir(out, dir, "hw_counters/", err, errlen);
        free(dir);
    }
    return rc;
}

const ib_counter_t *ib_snapshot_counter(const ib_snapshot_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->counters[i].name, name))
            return &s->counters[i];
    return NULL;
}

/* ---- comparison ------------------------------------------------------------------------------ */

static void s_note(void (*note)(void *, const char *), void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_note(void (*note)(void *, const char *), void *user, const char *fmt, ...)
{
    if (!note)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    note(user, line);
}

static void s_append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* The counters of one class that moved, as "symbol_error +12, link_downed +1". */
static size_t s_moved(const ib_snapshot_t *before, const ib_snapshot_t *after,
                      ib_counter_class_t want, char *list, size_t len, const char *part,
                      void (*note)(void *, const char *), void *user)
{
    size_t moved = 0;
    list[0] = '\0';
    for (size_t i = 0; i < after->n; i++) {
        const ib_counter_t *a = &after->counters[i];
        uint64_t sat;
        if (ib_counter_class(a->name, &sat) != want)
            continue;
        const ib_counter_t *b = ib_snapshot_counter(before, a->name);
        if (!b)
            continue; /* appeared during the run: nothing to compare with */
        if (want == IB_COUNTER_LINK || want == IB_COUNTER_NIC) {
            if (sat && b->value >= sat && a->value >= sat) {
                s_note(note, user,
                       "%s: %s is stuck at its maximum %" PRIu64
                       " and cannot show new errors (clear the port counters: perfquery -x -R)",
                       part, a->name, sat);
                continue;
            }
        }
        if (a->value == b->value)
            continue;
        moved++;
        if (a->value > b->value)
            s_append(list, len, "%s%s +%" PRIu64, moved > 1 ? ", " : "", a->name,
                     a->value - b->value);
        else
            s_append(list, len, "%s%s %" PRIu64 " (cleared during the run; at least that many)",
                     moved > 1 ? ", " : "", a->name, a->value);
    }
    return moved;
}

size_t ib_snapshot_compare(const ib_snapshot_t *before, const ib_snapshot_t *after,
                           const char *node, const char *during, fb_result_t *result,
                           void (*note)(void *user, const char *line), void *user)
{
    char part[256];
    snprintf(part, sizeof part, "%s/%s", node, after->port.name);
    size_t findings = 0;
    char list[1536];
    if (s_moved(before, after, IB_COUNTER_LINK, list, sizeof list, part, note, user)) {
        fb_result_add_findingf(result, part, "link",
                               "port error counters moved during %s: %s (cable, transceiver or "
                               "switch port)",
                               during, list);
        findings++;
    }
    if (s_moved(before, after, IB_COUNTER_NIC, list, sizeof list, part, note, user)) {
        fb_result_add_findingf(result, part, "nic", "HCA error counters moved during %s: %s",
                               during, list);
        findings++;
    }
    if (s_moved(before, after, IB_COUNTER_NOTE, list, sizeof list, part, note, user))
        s_note(note, user, "%s: %s during %s (not a fault)", part, list, during);

    const ib_port_t *b = &before->port, *a = &after->port;
    if (b->active && !a->active) {
        fb_result_add_findingf(result, part, "link", "port left ACTIVE during %s: now %s (%s)",
                               during, a->state[0] ? a->state : "unreadable",
                               a->phys_state[0] ? a->phys_state : "?");
        findings++;
    } else if (b->gbps > 0 && (a->gbps != b->gbps || a->width != b->width)) {
        fb_result_add_findingf(result, part, "link",
                               "port rate changed during %s: %s before, %s after (the link "
                               "retrained)",
                               during, b->rate, a->rate[0] ? a->rate : "unreadable");
        findings++;
    }
    return findings;
}

size_t ib_port_judge_rate(const ib_port_t *ports, size_t n, const ib_port_t *p, const char *node,
                          fb_result_t *result)
{
    double best_gbps;
    unsigned best_width;
    ib_ports_best(ports, n, p, &best_gbps, &best_width);
    bool narrow = p->width && best_width > p->width;
    bool slow = p->gbps > 0 && best_gbps > p->gbps + 1e-9;
    if (!narrow && !slow)
        return 0;
    char part[256], best[96];
    snprintf(part, sizeof part, "%s/%s", node, p->name);
    if (best_width)
        snprintf(best, sizeof best, "%g Gb/sec %uX", best_gbps, best_width);
    else
        snprintf(best, sizeof best, "%g Gb/sec", best_gbps);
    fb_result_add_findingf(result, part, "link",
                           "port runs at %s, below the %s of the same HCA model on this node "
                           "(degraded %s: check the cable and both ends)",
                           p->rate, best, narrow ? "width" : "speed");
    return 1;
}
