/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet: a simulated fleet of N agents against the real coordinator.
 *
 *   fleetburn-simfleet --agents N [--topology FILE] --faults FILE --campaign FILE [--db PATH]
 *                      --report-json OUT [--seed S] [--delay-ms MIN[-MAX]] [--stats FILE]
 *
 * The coordinator is the real one, run as its own process (`fleetburn serve` next to this
 * program, on a free loopback port), so that what is measured and reported is the coordinator a
 * fleet would talk to: its own event loop, its own memory, the same code path as production.
 * The N agents are the real agent state machine (agent.c: Hello with an inventory, Welcome,
 * heartbeats, RunTask, TaskResult, spool until Ack), each with its own ZeroMQ DEALER connection,
 * all on this process's one loop thread; only task execution is simulated (simtask.h) and the
 * spool kept in memory. The campaign goes in through the wire like `fleetburn run --coordinator`
 * (Submit/Progress). At the end the report JSON is read from the coordinator's store, exactly
 * as `fleetburn report --format json` writes it.
 *
 * Exit status as `fleetburn run`: 0 every task passed, 1 some did not, 2 usage, campaign or fault
 * file errors, 3 the campaign could not be run (coordinator, agents, limits). */
#include "agent.h"
#include "inventory.h"
#include "simtask.h"
#include "coordinator/campaign_file.h"
#include "coordinator/report.h"
#include "coordinator/store.h"
#include "common/fileload.h"
#include "common/hostlist.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/securemem.h"
#include "common/units.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zsock.h"
#include "scheduler/campaign.h"
#include "scheduler/faultmodel.h"
#include "scheduler/topology.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#define EXIT_PASS 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INFRA 3
#define S_MAX_AGENTS 65536
#define S_POLL_MS 10
#define S_COORD_START_MS 15000
#define S_LEAF_SIZE 32 /* nodes per leaf of the fabric made up when no topology is given */
#define S_SPINES 4
#define S_TICK_MS 250 /* agents' timer and socket checks (a real agent's: 100 ms) */

typedef struct {
    unsigned agents;
    const char *topology, *faults, *campaign, *db, *report, *stats;
    bool has_seed;
    uint64_t seed;
    uint32_t delay_min_ms, delay_max_ms;
    uint32_t heartbeat_ms, liveness, tick_ms;
    bool keep, verbose;
    bool curve; /* keys for everyone: the coordinator, one shared key for sim-*, an operator */
} cli_t;

typedef enum { S_STARTING, S_REGISTERING, S_RUNNING, S_STOPPING } phase_t;

typedef struct {
    uv_loop_t *loop;
    const cli_t *cli;
    phase_t phase;
    int exit_code;
    char workdir[256];
    char *db, *log_path, *yaml;
    char endpoint[64];
    int port;
    /* the coordinator process */
    uv_process_t coord;
    bool coord_running;
    /* the fleet */
    fb_topology_t *topo;
    fb_faultmodel_t *model;
    simtask_exec_t *exec;
    void *zctx;
    char **names;
    Fleetburn__Inventory **inventories;
    agent_t **agents;
    zsock_t *client;
    uv_timer_t poll;
    uv_signal_t sigint, sigterm;
    /* what happened, monotonic ms */
    uint64_t t_start, t_agents, t_registered, t_submit, t_finished, last_print;
    size_t registered;
    char *campaign_id;
    fb_verdict_t verdict;
    double coord_rss_mb, coord_peak_mb, coord_rss_registered_mb;
    double coord_cpu_registered_s, coord_cpu_end_s; /* user + system */
    bool tty;
    char *agent_key, *operator_key, *server_key; /* --curve: paths in the work directory */
    campaign_file_t *campaign_file; /* the campaign and the files it names, as submitted */
} fleet_t;

