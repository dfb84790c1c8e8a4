/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-simfleet's state, shared by its files: simfleet_main.c (options, phases, the end),
 * simfleet_fleet.c (the fabric, the fault model and the pool of simulated agents),
 * simfleet_coord.c (the coordinator process: keys, start, its memory and CPU) and
 * simfleet_campaign.c (the campaign through the wire, the report and the timings). Nothing
 * outside sim/simfleet*.c includes this. */
#ifndef FB_SIMFLEET_H
#define FB_SIMFLEET_H

#include "sim/faultmodel.h"
#include "sim/simtask.h"
#include "agent/agent.h"
#include "coordinator/campaign_file.h"
#include "common/result.h"
#include "common/zsock.h"
#include "scheduler/routes.h"
#include "scheduler/topology.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define EXIT_PASS 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INFRA 3
#define SIMFLEET_MAX_AGENTS 65536
#define SIMFLEET_LEAF_SIZE 32 /* nodes per leaf of the fabric made up when no topology is given */
#define SIMFLEET_SPINES 4
#define SIMFLEET_MAX_RELAYS 256
#define SIMFLEET_TICK_MS 250 /* agents' timer and socket checks (a real agent's: 100 ms) */

typedef struct {
    unsigned agents;
    const char *topology, *routes, *faults, *campaign, *db, *report, *stats;
    bool has_seed;
    uint64_t seed;
    uint32_t delay_min_ms, delay_max_ms;
    uint32_t heartbeat_ms, liveness, tick_ms;
    bool keep, verbose;
    bool curve; /* keys for everyone: the coordinator, one shared key for sim-*, an operator */
    /* Joining an external coordinator (--coordinator) instead of starting one: several
     * processes make one fleet of `fleet` agents, this one runs agents first .. first+agents-1;
     * keys are files (--key for the agents, --operator-key for the submission, --server-key the
     * coordinator's public key); --no-submit runs agents only, until a signal. */
    const char *coordinator, *key, *server_key, *operator_key;
    unsigned first, fleet; /* fleet: 0 until parsed, then first + agents by default */
    bool no_submit;
    int coordinator_pid;     /* --coordinator-pid: whose /proc to read for memory and CPU */
    unsigned connect_window; /* at most this many agents waiting for Welcome; 0: no limit */
    /* --relay: the agents connect to these relays in equal contiguous shares (agent i of this
     * process to relay i * n_relays / agents); --relay-key: each relay's public key */
    const char *relays[SIMFLEET_MAX_RELAYS], *relay_keys[SIMFLEET_MAX_RELAYS];
    unsigned n_relays, n_relay_keys;
} simfleet_cli_t;

/* Starting (a spawned coordinator until it listens), registering (this process's agents until
 * welcomed), waiting (a submitting process joined to an external coordinator, until it counts
 * the whole fleet), running (the campaign), serving (--no-submit: agents until a signal). */
typedef enum {
    S_STARTING,
    S_REGISTERING,
    S_WAITING,
    S_RUNNING,
    S_SERVING,
    S_STOPPING
} simfleet_phase_t;

