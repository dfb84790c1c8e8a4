/* SPDX-License-Identifier: Apache-2.0 */
/* The command line of regressions (docs/regressions.md): `fleetburn compare BASE [CAMPAIGN]`,
 * `fleetburn baseline set|list|delete`, and `fleetburn run --baseline ID|latest|NAME`, which
 * checks its baseline before the campaign runs and compares once it has ended. They read the
 * timeline directly, like `report`: with `run --coordinator`, --db names the coordinator's
 * database. */
#include "cli.h"
#include "compare.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/campaign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_BASELINE_NAME_MAX 64

/* An argument from the command line, made printable for a message. */
static const char *s_shown(const char *text, char *buf, size_t len)
{
    fb_log_sanitize(text, buf, len);
    return buf;
}

static store_t *s_open(const char *db, const char *cmd)
{
    struct stat st;
    if (stat(db, &st) != 0) {
        fprintf(stderr, "fleetburn %s: no database at %s (use --db PATH)\n", cmd, db);
        return NULL;
    }
    store_t *store = NULL;
    char *err = NULL;
    if (store_open_existing(db, &store, &err)) {
        fprintf(stderr, "fleetburn %s: cannot open %s: %s\n", cmd, db, err ? err : "unknown error");
        free(err);
        return NULL;
    }
    return store;
}

/* A baseline name: letters, digits, '.', '_', '-'; not "latest", which stands for the previous
 * campaign of the same name. */
static bool s_valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > S_BASELINE_NAME_MAX || !strcmp(name, "latest"))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return false;
    return true;
}

/* What a baseline argument stands for: `latest` (the previous finished campaign named like
 * campaign_id), a campaign id, or a named baseline. 0 with *id_out, -ENOENT with a message in
 * *why (heap) when it names nothing, or the store's error. */
static int s_resolve(store_t *store, const char *db, const char *spec, const char *campaign_id,
                     char **id_out, char **why)
{
    *id_out = NULL;
    *why = NULL;
    char shown[160];
    s_shown(spec, shown, sizeof shown);
    if (!strcmp(spec, "latest")) {
        char *name = NULL;
        uint64_t started = 0;
        int rc = store_campaign_head(store, campaign_id, &name, NULL, &started);
        if (!rc)
            rc = store_campaign_previous(store, name ? name : "", started, campaign_id, id_out);
        if (rc == -ENOENT)
            *why = xasprintf("no finished campaign named '%s' started before %s in %s",
                             name ? name : "", campaign_id, db);
        free(name);
        return rc;
    }
    int rc = fb_wire_valid_id(spec) ? store_campaign_head(store, spec, NULL, NULL, NULL) : -ENOENT;
    if (rc == 0) {
        *id_out = xstrdup(spec);
        return 0;
    }
    if (rc == -ENOENT)
        rc = store_baseline_get(store, spec, id_out);
    if (rc == -ENOENT)
        *why = xasprintf("'%s' is neither a campaign id nor a baseline name in %s (`fleetburn "
                         "campaigns` and `fleetburn baseline list` list them)",
                         shown, db);
    return rc;
}

static int s_store_error(store_t *store, const char *cmd)
{
    fprintf(stderr, "fleetburn %s: %s\n", cmd, store_errmsg(store));
    return EXIT_INFRA;
}

/* Compares and prints; returns the exit status (0 no regression, 1 regression). */
static int s_compare_print(bool json, store_t *store, const char *base, const char *now,
                           const char *cmd)
{
    compare_t *c = NULL;
    char *error = NULL;
    int rc = compare_campaigns(store, base, now, &c, &error);
    if (rc) {
        fprintf(stderr, "fleetburn %s: %s\n", cmd, error ? error : strerror(-rc));
        free(error);
        return rc == -ENOENT ? EXIT_USAGE : EXIT_INFRA;
    }
    rc = json ? compare_write_json(c, stdout) : compare_write_text(c, stdout);
    int code = rc ? EXIT_INFRA : compare_has_regression(c) ? EXIT_FAILED : EXIT_PASS;
    compare_destroy(&c);
    return code;
}

