/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet's fleet: the agents' names (the whole fleet's, when several processes make
 * one: this process runs the slice from --first), the fabric they sit on (a topology file or leaves
 * of SIMFLEET_LEAF_SIZE nodes), the fault model bound to it, the inventory each simulated node
 * reports, and the pool of agents themselves: the real agent state machine (agent/agent.c), each
 * with its own ZeroMQ DEALER connection, all on this process's one loop thread and one ZeroMQ
 * context, with simulated tasks (sim/simtask.h) in place of fleetburn-worker processes. */
#include "simfleet.h"

#include "agent/inventory.h"
#include "common/fileload.h"
#include "common/securemem.h"
#include "common/util.h"
#include "scheduler/campaign.h"
#include "sim/simfabric.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zmq.h>

static char **s_names(unsigned n)
{
    int width = 1;
    for (unsigned v = n - 1; v >= 10; v /= 10)
        width++;
    char **names = xcalloc(n, sizeof *names);
    for (unsigned i = 0; i < n; i++)
        names[i] = xasprintf("sim-%0*u", width, i);
    return names;
}

static int s_load_topology(fleet_t *f)
{
    const simfleet_cli_t *cli = f->cli;
    char err[512];
    int rc;
    if (cli->topology) {
        char *text = NULL, *why = NULL;
        rc = fb_load_file(cli->topology, CAMPAIGN_FILE_MAX_ATTACHED, &text, NULL, &why);
        if (rc) {
            fprintf(stderr, "fleetburn-simfleet: %s; expected a topology file\n", why);
            free(why);
            return -EINVAL;
        }
        rc = fb_topology_parse_any(text, &f->topo, err, sizeof err);
        free(text);
    } else {
        char *text =
            fb_simfabric_text(f->names, cli->fleet, SIMFLEET_LEAF_SIZE, SIMFLEET_SPINES, 0);
        rc = fb_topology_parse(text, &f->topo, err, sizeof err);
        free(text);
    }
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: %s%s%s\n", cli->topology ? cli->topology : "",
                cli->topology ? ": " : "", err);
        return -EINVAL;
    }
    /* Every member of the fleet, not only this process's: a group's members each judge the whole
     * group's test by themselves. */
    for (unsigned i = 0; i < cli->fleet; i++)
        if (!fb_topology_leaf_of(f->topo, f->names[i])) {
            fprintf(stderr,
                    "fleetburn-simfleet: %s: agent %s is on no leaf; expected every "
                    "simulated agent (%s ... %s) in the topology\n",
                    cli->topology, f->names[i], f->names[0], f->names[cli->fleet - 1]);
            return -EINVAL;
        }
    return 0;
}

/* --routes: the simulated fabric routes flows as these tables say (the campaign may name the
 * same file, as an operator's names the subnet manager's). */
static int s_load_routes(fleet_t *f)
{
    const char *path = f->cli->routes;
    if (!path)
        return 0;
    char *text = NULL, *why = NULL, err[512];
    if (fb_load_file(path, CAMPAIGN_FILE_MAX_ATTACHED, &text, NULL, &why)) {
        fprintf(stderr,
                "fleetburn-simfleet: %s; expected ibnetdiscover output with forwarding "
                "tables\n",
                why);
        free(why);
        return -EINVAL;
    }
    int rc = fb_routes_parse(text, &f->routes, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: %s: %s\n", path, err);
        return -EINVAL;
    }
    fb_faultmodel_set_routes(f->model, f->routes);
    return 0;
}

int simfleet_load_inputs(fleet_t *f)
{
    const simfleet_cli_t *cli = f->cli;
    char *err = NULL;
    /* The campaign and the files it names, sent with it as `fleetburn run` sends them. */
    if (cli->campaign && (campaign_file_read(cli->campaign, &f->campaign_file, &err) ||
                          campaign_file_check_submission(f->campaign_file, &err))) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        free(err);
        return -EINVAL;
    }
    if (f->campaign_file)
        f->yaml = xstrdup(f->campaign_file->yaml);
    char *text = NULL;
    size_t len = 0;
    if (fb_load_file(cli->faults, FB_FAULTMODEL_MAX_BYTES, &text, &len, &err)) {
        fprintf(stderr, "fleetburn-simfleet: %s; expected a fault file\n", err);
        free(err);
        return -EINVAL;
    }
    int rc = fb_faultmodel_parse(text, len, cli->faults, &f->model, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        free(err);
        return -EINVAL;
    }
    if (cli->has_seed)
        fb_faultmodel_set_seed(f->model, cli->seed);
    f->names = s_names(cli->fleet);
    if (s_load_topology(f))
        return -EINVAL;
    if (fb_faultmodel_bind(f->model, f->topo, &err)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        free(err);
        return -EINVAL;
    }
    return s_load_routes(f);
}