/* ---- command line ------------------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fleetburn-simfleet --agents N --faults FILE --campaign FILE --report-json OUT\n"
            "                          [--topology FILE] [--db PATH] [--seed S] [options]\n"
            "  --agents N            simulated agents sim-0 ... (1-%d)\n"
            "  --faults FILE         fault file (docs/simfleet.md)\n"
            "  --campaign FILE       campaign to run\n"
            "  --report-json OUT     write the JSON report here (- for stdout)\n"
            "  --topology FILE       fabric (leaf/spine text or ibnetdiscover output); default:\n"
            "                        leaves of %d nodes, each on %d spines\n"
            "  --db PATH             the coordinator's database (default: a temporary one)\n"
            "  --seed S              overrides the fault file's seed\n"
            "  --delay-ms MIN[-MAX]  real time a simulated task takes (default 0-50)\n"
            "  --heartbeat-ms MS, --liveness N   passed to the coordinator\n"
            "  --tick-ms MS          how often each agent checks its timers and socket\n"
            "                        (default %d; a real agent: 100)\n"
            "  --stats FILE          timings as key=value lines (bench/scale.sh reads them)\n"
            "  --curve               CURVE on every connection: keys are made in the work\n"
            "                        directory (one agent key for sim-*, with a nodes: line)\n"
            "  --keep                keep the work directory (coordinator log, database)\n"
            "  --verbose             agent and coordinator details on stderr\n",
            S_MAX_AGENTS, S_LEAF_SIZE, S_SPINES, S_TICK_MS);
}

static int s_parse_u32(const char *opt, const char *text, uint64_t min, uint64_t max, uint32_t *out)
{
    uint64_t v;
    if (fb_parse_uint(text, max, &v) || v < min) {
        fprintf(stderr, "fleetburn-simfleet: %s: '%s' is not a number from %llu to %llu\n", opt,
                text, (unsigned long long)min, (unsigned long long)max);
        return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

static int s_parse_delay(const char *text, cli_t *cli)
{
    const char *dash = strchr(text, '-');
    char *lo = dash ? xstrndup(text, (size_t)(dash - text)) : xstrdup(text);
    int rc = s_parse_u32("--delay-ms", lo, 0, 600000, &cli->delay_min_ms);
    free(lo);
    cli->delay_max_ms = cli->delay_min_ms;
    if (!rc && dash)
        rc = s_parse_u32("--delay-ms", dash + 1, cli->delay_min_ms, 600000, &cli->delay_max_ms);
    return rc;
}

static int s_parse_cli(int argc, char **argv, cli_t *cli)
{
    static const struct option longopts[] = {
        {"agents", required_argument, 0, 'n'},       {"topology", required_argument, 0, 't'},
        {"faults", required_argument, 0, 'f'},       {"campaign", required_argument, 0, 'c'},
        {"db", required_argument, 0, 'd'},           {"report-json", required_argument, 0, 'r'},
        {"seed", required_argument, 0, 's'},         {"delay-ms", required_argument, 0, 'D'},
        {"heartbeat-ms", required_argument, 0, 'H'}, {"liveness", required_argument, 0, 'L'},
        {"stats", required_argument, 0, 'S'},        {"keep", no_argument, 0, 'k'},
        {"verbose", no_argument, 0, 'v'},            {"help", no_argument, 0, 'h'},
        {"tick-ms", required_argument, 0, 'T'},      {"curve", no_argument, 0, 'C'},
        {0, 0, 0, 0}};
    memset(cli, 0, sizeof *cli);
    cli->delay_max_ms = 50;
    cli->tick_ms = S_TICK_MS;
    int c;
    uint32_t v;
    while ((c = getopt_long(argc, argv, "n:t:f:c:d:r:s:D:H:L:S:T:kvh", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (s_parse_u32("--agents", optarg, 1, S_MAX_AGENTS, &v))
                return -EINVAL;
            cli->agents = v;
            break;
        case 't': cli->topology = optarg; break;
        case 'f': cli->faults = optarg; break;
        case 'c': cli->campaign = optarg; break;
        case 'd': cli->db = optarg; break;
        case 'r': cli->report = optarg; break;
        case 'S': cli->stats = optarg; break;
        case 's':
            if (fb_parse_uint(optarg, UINT64_MAX, &cli->seed)) {
                fprintf(stderr, "fleetburn-simfleet: --seed: '%s' is not a number\n", optarg);
                return -EINVAL;
            }
            cli->has_seed = true;
            break;
        case 'D':
            if (s_parse_delay(optarg, cli))
                return -EINVAL;
            break;
        case 'H':
            if (s_parse_u32("--heartbeat-ms", optarg, 10, 600000, &cli->heartbeat_ms))
                return -EINVAL;
            break;
        case 'L':
            if (s_parse_u32("--liveness", optarg, 1, 100, &cli->liveness))
                return -EINVAL;
            break;
        case 'T':
            if (s_parse_u32("--tick-ms", optarg, 10, 10000, &cli->tick_ms))
                return -EINVAL;
            break;
        case 'k': cli->keep = true; break;
        case 'C': cli->curve = true; break;
        case 'v': cli->verbose = true; break;
        case 'h': s_usage(stdout); exit(0);
        default: return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fleetburn-simfleet: unexpected argument '%s'\n", argv[optind]);
        return -EINVAL;
    }
    const char *missing = !cli->agents ? "--agents" : !cli->faults ? "--faults"
                          : !cli->campaign ? "--campaign" : !cli->report ? "--report-json" : NULL;
    if (missing) {
        fprintf(stderr, "fleetburn-simfleet: %s is required\n", missing);
        return -EINVAL;
    }
    return 0;
}

/* ---- the simulated fabric and fleet ------------------------------------------------------- */

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