int cli_compare(cli_t *cli)
{
    if (cli->baseline) {
        fprintf(stderr, "fleetburn compare: --baseline applies to run; compare takes the baseline "
                        "as its first argument\n");
        return EXIT_USAGE;
    }
    if (cli->n_positional < 1 || cli->n_positional > 2) {
        fprintf(stderr, "fleetburn compare: expected BASE [CAMPAIGN]: a baseline (a campaign id, "
                        "a baseline name or latest) and the campaign to compare with it (default: "
                        "the latest)\n");
        return EXIT_USAGE;
    }
    store_t *store = s_open(cli->db, "compare");
    if (!store)
        return EXIT_INFRA;
    char *now = NULL, *base = NULL, *why = NULL;
    int code = EXIT_USAGE;
    char shown[160];
    int rc = cli->n_positional == 2 ? 0 : store_latest_campaign(store, &now);
    if (cli->n_positional == 2) {
        rc = store_campaign_head(store, cli->positional[1], NULL, NULL, NULL);
        if (rc == 0)
            now = xstrdup(cli->positional[1]);
        else if (rc == -ENOENT)
            fprintf(stderr, "fleetburn compare: no campaign '%s' in %s\n",
                    s_shown(cli->positional[1], shown, sizeof shown), cli->db);
    } else if (rc == -ENOENT) {
        fprintf(stderr, "fleetburn compare: %s holds no campaign yet\n", cli->db);
    }
    if (!rc) {
        rc = s_resolve(store, cli->db, cli->positional[0], now, &base, &why);
        if (rc == -ENOENT)
            fprintf(stderr, "fleetburn compare: %s\n", why);
    }
    if (!rc)
        code = s_compare_print(!strcmp(cli->format, "json"), store, base, now, "compare");
    else if (rc != -ENOENT)
        code = s_store_error(store, "compare");
    free(now);
    free(base);
    free(why);
    store_destroy(&store);
    return code;
}

/* --- baseline set | list | delete ----------------------------------------------------------- */

static int s_list_cb(const store_baseline_t *b, void *arg)
{
    FILE *out = arg;
    char set[40], started[40];
    fprintf(out, "%-20s  %-22s  %-20s  %-24s  %s\n", b->name, b->campaign_id,
            b->campaign_name ? b->campaign_name : "-",
            b->campaign_started_ms ? fb_iso8601(b->campaign_started_ms, started, sizeof started)
                                   : "-",
            fb_iso8601(b->set_ms, set, sizeof set));
    return 0;
}

static int s_baseline_set(cli_t *cli, store_t *store)
{
    const char *name = cli->positional[1], *id = cli->positional[2];
    char shown[160], shown_id[160];
    s_shown(name, shown, sizeof shown);
    s_shown(id, shown_id, sizeof shown_id);
    if (!s_valid_name(name)) {
        fprintf(stderr,
                "fleetburn baseline set: '%s' is not a baseline name; expected 1-64 "
                "letters, digits, '.', '_' or '-', and not 'latest'\n",
                shown);
        return EXIT_USAGE;
    }
    char *state = NULL;
    int rc = store_campaign_head(store, name, NULL, NULL, NULL);
    if (rc == 0) {
        fprintf(stderr,
                "fleetburn baseline set: '%s' is a campaign id; a baseline name must be "
                "another word\n",
                shown);
        return EXIT_USAGE;
    }
    rc = fb_wire_valid_id(id) ? store_campaign_head(store, id, NULL, &state, NULL) : -ENOENT;
    if (rc == -ENOENT) {
        fprintf(stderr, "fleetburn baseline set: no campaign '%s' in %s (`fleetburn campaigns`)\n",
                shown_id, cli->db);
        return EXIT_USAGE;
    }
    if (rc)
        return s_store_error(store, "baseline set");
    if (!state || strcmp(state, "finished")) {
        fprintf(stderr,
                "fleetburn baseline set: campaign %s is %s; a baseline must be a "
                "finished campaign\n",
                shown_id, state ? state : "in no state");
        free(state);
        return EXIT_USAGE;
    }
    free(state);
    char *previous = NULL;
    if (store_baseline_set(store, name, id, fb_now_ms(), &previous))
        return s_store_error(store, "baseline set");
    if (previous && strcmp(previous, id))
        printf("baseline %s: campaign %s (was %s)\n", shown, shown_id, previous);
    else
        printf("baseline %s: campaign %s\n", shown, shown_id);
    free(previous);
    return EXIT_PASS;
}