/* What a simulated node reports: 8 GPUs, its rails as InfiniBand HCAs. Built as a message, then
 * packed and unpacked, so that it is laid out like one the agent reads from sysfs. */
static Fleetburn__Inventory *s_inventory(const char *name, unsigned rails)
{
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    inv.hostname = (char *)name;
    inv.kernel = "simulated";
    inv.cpu_model = "simulated CPU";
    inv.cpus = 64;
    inv.numa_nodes = 2;
    inv.mem_total_bytes = 1024ull << 30;
    inv.agent_version = FB_VERSION;
    Fleetburn__Gpu gpus[8], *gpu_ptrs[8];
    char pci[8][16];
    for (int i = 0; i < 8; i++) {
        fleetburn__gpu__init(&gpus[i]);
        gpus[i].vendor = "nvidia";
        gpus[i].vendor_id = "0x10de";
        gpus[i].device_id = "0x2330";
        snprintf(pci[i], sizeof pci[i], "0000:%02x:00.0", 0x18 + i * 0x10);
        gpus[i].pci_address = pci[i];
        gpus[i].link_speed = gpus[i].max_link_speed = "32.0 GT/s PCIe";
        gpus[i].link_width = gpus[i].max_link_width = 16;
        gpus[i].numa_node = (uint32_t)(i / 4);
        gpu_ptrs[i] = &gpus[i];
    }
    inv.gpus = gpu_ptrs;
    inv.n_gpus = 8;
    Fleetburn__Nic *nics = xcalloc(rails, sizeof *nics);
    Fleetburn__Nic **nic_ptrs = xcalloc(rails, sizeof *nic_ptrs);
    char(*nic_names)[16] = xcalloc(rails, sizeof *nic_names);
    for (unsigned i = 0; i < rails; i++) {
        fleetburn__nic__init(&nics[i]);
        snprintf(nic_names[i], sizeof nic_names[i], "mlx5_%u", i);
        nics[i].name = nic_names[i];
        nics[i].kind = "infiniband";
        nics[i].port = 1;
        nics[i].state = "ACTIVE";
        nics[i].rate = "400 Gb/sec (4X NDR)";
        nics[i].speed_mbps = 400000;
        nics[i].address = "";
        nic_ptrs[i] = &nics[i];
    }
    inv.nics = nic_ptrs;
    inv.n_nics = rails;
    size_t len = fleetburn__inventory__get_packed_size(&inv);
    uint8_t *buf = xmalloc(len ? len : 1);
    fleetburn__inventory__pack(&inv, buf);
    Fleetburn__Inventory *out = fleetburn__inventory__unpack(NULL, len, buf);
    free(buf);
    free(nics);
    free(nic_ptrs);
    free(nic_names);
    if (!out) {
        fprintf(stderr, "fleetburn-simfleet: out of memory\n");
        abort();
    }
    return out;
}

/* Every agent holds a ZeroMQ socket (its mailbox descriptor) and a TCP connection; the
 * coordinator, started from here, inherits the limit and holds one connection per agent. */
int simfleet_raise_fd_limit(unsigned agents)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -errno;
    rlim_t need = (rlim_t)agents * 2 + 1024;
    if (rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr,
                "fleetburn-simfleet: %u agents need about %llu file descriptors; the hard "
                "limit is %llu (raise it with ulimit -Hn or limits.conf)\n",
                agents, (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return -EMFILE;
    }
    /* Everything the hard limit allows, not just the need: agents that reconnect hold a new
     * socket before libzmq has reaped the old one, so a fleet reconnecting at once needs more
     * than two descriptors per agent for a while. */
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY ? rl.rlim_max : need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : -errno;
}

static int s_start_agent(fleet_t *f, unsigned i)
{
    const char *name = simfleet_agent_name(f, i);
    agent_options_t o = {0};
    o.coordinator = f->endpoint;
    const simfleet_cli_t *cli = f->cli;
    unsigned relay = cli->n_relays ? (unsigned)((uint64_t)i * cli->n_relays / cli->agents) : 0;
    if (cli->n_relays)
        o.coordinator = cli->relays[relay];
    o.name = name;
    o.address = "127.0.0.1";
    o.executor = simtask_exec_executor(f->exec);
    o.zmq_context = f->zctx;
    o.inventory = f->inventories[i];
    o.tick_ms = f->cli->tick_ms;
    if (f->agent_key) {
        o.key = &f->agent_keys;
        o.server_key = cli->n_relays ? &f->relay_public[relay] : &f->server_public;
    }
    char err[512];
    f->agents[i] = agent_new(f->loop, &o, err, sizeof err);
    if (!f->agents[i]) {
        fprintf(stderr, "fleetburn-simfleet: agent %s: %s\n", name, err);
        return -EIO;
    }
    f->started++;
    return 0;
}