typedef struct {
    uv_loop_t *loop;
    const simfleet_cli_t *cli;
    simfleet_phase_t phase;
    int exit_code;
    char workdir[256];
    char *db, *log_path, *yaml;
    char endpoint[256];
    int port;
    /* the coordinator process: spawned (coord, coord_running), or external (coord_pid from
     * --coordinator-pid, 0 when unknown) */
    uv_process_t coord;
    bool coord_running;
    int coord_pid;
    struct sqlite3 *fleet_db;         /* --coordinator: its database, read-only, to count agents */
    struct sqlite3_stmt *fleet_count; /* alive agents among this fleet's names */
    /* the fleet */
    fb_topology_t *topo;
    fb_routes_t *routes; /* --routes: how the simulated fabric routes flows, or NULL */
    fb_faultmodel_t *model;
    simtask_exec_t *exec;
    void *zctx;
    char **names; /* the whole fleet's, cli->fleet; this process runs names[first ...] */
    Fleetburn__Inventory **inventories;
    agent_t **agents;
    unsigned started; /* agents[0 .. started) exist */
    fb_zsock_t *client;
    uv_timer_t poll;
    uv_signal_t sigint, sigterm;
    /* what happened, monotonic ms; and in epoch ms, to line up with other processes */
    uint64_t t_start, t_agents, t_registered, t_fleet, t_submit, t_finished, last_print;
    uint64_t t_counted; /* the fleet's last count in the database */
    uint64_t unix_agents, unix_registered, unix_fleet;
    size_t registered, fleet_registered;
    char *campaign_id;
    fb_verdict_t verdict;
    double coord_rss_mb, coord_peak_mb, coord_rss_registered_mb;
    double coord_cpu_registered_s, coord_cpu_end_s; /* user + system */
    bool tty;
    char *agent_key, *operator_key, *server_key; /* --curve: paths in the work directory */
    fb_key_t agent_keys, server_public; /* loaded once from agent_key and server_key */
    fb_key_t *relay_public;             /* --relay-key, loaded once */
    campaign_file_t *campaign_file; /* the campaign and the files it names, as submitted */
} fleet_t;

/* simfleet_main.c */
/* Reads what only the live coordinator knows, writes the report, then takes everything down; the
 * loop ends once every handle (and the coordinator process) is gone. Only the first call counts. */
void simfleet_stop(fleet_t *f, int exit_code);

/* simfleet_fleet.c */
/* The campaign, the fault file and the fabric, checked against each other. 0, or -EINVAL after
 * a message on stderr. */
int simfleet_load_inputs(fleet_t *f);
/* Raises RLIMIT_NOFILE for this many agents (the coordinator started from here inherits it). */
int simfleet_raise_fd_limit(unsigned agents);
/* This process's agent i (0 .. agents-1): its name. */
const char *simfleet_agent_name(const fleet_t *f, unsigned i);
/* Starts the agents against f->endpoint on f->loop: all of them, or with --connect-window the
 * first window of them. */
int simfleet_start_agents(fleet_t *f);
/* --connect-window: starts more agents so that at most the window of them wait for their Welcome
 * (registered: how many of those started are registered). */
int simfleet_start_more(fleet_t *f, size_t registered);
size_t simfleet_count_registered(const fleet_t *f);
/* Frees the fleet's agents' inputs (names, inventories, fabric, model) after the loop ended. */
void simfleet_free_fleet(fleet_t *f);

/* simfleet_coord.c */
char *simfleet_work_path(const fleet_t *f, const char *name);
/* --curve: the key directory of a keyed coordinator, the agent and operator keys. */
int simfleet_make_keys(fleet_t *f);
void simfleet_remove_keys(const fleet_t *f);
/* Starts `fleetburn serve` on a free loopback port (f->port, f->endpoint). */
int simfleet_spawn_coordinator(fleet_t *f);
/* Whether something listens on the loopback port. */
bool simfleet_port_open(int port);
/* CPU time (user + system) the coordinator has used, seconds. */
double simfleet_coord_cpu_s(const fleet_t *f);
/* Resident and peak resident memory of the coordinator, MiB, into f. */
void simfleet_read_coord_memory(fleet_t *f);

/* The pid of the coordinator whose /proc is read (spawned or --coordinator-pid), 0 if none. */
int simfleet_coord_pid(const fleet_t *f);

/* simfleet_campaign.c */
/* --coordinator: how many of the fleet's names the coordinator's database lists alive (its own
 * record of registered agents, as `fleetburn nodes` shows them), or -errno. Opens the database
 * read-only on the first call. */
int simfleet_count_fleet(fleet_t *f, size_t *alive);
/* Closes what simfleet_count_fleet opened. */
void simfleet_close_fleet_db(fleet_t *f);
/* Submits the campaign through the wire like `fleetburn run --coordinator` and follows its
 * progress; simfleet_stop when it finishes or is refused. */
int simfleet_submit(fleet_t *f);
/* The JSON report of f->campaign_id, read from the coordinator's store. */
int simfleet_write_report(fleet_t *f);
/* Timings, memory and CPU on stderr and into --stats (rewritten at each call). */
void simfleet_summary(fleet_t *f);

#endif