int cli_baseline(cli_t *cli)
{
    const char *sub = cli->n_positional ? cli->positional[0] : "";
    size_t want = !strcmp(sub, "set")      ? 3
                  : !strcmp(sub, "delete") ? 2
                  : !strcmp(sub, "list")   ? 1
                                           : 0;
    if (!want || cli->n_positional != want) {
        fprintf(stderr, "fleetburn baseline: expected `baseline set NAME CAMPAIGN_ID`, "
                        "`baseline list` or `baseline delete NAME`\n");
        return EXIT_USAGE;
    }
    store_t *store = s_open(cli->db, "baseline");
    if (!store)
        return EXIT_INFRA;
    int code = EXIT_PASS;
    if (want == 3) {
        code = s_baseline_set(cli, store);
    } else if (want == 2) {
        char shown[160];
        int rc = store_baseline_delete(store, cli->positional[1]);
        if (rc == -ENOENT) {
            fprintf(stderr, "fleetburn baseline delete: no baseline '%s' in %s\n",
                    s_shown(cli->positional[1], shown, sizeof shown), cli->db);
            code = EXIT_USAGE;
        } else if (rc) {
            code = s_store_error(store, "baseline delete");
        }
    } else {
        printf("%-20s  %-22s  %-20s  %-24s  %s\n", "NAME", "CAMPAIGN", "CAMPAIGN NAME", "STARTED",
               "SET");
        if (store_baseline_foreach(store, s_list_cb, stdout))
            code = s_store_error(store, "baseline list");
    }
    store_destroy(&store);
    return code;
}

/* --- run --baseline ------------------------------------------------------------------------- */

int cli_baseline_check(cli_t *cli, const fb_campaign_t *campaign)
{
    const char *spec = cli->baseline;
    char shown[160];
    s_shown(spec, shown, sizeof shown);
    struct stat st;
    if (stat(cli->db, &st) != 0) {
        if (cli->coordinator) {
            fprintf(stderr,
                    "fleetburn run: --baseline with --coordinator compares in the "
                    "coordinator's database: give its path with --db (no database at "
                    "%s)\n",
                    cli->db);
            return EXIT_USAGE;
        }
        if (strcmp(spec, "latest")) {
            fprintf(stderr,
                    "fleetburn run: --baseline %s: no database at %s yet, so no campaign "
                    "or baseline of that name\n",
                    shown, cli->db);
            return EXIT_USAGE;
        }
        fprintf(stderr,
                "fleetburn run: --baseline latest: %s is new; nothing to compare with "
                "this time\n",
                cli->db);
        return 0;
    }
    store_t *store = s_open(cli->db, "run");
    if (!store)
        return EXIT_INFRA;
    int code = 0;
    char *id = NULL, *why = NULL;
    int rc = 0;
    if (!strcmp(spec, "latest")) {
        rc = store_campaign_previous(store, campaign->name, UINT64_MAX, NULL, &id);
        if (rc == -ENOENT)
            fprintf(stderr,
                    "fleetburn run: --baseline latest: no finished campaign named '%s' "
                    "in %s yet; nothing to compare with this time\n",
                    campaign->name, cli->db);
    } else {
        rc = s_resolve(store, cli->db, spec, NULL, &id, &why);
        if (rc == -ENOENT) {
            fprintf(stderr, "fleetburn run: --baseline: %s\n", why);
            code = EXIT_USAGE;
        }
    }
    if (rc && rc != -ENOENT)
        code = s_store_error(store, "run");
    free(id);
    free(why);
    store_destroy(&store);
    return code;
}

int cli_compare_after_run(cli_t *cli, store_t *store, const char *campaign_id, int run_code)
{
    if (!cli->baseline || !campaign_id || (run_code != EXIT_PASS && run_code != EXIT_FAILED))
        return run_code;
    store_t *own = NULL;
    if (!store && !(store = own = s_open(cli->db, "run")))
        return EXIT_INFRA;
    char *base = NULL, *why = NULL;
    int code = run_code;
    int rc = s_resolve(store, cli->db, cli->baseline, campaign_id, &base, &why);
    char shown[160];
    s_shown(cli->baseline, shown, sizeof shown);
    if (rc == -ENOENT) {
        printf("\nbaseline %s: %s; nothing to compare\n", shown, why);
    } else if (rc) {
        code = s_store_error(store, "run");
    } else {
        printf("\ncomparison with the baseline (%s = %s):\n", shown, base);
        fflush(stdout);
        int verdict = s_compare_print(false, store, base, campaign_id, "run");
        code = verdict == EXIT_FAILED ? EXIT_FAILED : verdict == EXIT_PASS ? run_code : verdict;
    }
    free(base);
    free(why);
    store_destroy(&own);
    return code;
}