/* Every simulated node has the same key: read and checked once, not at each agent's connect. */
static int s_load_agent_keys(fleet_t *f)
{
    char err[512];
    if (fb_key_load_secret(f->agent_key, &f->agent_keys, err, sizeof err) ||
        fb_key_load_public(f->server_key, &f->server_public, NULL, err, sizeof err)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        return -EINVAL;
    }
    f->relay_public = xcalloc(f->cli->n_relay_keys + 1, sizeof *f->relay_public);
    for (unsigned r = 0; r < f->cli->n_relay_keys; r++)
        if (fb_key_load_public(f->cli->relay_keys[r], &f->relay_public[r], NULL, err,
                               sizeof err)) {
            fprintf(stderr, "fleetburn-simfleet: --relay-key: %s\n", err);
            return -EINVAL;
        }
    return 0;
}

int simfleet_start_agents(fleet_t *f)
{
    unsigned n = f->cli->agents;
    if (f->agent_key && s_load_agent_keys(f))
        return -EINVAL;
    f->zctx = zmq_ctx_new();
    if (f->agent_key) {
        fb_securemem_use(); /* thousands of handshakes in one process (common/securemem.h) */
        /* every agent's handshake is public-key crypto on the I/O threads */
        zmq_ctx_set(f->zctx, ZMQ_IO_THREADS, 2);
    }
    /* twice the agents: a reconnecting agent's old socket counts until libzmq has reaped it */
    if (zmq_ctx_set(f->zctx, ZMQ_MAX_SOCKETS, (int)(2 * n + 64)) != 0) {
        fprintf(stderr, "fleetburn-simfleet: ZeroMQ cannot hold %u sockets: %s\n", 2 * n + 64,
                zmq_strerror(errno));
        return -EMFILE;
    }
    simtask_options_t so = {f->model, f->cli->delay_min_ms, f->cli->delay_max_ms};
    f->exec = simtask_exec_new(&so);
    /* What each node will report exists before its agent starts (the timing starts after). */
    f->inventories = xcalloc(n, sizeof *f->inventories);
    for (unsigned i = 0; i < n; i++)
        f->inventories[i] = s_inventory(simfleet_agent_name(f, i), fb_faultmodel_rails(f->model));
    f->agents = xcalloc(n, sizeof *f->agents);
    f->t_agents = fb_mono_ms();
    f->unix_agents = fb_now_ms();
    int rc = simfleet_start_more(f, 0);
    if (rc)
        return rc;
    if (n == f->cli->fleet)
        fprintf(stderr, "started %u simulated agents against %s%s\n", f->started, f->endpoint,
                f->cli->n_relays ? " through relays" : "");
    else
        fprintf(stderr, "started %u simulated agents (%s ... %s of %u) against %s\n", f->started,
                simfleet_agent_name(f, 0), simfleet_agent_name(f, f->started - 1), f->cli->fleet,
                f->endpoint);
    if (f->started < n)
        fprintf(stderr,
                "the other %u start as agents register: at most %u waiting for their "
                "Welcome at a time (--connect-window)\n",
                n - f->started, f->cli->connect_window);
    return 0;
}

int simfleet_start_more(fleet_t *f, size_t registered)
{
    unsigned n = f->cli->agents, window = f->cli->connect_window ? f->cli->connect_window : n;
    while (f->started < n && f->started - registered < window) {
        int rc = s_start_agent(f, f->started);
        if (rc)
            return rc;
    }
    return 0;
}

const char *simfleet_agent_name(const fleet_t *f, unsigned i)
{
    return f->names[f->cli->first + i];
}

size_t simfleet_count_registered(const fleet_t *f)
{
    size_t n = 0;
    for (unsigned i = 0; i < f->started; i++)
        n += f->agents[i] && agent_registered(f->agents[i]);
    return n;
}

void simfleet_free_fleet(fleet_t *f)
{
    if (f->zctx)
        zmq_ctx_term(f->zctx);
    f->zctx = NULL;
    simtask_exec_destroy(&f->exec);
    for (unsigned i = 0; f->inventories && i < f->cli->agents; i++)
        inventory_free(&f->inventories[i]);
    free(f->inventories);
    f->inventories = NULL;
    free(f->agents);
    f->agents = NULL;
    free(f->relay_public);
    f->relay_public = NULL;
    for (unsigned i = 0; f->names && i < f->cli->fleet; i++)
        free(f->names[i]);
    free(f->names);
    f->names = NULL;
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
    memset(&f->agent_keys, 0, sizeof f->agent_keys);
    fb_routes_destroy(&f->routes);
}