/* Leaves of S_LEAF_SIZE nodes, every leaf on the same S_SPINES spines. */
static char *s_default_topology_text(char **names, unsigned n)
{
    unsigned leaves = (n + S_LEAF_SIZE - 1) / S_LEAF_SIZE;
    int lw = leaves >= 100 ? (leaves >= 1000 ? 4 : 3) : 2;
    size_t cap = 256 + (size_t)n * 16 + leaves * 32, len = 0;
    char *text = xmalloc(cap);
    for (unsigned l = 0; l < leaves; l++) {
        len += (size_t)snprintf(text + len, cap - len, "leaf%0*u:", lw, l + 1);
        for (unsigned i = l * S_LEAF_SIZE; i < n && i < (l + 1) * S_LEAF_SIZE; i++)
            len += (size_t)snprintf(text + len, cap - len, "%s%s", i % S_LEAF_SIZE ? "," : " ",
                                    names[i]);
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    for (unsigned s = 0; s < S_SPINES; s++)
        len += (size_t)snprintf(text + len, cap - len, "spine%02u: leaf[%0*u-%0*u]\n", s + 1, lw,
                                1, lw, leaves);
    return text;
}

static int s_load_topology(fleet_t *f)
{
    const cli_t *cli = f->cli;
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
        char *text = s_default_topology_text(f->names, cli->agents);
        rc = fb_topology_parse(text, &f->topo, err, sizeof err);
        free(text);
    }
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: %s%s%s\n", cli->topology ? cli->topology : "",
                cli->topology ? ": " : "", err);
        return -EINVAL;
    }
    for (unsigned i = 0; i < cli->agents; i++)
        if (!fb_topology_leaf_of(f->topo, f->names[i])) {
            fprintf(stderr, "fleetburn-simfleet: %s: agent %s is on no leaf; expected every "
                            "simulated agent (%s ... %s) in the topology\n",
                    cli->topology, f->names[i], f->names[0], f->names[cli->agents - 1]);
            return -EINVAL;
        }
    return 0;
}

