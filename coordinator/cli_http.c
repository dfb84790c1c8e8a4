/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn serve --http ADDR [--http-token-file FILE]`: starts the HTTP listener
 * (http_serve.h) before the coordinator, so that a bad address or token is a usage error before
 * anything runs, then publishes the coordinator's health to it once a second from the loop (the
 * listener runs on its own thread and never touches the coordinator). */
#include "cli.h"
#include "http_serve.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* How often the loop publishes the coordinator's health for /metrics. */
#define S_PUBLISH_MS 1000

struct cli_http {
    http_serve_t *serve;
    uv_timer_t timer;
    bool timer_on;
    coord_t *coord;
};

cli_http_t *cli_http_start(const cli_t *cli, char *err, size_t errlen)
{
    char *token = NULL;
    if (!cli->http) {
        snprintf(err, errlen, "--http-token-file needs --http ADDR");
        return NULL;
    }
    if (!http_serve_supported()) {
        snprintf(err, errlen, "%s", HTTP_UNSUPPORTED);
        return NULL;
    }
    if (cli->http_token_file && http_token_load(cli->http_token_file, &token, err, errlen))
        return NULL;
    http_serve_options_t opts = {.addr = cli->http, .db_path = cli->db, .token = token};
    http_serve_t *serve = http_serve_start(&opts, err, errlen);
    if (token) {
        memset(token, 0, strlen(token));
        free(token);
    }
    if (!serve)
        return NULL;
    log_info("http: /metrics and the live view on http://%s/%s", http_serve_address(serve),
             cli->http_token_file ? " (bearer token required)" : "");
    cli_http_t *self = xcalloc(1, sizeof *self);
    self->serve = serve;
    return self;
}

static void s_publish(uv_timer_t *t)
{
    cli_http_t *self = t->data;
    coord_health_t health;
    coord_health(self->coord, &health);
    http_serve_publish(self->serve, &health);
}

void cli_http_attach(cli_http_t *self, uv_loop_t *loop, coord_t *coord)
{
    self->coord = coord;
    uv_timer_init(loop, &self->timer);
    self->timer.data = self;
    self->timer_on = true;
    s_publish(&self->timer);
    uv_timer_start(&self->timer, s_publish, S_PUBLISH_MS, S_PUBLISH_MS);
}

static void s_on_closed(uv_handle_t *h)
{
    free(h->data);
}

void cli_http_stop(cli_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cli_http_t *self = *self_p;
    *self_p = NULL;
    http_serve_stop(&self->serve);
    if (self->timer_on)
        uv_close((uv_handle_t *)&self->timer, s_on_closed); /* freed once the loop closes it */
    else
        free(self);
}
