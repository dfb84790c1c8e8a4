/* SPDX-License-Identifier: Apache-2.0 */
/* InfiniBand / RoCE ports as sysfs shows them: /sys/class/infiniband/<hca>/ports/<n>/{state,
 * phys_state, link_layer, rate, lid, gids/, gid_attrs/types/}. One reader for every workload that
 * needs ports (rdmabw, the health sweep), so "4: ACTIVE" and "200 Gb/sec (4X HDR)" are parsed in
 * one place. Everything is read under a root prefix ("" on a machine, a fixture tree in tests),
 * and sysfs content is untrusted: text that does not parse is an error naming the file, never a
 * value read as zero. */
#ifndef FB_IBPORT_H
#define FB_IBPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IB_NAME_MAX 64

typedef struct {
    char hca[IB_NAME_MAX];      /* "mlx5_0" */
    unsigned port;              /* 1-based port number */
    char name[IB_NAME_MAX + 8]; /* "mlx5_0:1": how findings and logs name the port */
    char state[24];             /* "ACTIVE", "DOWN", "INIT", "ARMED"; "" when unreadable */
    char phys_state[32];        /* "LinkUp", "Polling", "Disabled" ... */
    char link_layer[16];        /* "InfiniBand" or "Ethernet" (RoCE); "InfiniBand" when absent */
    char rate[64];              /* the sysfs text, "200 Gb/sec (4X HDR)" */
    double gbps;                /* 200; 0 when unknown */
    unsigned width;             /* lanes, 4 for "4X"; 0 when the rate text does not say */
    char speed[12];             /* "HDR", "NDR"; "" when the rate text does not say */
    char hca_type[32];          /* /sys/class/infiniband/<hca>/hca_type, "MT4123"; "" when absent */
    uint16_t lid;               /* 0 on RoCE */
    bool active;                /* state ACTIVE */
    bool ib;                    /* link layer InfiniBand (else Ethernet: RoCE) */
    /* The GID the port is addressed by: index 0 on InfiniBand; on RoCE the RoCE v2 entry,
     * IPv4-mapped preferred (that is the one routable over IP). */
    uint8_t gid[16];
    int gid_index;     /* -1 when the port has no usable GID */
    char problem[256]; /* "" when every attribute parsed; else what failed, naming the file */
} ib_port_t;

/* "200 Gb/sec (4X HDR)" -> 200, 4, "HDR"; "25 Gb/sec (1X EDR)"; "100 Gb/sec" (no width);
 * "2.5 Gb/sec (1X SDR)". width/speed may be NULL; they get 0 / "" when the text has no
 * parenthesis. Returns 0 or -EINVAL (anything else, trailing garbage included). */
int ib_parse_rate(const char *text, double *gbps, unsigned *width, char *speed, size_t speed_len);

/* "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp" into out. -EINVAL unless the text is a
 * number, ": ", and a word of letters, digits and '_'. */
int ib_parse_state(const char *text, char *out, size_t len);

/* "fe80:0000:0000:0000:0c42:a103:0065:7f2e" -> 16 bytes. -EINVAL otherwise. */
int ib_parse_gid(const char *text, uint8_t gid[16]);

/* Reads one port (root + /sys/class/infiniband/<hca>/ports/<port>). Returns 0 when every
 * attribute parsed; -ENOENT when the port has no state file (not a port); -EINVAL with
 * out->problem naming the file and its content when one did not parse (out is filled with what
 * did). */
int ib_port_read(const char *root, const char *hca, unsigned port, ib_port_t *out);

/* Every port of every HCA, in name order (mlx5_2 before mlx5_10). Ports whose attributes did not
 * parse are listed with their problem set. Returns the count (0 when there is no HCA);
 * *ports_out is a heap array (free()) or NULL. *absent_out (may be NULL) is set to true when
 * /sys/class/infiniband does not exist at all. */
size_t ib_ports_list(const char *root, ib_port_t **ports_out, bool *absent_out);

/* Which ports `device` selects among ports[0..n): "all" (every active port), or a
 * comma-separated list of "hca" (its active ports; all of its ports when none is active) and
 * "hca:port" (that port, active or not). Ports that are down or have a problem may be selected:
 * the caller judges them. *sel_out gets indices into ports
 * (heap, free()), in list order without repeats. Returns the count, or -EINVAL when a name is
 * malformed or not on this node (why says which, and lists the HCAs there are). */
int ib_ports_select(const ib_port_t *ports, size_t n, const char *device, size_t **sel_out,
                    char *why, size_t why_len);

/* A one-line account of ports[0..n) for "no active port" messages:
 * "mlx5_0:1 DOWN (Polling), mlx5_1:1 INIT (LinkUp)". */
void ib_ports_describe(const ib_port_t *ports, size_t n, char *out, size_t len);

/* The best rate and width among the active, problem-free ports of ports[0..n) whose hca_type is
 * the same as p's (p included): what p should run at when it is the same hardware. */
void ib_ports_best(const ib_port_t *ports, size_t n, const ib_port_t *p, double *gbps,
                   unsigned *width);

#endif