static int s_load_inputs(fleet_t *f)
{
    const cli_t *cli = f->cli;
    char *err = NULL;
    /* The campaign and the files it names, sent with it as `fleetburn run` sends them. */
    if (campaign_file_read(cli->campaign, &f->campaign_file, &err) ||
        campaign_file_check_submission(f->campaign_file, &err)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        free(err);
        return -EINVAL;
    }
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
    f->names = s_names(cli->agents);
    if (s_load_topology(f))
        return -EINVAL;
    if (fb_faultmodel_bind(f->model, f->topo, &err)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", err);
        free(err);
        return -EINVAL;
    }
    return 0;
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
    char (*nic_names)[16] = xcalloc(rails, sizeof *nic_names);
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
static int s_raise_fd_limit(unsigned agents)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -errno;
    rlim_t need = (rlim_t)agents * 2 + 1024;
    if (rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr, "fleetburn-simfleet: %u agents need about %llu file descriptors; the hard "
                        "limit is %llu (raise it with ulimit -Hn or limits.conf)\n",
                agents, (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return -EMFILE;
    }
    rl.rlim_cur = need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : -errno;
}

/* ---- the coordinator process -------------------------------------------------------------- */

static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static bool s_port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static void s_stop(fleet_t *f, int exit_code);

static void s_on_coord_exit(uv_process_t *p, int64_t status, int term_signal)
{
    fleet_t *f = p->data;
    f->coord_running = false;
    uv_close((uv_handle_t *)p, NULL);
    if (f->phase != S_STOPPING) {
        fprintf(stderr, "fleetburn-simfleet: the coordinator exited (status %lld, signal %d); "
                        "see %s\n",
                (long long)status, term_signal, f->log_path);
        s_stop(f, EXIT_INFRA);
    }
}

/* --curve: the key directory of a keyed coordinator in the work directory, one agent key shared
 * by every simulated node (a nodes: line, as an image-baked key would be), and an operator key
 * for the submission. Secret keys of the agents and the operator stay outside keys/. */
static const char *const s_key_files[] = {
    "keys/coordinator", "keys/coordinator.pub", "keys/agents/sim.pub", "keys/operators/simfleet.pub",
    "sim-agent",        "operator",             "keys/agents",         "keys/operators",
    "keys"};

static char *s_work_path(const fleet_t *f, const char *name)
{
    return xasprintf("%s/%s", f->workdir, name);
}

static int s_make_key(const fleet_t *f, const char *name, char *err, size_t errlen)
{
    fb_key_t key;
    char *path = s_work_path(f, name);
    int rc = fb_key_generate(&key);
    if (rc == 0)
        rc = fb_key_write(path, &key, err, errlen);
    memset(&key, 0, sizeof key);
    free(path);
    return rc;
}

/* Moves WORK/from.pub to WORK/to (a public key into the coordinator's directory) and, for an
 * agent key, adds the nodes: line. */
static int s_place_public(const fleet_t *f, const char *from, const char *to, const char *nodes)
{
    char *src = xasprintf("%s/%s.pub", f->workdir, from), *dst = s_work_path(f, to);
    int rc = rename(src, dst) == 0 ? 0 : -errno;
    if (rc == 0 && nodes) {
        FILE *out = fopen(dst, "a");
        rc = out && fprintf(out, "nodes: %s\n", nodes) > 0 && fclose(out) == 0 ? 0 : -EIO;
    }
    free(src);
    free(dst);
    return rc;
}

static int s_make_keys(fleet_t *f)
{
    char err[512] = "";
    char *dirs[] = {s_work_path(f, "keys"), s_work_path(f, "keys/agents"),
                    s_work_path(f, "keys/operators")};
    int rc = 0;
    for (size_t i = 0; i < 3; i++) {
        if (rc == 0 && mkdir(dirs[i], 0700) != 0)
            rc = -errno;
        free(dirs[i]);
    }
    char *nodes = hostlist_compress((const char *const *)f->names, f->cli->agents);
    if (rc == 0)
        rc = s_make_key(f, "keys/coordinator", err, sizeof err);
    if (rc == 0)
        rc = s_make_key(f, "sim-agent", err, sizeof err);
    if (rc == 0)
        rc = s_make_key(f, "operator", err, sizeof err);
    if (rc == 0)
        rc = s_place_public(f, "sim-agent", "keys/agents/sim.pub", nodes);
    if (rc == 0)
        rc = s_place_public(f, "operator", "keys/operators/simfleet.pub", NULL);
    free(nodes);
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot make keys: %s\n", err[0] ? err : strerror(-rc));
    return rc;
}

static void s_remove_keys(const fleet_t *f)
{
    for (size_t i = 0; i < sizeof s_key_files / sizeof s_key_files[0]; i++) {
        char *path = s_work_path(f, s_key_files[i]);
        if (unlink(path) != 0 && errno == EISDIR)
            rmdir(path);
        else
            rmdir(path);
        free(path);
    }
}

static int s_spawn_coordinator(fleet_t *f)
{
    char *dir = fb_exe_dir();
    char *path = xasprintf("%s/fleetburn", dir ? dir : ".");
    free(dir);
    f->port = s_free_port();
    snprintf(f->endpoint, sizeof f->endpoint, "tcp://127.0.0.1:%d", f->port);
    char hb[16], lv[16];
    snprintf(hb, sizeof hb, "%u", f->cli->heartbeat_ms);
    snprintf(lv, sizeof lv, "%u", f->cli->liveness);
    char *args[16];
    size_t n = 0;
    args[n++] = path;
    args[n++] = "serve";
    args[n++] = "--bind";
    args[n++] = f->endpoint;
    args[n++] = "--db";
    args[n++] = f->db;
    /* Every simulated agent connects from loopback. */
    args[n++] = "--max-connections-per-address";
    args[n++] = "0";
    if (f->cli->heartbeat_ms) {
        args[n++] = "--heartbeat-ms";
        args[n++] = hb;
    }
    if (f->cli->liveness) {
        args[n++] = "--liveness";
        args[n++] = lv;
    }
    if (f->cli->verbose)
        args[n++] = "--verbose";
    char *keys_dir = f->cli->curve ? xasprintf("%s/keys", f->workdir) : NULL;
    if (keys_dir) {
        args[n++] = "--keys";
        args[n++] = keys_dir;
    }
    args[n] = NULL;
    int log_fd = open(f->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = log_fd}},
                                     {UV_INHERIT_FD, {.fd = log_fd}}};
    uv_process_options_t po = {0};
    po.file = path;
    po.args = args;
    po.exit_cb = s_on_coord_exit;
    po.stdio = stdio;
    po.stdio_count = 3;
    f->coord.data = f;
    int rc = log_fd < 0 ? -errno : uv_spawn(f->loop, &f->coord, &po);
    if (log_fd >= 0)
        close(log_fd);
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot start %s: %s\n", path,
                log_fd < 0 ? strerror(-rc) : uv_strerror(rc));
    else
        f->coord_running = true;
    free(path);
    free(keys_dir);
    return rc;
}

/* CPU time (user + system) the coordinator has used, seconds; on a shared machine a steadier
 * measure of its cost than elapsed time. */
static double s_coord_cpu_s(const fleet_t *f)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", f->coord.pid);
    char *text = fb_read_file(path, NULL);
    const char *p = text ? strrchr(text, ')') : NULL;
    unsigned long utime = 0, stime = 0;
    /* After "pid (comm)": state, then fields 4..13, then utime and stime (fields 14, 15). */
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
    free(text);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident and peak resident memory of the coordinator, MiB, from /proc. */
static void s_read_coord_memory(fleet_t *f)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", f->coord.pid);
    FILE *in = fopen(path, "r");
    if (!in)
        return;
    char line[256];
    unsigned long kb;
    while (fgets(line, sizeof line, in)) {
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            f->coord_rss_mb = (double)kb / 1024.0;
        else if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
            f->coord_peak_mb = (double)kb / 1024.0;
    }
    fclose(in);
}

/* ---- the campaign, through the wire like `fleetburn run --coordinator` ---------------------- */

static void s_show_progress(fleet_t *f, const Fleetburn__Progress *p)
{
    uint64_t now = fb_mono_ms();
    if (p->finished) {
        fprintf(stderr, "%scampaign finished: %s\n", f->tty ? "\r\033[K" : "",
                fb_verdict_name((fb_verdict_t)p->verdict));
        return;
    }
    if (now - f->last_print < (f->tty ? 250u : 2000u))
        return;
    f->last_print = now;
    fprintf(stderr, "%s[stage %u/%u %s] %u/%u tasks done, %u failed, %.1f s%s",
            f->tty ? "\r\033[K" : "", p->stage_index + 1 > p->stage_count ? p->stage_count
                                                                           : p->stage_index + 1,
            p->stage_count, p->stage, p->tasks_done, p->tasks_total, p->tasks_failed,
            (double)p->elapsed_ms / 1000.0, f->tty ? "" : "\n");
}

static void s_on_progress(zsock_t *zs, const uint8_t *const *frames, const size_t *lens, size_t n,
                          void *arg)
{
    (void)zs;
    fleet_t *f = arg;
    char err[256];
    Fleetburn__Envelope *env = NULL;
    int rc = wire_decode(frames[n - 1], lens[n - 1], &env, err, sizeof err);
    if (rc || env->body_case != FLEETBURN__ENVELOPE__BODY_PROGRESS) {
        fprintf(stderr, "fleetburn-simfleet: unexpected reply from the coordinator: %s\n",
                rc ? err : "not a progress message");
        wire_free(&env);
        return;
    }
    const Fleetburn__Progress *p = env->progress;
    if (p->error[0]) {
        fprintf(stderr, "fleetburn-simfleet: the coordinator refused the campaign: %s\n", p->error);
        s_stop(f, strncmp(p->error, "busy", 4) ? EXIT_USAGE : EXIT_INFRA);
    } else if (f->phase == S_RUNNING) {
        if (!f->campaign_id && p->campaign_id[0])
            f->campaign_id = xstrdup(p->campaign_id);
        s_show_progress(f, p);
        if (p->finished) {
            f->t_finished = fb_mono_ms();
            f->verdict = (fb_verdict_t)p->verdict;
            s_stop(f, fb_verdict_ok(f->verdict) ? EXIT_PASS : EXIT_FAILED);
        }
    }
    wire_free(&env);
}

static int s_submit(fleet_t *f)
{
    void *sock = zsock_new_socket(f->zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    char kerr[512];
    if (sock && f->cli->curve &&
        fb_key_apply_client(sock, f->operator_key, f->server_key, kerr, sizeof kerr)) {
        fprintf(stderr, "fleetburn-simfleet: %s\n", kerr);
        zmq_close(sock);
        return -EIO;
    }
    if (!sock || zmq_connect(sock, f->endpoint) != 0) {
        fprintf(stderr, "fleetburn-simfleet: cannot connect to %s: %s\n", f->endpoint,
                zmq_strerror(errno));
        if (sock)
            zmq_close(sock);
        return -EIO;
    }
    f->client = zsock_new(f->loop, sock, s_on_progress, f);
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(f->campaign_file, &len);
    const void *frames[] = {buf};
    int rc = zsock_send(f->client, frames, &len, 1);
    free(buf);
    if (rc) {
        fprintf(stderr, "fleetburn-simfleet: cannot submit the campaign: %s\n", zmq_strerror(-rc));
        return -EIO;
    }
    f->t_submit = fb_mono_ms();
    fprintf(stderr, "submitted %s to the coordinator\n", f->cli->campaign);
    return 0;
}

/* ---- the agents ---------------------------------------------------------------------------- */

static int s_start_agents(fleet_t *f)
{
    unsigned n = f->cli->agents;
    f->zctx = zmq_ctx_new();
    if (f->cli->curve)
        fb_securemem_use(); /* thousands of handshakes in one process (common/securemem.h) */
    if (f->cli->curve) /* every agent's handshake is public-key crypto on the I/O threads */
        zmq_ctx_set(f->zctx, ZMQ_IO_THREADS, 2);
    if (zmq_ctx_set(f->zctx, ZMQ_MAX_SOCKETS, (int)n + 64) != 0) {
        fprintf(stderr, "fleetburn-simfleet: ZeroMQ cannot hold %u sockets: %s\n", n + 64,
                zmq_strerror(errno));
        return -EMFILE;
    }
    simtask_options_t so = {f->model, f->cli->delay_min_ms, f->cli->delay_max_ms};
    f->exec = simtask_exec_new(&so);
    f->inventories = xcalloc(n, sizeof *f->inventories);
    f->agents = xcalloc(n, sizeof *f->agents);
    f->t_agents = fb_mono_ms();
    for (unsigned i = 0; i < n; i++) {
        f->inventories[i] = s_inventory(f->names[i], fb_faultmodel_rails(f->model));
        agent_options_t o = {0};
        o.coordinator = f->endpoint;
        o.name = f->names[i];
        o.address = "127.0.0.1";
        o.executor = simtask_exec_executor(f->exec);
        o.zmq_context = f->zctx;
        o.inventory = f->inventories[i];
        o.tick_ms = f->cli->tick_ms;
        if (f->cli->curve) {
            o.key_file = f->agent_key;
            o.server_key_file = f->server_key;
        }
        char err[512];
        f->agents[i] = agent_new(f->loop, &o, err, sizeof err);
        if (!f->agents[i]) {
            fprintf(stderr, "fleetburn-simfleet: agent %s: %s\n", f->names[i], err);
            return -EIO;
        }
    }
    fprintf(stderr, "started %u simulated agents against %s\n", n, f->endpoint);
    return 0;
}

static size_t s_count_registered(const fleet_t *f)
{
    size_t n = 0;
    for (unsigned i = 0; i < f->cli->agents; i++)
        n += f->agents[i] && agent_registered(f->agents[i]);
    return n;
}

/* ---- phases, driven by one timer ------------------------------------------------------------ */

static void s_on_poll(uv_timer_t *h)
{
    fleet_t *f = h->data;
    uint64_t now = fb_mono_ms();
    if (f->phase == S_STARTING) {
        if (s_port_open(f->port)) {
            f->phase = S_REGISTERING;
            if (s_start_agents(f))
                s_stop(f, EXIT_INFRA);
        } else if (now - f->t_start > S_COORD_START_MS) {
            fprintf(stderr, "fleetburn-simfleet: the coordinator did not listen on %s within "
                            "%d s; see %s\n", f->endpoint, S_COORD_START_MS / 1000, f->log_path);
            s_stop(f, EXIT_INFRA);
        }
        return;
    }
    if (f->phase != S_REGISTERING)
        return;
    f->registered = s_count_registered(f);
    uint64_t limit = 30000 + (uint64_t)f->cli->agents * 20;
    if (f->registered == f->cli->agents) {
        f->t_registered = now;
        s_read_coord_memory(f);
        f->coord_rss_registered_mb = f->coord_rss_mb;
        f->coord_cpu_registered_s = s_coord_cpu_s(f);
        fprintf(stderr, "%s%u agents registered in %.2f s\n", f->tty ? "\r\033[K" : "",
                f->cli->agents, (double)(now - f->t_agents) / 1000.0);
        f->phase = S_RUNNING;
        if (s_submit(f))
            s_stop(f, EXIT_INFRA);
    } else if (now - f->t_agents > limit) {
        fprintf(stderr, "\nfleetburn-simfleet: only %zu of %u agents registered within %.0f s; see "
                        "%s\n",
                f->registered, f->cli->agents, (double)limit / 1000.0, f->log_path);
        s_stop(f, EXIT_INFRA);
    } else if (now - f->last_print >= (f->tty ? 250u : 2000u)) {
        f->last_print = now;
        fprintf(stderr, "%sregistered %zu/%u agents%s", f->tty ? "\r\033[K" : "", f->registered,
                f->cli->agents, f->tty ? "" : "\n");
    }
}

static void s_on_signal(uv_signal_t *h, int signum)
{
    fleet_t *f = h->data;
    fprintf(stderr, "\nfleetburn-simfleet: interrupted (signal %d)\n", signum);
    s_stop(f, EXIT_INFRA);
}

/* ---- the end --------------------------------------------------------------------------------- */

static int s_write_report(fleet_t *f)
{
    store_t *store = NULL;
    char *err = NULL;
    if (store_open_existing(f->db, &store, &err)) {
        fprintf(stderr, "fleetburn-simfleet: cannot open %s: %s\n", f->db, err ? err : "?");
        free(err);
        return -EIO;
    }
    bool to_stdout = !strcmp(f->cli->report, "-");
    FILE *out = to_stdout ? stdout : fopen(f->cli->report, "w");
    int rc = out ? report_write_json(store, f->campaign_id, out) : -errno;
    if (out && !to_stdout && fclose(out) != 0 && rc == 0)
        rc = -EIO;
    if (rc)
        fprintf(stderr, "fleetburn-simfleet: cannot write the report to %s: %s\n", f->cli->report,
                strerror(-rc));
    store_destroy(&store);
    return rc;
}

/* Timings per stage from the coordinator's own records: stage start (before its tasks were
 * created) to the last result stored; and the simulated time the stage stands for. */
static void s_report_stages(fleet_t *f, FILE *stats)
{
    store_t *store = NULL;
    store_campaign_t *c = NULL;
    if (store_open_existing(f->db, &store, NULL) || store_campaign_load(store, f->campaign_id, &c)) {
        store_destroy(&store);
        return;
    }
    double sim_total = 0;
    for (size_t s = 0; s < c->n_stages; s++) {
        const store_stage_t *st = &c->stages[s];
        uint64_t last = 0;
        size_t results = 0;
        double sim_s = 0;
        for (size_t t = 0; t < st->n_tasks; t++)
            for (size_t r = 0; r < st->tasks[t].n_results; r++) {
                const store_result_t *res = &st->tasks[t].results[r];
                const fb_metric_t *m = fb_result_metric(res->result, "sim.duration_s");
                results++;
                if (res->received_ms > last)
                    last = res->received_ms;
                if (m && m->value > sim_s)
                    sim_s = m->value;
            }
        sim_total += sim_s;
        double stored_s = last && st->started_ms ? (double)(last - st->started_ms) / 1000.0 : -1;
        double stage_s = st->finished_ms && st->started_ms
                             ? (double)(st->finished_ms - st->started_ms) / 1000.0 : -1;
        fprintf(stderr, "stage %s: %zu tasks, %zu results, every result stored %.2f s after the "
                        "stage started (stage %.2f s); simulated %.0f s\n",
                st->name, st->n_tasks, results, stored_s, stage_s, sim_s);
        if (stats)
            fprintf(stats, "stage.%s.tasks=%zu\nstage.%s.results=%zu\nstage.%s.stored_s=%.3f\n"
                           "stage.%s.stage_s=%.3f\nstage.%s.sim_s=%.0f\n",
                    st->name, st->n_tasks, st->name, results, st->name, stored_s, st->name,
                    stage_s, st->name, sim_s);
    }
    fprintf(stderr, "simulated time of the campaign: %.0f s (the sum of its stages)\n", sim_total);
    if (stats)
        fprintf(stats, "sim_total_s=%.0f\n", sim_total);
    store_campaign_destroy(&c);
    store_destroy(&store);
}

static void s_summary(fleet_t *f)
{
    FILE *stats = f->cli->stats ? fopen(f->cli->stats, "w") : NULL;
    if (f->cli->stats && !stats)
        fprintf(stderr, "fleetburn-simfleet: cannot write %s: %s\n", f->cli->stats, strerror(errno));
    if (stats)
        fprintf(stats, "agents=%u\nregister_s=%.3f\n", f->cli->agents,
                (double)(f->t_registered - f->t_agents) / 1000.0);
    if (f->t_finished && f->t_submit) {
        fprintf(stderr, "campaign %s: %s after %.2f s\n", f->campaign_id,
                fb_verdict_name(f->verdict), (double)(f->t_finished - f->t_submit) / 1000.0);
        if (stats)
            fprintf(stats, "campaign_s=%.3f\nverdict=%s\n",
                    (double)(f->t_finished - f->t_submit) / 1000.0, fb_verdict_name(f->verdict));
    }
    if (f->campaign_id)
        s_report_stages(f, stats);
    if (f->coord_peak_mb > 0) {
        fprintf(stderr, "coordinator memory: %.1f MiB resident with every agent registered, %.1f "
                        "MiB at the end, %.1f MiB peak\n",
                f->coord_rss_registered_mb, f->coord_rss_mb, f->coord_peak_mb);
        fprintf(stderr, "coordinator CPU time: %.2f s until every agent registered, %.2f s in "
                        "all\n",
                f->coord_cpu_registered_s, f->coord_cpu_end_s);
        if (stats)
            fprintf(stats, "coordinator_registered_rss_mb=%.1f\ncoordinator_rss_mb=%.1f\n"
                           "coordinator_peak_rss_mb=%.1f\ncoordinator_cpu_register_s=%.2f\n"
                           "coordinator_cpu_total_s=%.2f\n",
                    f->coord_rss_registered_mb, f->coord_rss_mb, f->coord_peak_mb,
                    f->coord_cpu_registered_s, f->coord_cpu_end_s);
    }
    if (stats)
        fclose(stats);
}

static void s_close_if_open(uv_handle_t *h)
{
    if (h->loop && !uv_is_closing(h))
        uv_close(h, NULL);
}

/* Reads what only the live coordinator knows, writes the report, then takes everything down; the
 * loop ends once every handle (and the coordinator process) is gone. */
static void s_stop(fleet_t *f, int exit_code)
{
    if (f->phase == S_STOPPING)
        return;
    f->phase = S_STOPPING;
    f->exit_code = exit_code;
    if (f->coord_running) {
        s_read_coord_memory(f);
        f->coord_cpu_end_s = s_coord_cpu_s(f);
    }
    if (f->campaign_id && (exit_code == EXIT_PASS || exit_code == EXIT_FAILED) &&
        s_write_report(f))
        f->exit_code = EXIT_INFRA;
    for (unsigned i = 0; f->agents && i < f->cli->agents; i++)
        agent_destroy(&f->agents[i]);
    zsock_close(&f->client);
    s_close_if_open((uv_handle_t *)&f->poll);
    s_close_if_open((uv_handle_t *)&f->sigint);
    s_close_if_open((uv_handle_t *)&f->sigterm);
    if (f->coord_running)
        uv_process_kill(&f->coord, SIGTERM);
}

static void s_cleanup(fleet_t *f)
{
    if (f->zctx)
        zmq_ctx_term(f->zctx);
    simtask_exec_destroy(&f->exec);
    for (unsigned i = 0; f->inventories && i < f->cli->agents; i++)
        inventory_free(&f->inventories[i]);
    free(f->inventories);
    free(f->agents);
    for (unsigned i = 0; f->names && i < f->cli->agents; i++)
        free(f->names[i]);
    free(f->names);
    fb_faultmodel_destroy(&f->model);
    fb_topology_destroy(&f->topo);
    if (f->workdir[0]) {
        if (f->cli->keep || f->exit_code == EXIT_INFRA) {
            fprintf(stderr, "work directory kept: %s\n", f->workdir);
        } else {
            unlink(f->log_path);
            if (f->cli->curve)
                s_remove_keys(f);
            if (!f->cli->db) {
                unlink(f->db);
                char *wal = xasprintf("%s-wal", f->db), *shm = xasprintf("%s-shm", f->db);
                unlink(wal);
                unlink(shm);
                free(wal);
                free(shm);
            }
            rmdir(f->workdir);
        }
    }
    free(f->db);
    free(f->log_path);
    free(f->agent_key);
    free(f->operator_key);
    free(f->server_key);
    free(f->yaml);
    campaign_file_destroy(&f->campaign_file);
    free(f->campaign_id);
}

static int s_run(fleet_t *f)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(f->workdir, sizeof f->workdir, "%s/fleetburn-simfleet-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->workdir)) {
        fprintf(stderr, "fleetburn-simfleet: cannot create a work directory: %s\n", strerror(errno));
        f->workdir[0] = '\0';
        return EXIT_INFRA;
    }
    f->db = f->cli->db ? xstrdup(f->cli->db) : xasprintf("%s/fleetburn.db", f->workdir);
    f->log_path = xasprintf("%s/coordinator.log", f->workdir);
    int rc = s_raise_fd_limit(f->cli->agents);
    if (rc) {
        if (rc != -EMFILE)
            fprintf(stderr, "fleetburn-simfleet: cannot raise the file descriptor limit: %s\n",
                    strerror(-rc));
        return EXIT_INFRA;
    }
    if (f->cli->curve) {
        if (s_make_keys(f))
            return EXIT_INFRA;
        f->agent_key = s_work_path(f, "sim-agent");
        f->operator_key = s_work_path(f, "operator");
        f->server_key = s_work_path(f, "keys/coordinator.pub");
    }
    f->loop = uv_default_loop();
    f->t_start = fb_mono_ms();
    if (s_spawn_coordinator(f))
        return EXIT_INFRA;
    uv_timer_init(f->loop, &f->poll);
    f->poll.data = f;
    uv_timer_start(&f->poll, s_on_poll, S_POLL_MS, S_POLL_MS);
    uv_signal_init(f->loop, &f->sigint);
    uv_signal_init(f->loop, &f->sigterm);
    f->sigint.data = f->sigterm.data = f;
    uv_signal_start(&f->sigint, s_on_signal, SIGINT);
    uv_signal_start(&f->sigterm, s_on_signal, SIGTERM);
    uv_run(f->loop, UV_RUN_DEFAULT);
    uv_loop_close(f->loop);
    s_summary(f);
    return f->exit_code;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    cli_t cli;
    if (s_parse_cli(argc, argv, &cli)) {
        s_usage(stderr);
        return EXIT_USAGE;
    }
    fb_log_init("simfleet", cli.verbose ? FB_LOG_INFO : FB_LOG_WARN);
    fleet_t f = {0};
    f.cli = &cli;
    f.tty = isatty(STDERR_FILENO);
    f.verdict = FB_VERDICT_ERROR;
    int status = s_load_inputs(&f) ? EXIT_USAGE : s_run(&f);
    s_cleanup(&f);
    return status;
}
