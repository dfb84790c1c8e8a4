/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a campaign and the files it names from disk (campaign_file.h). This is the edge where
 * paths written in a campaign are opened, on the machine of the user who runs it and with that
 * user's rights; past this point the files travel as content. */
#include "campaign_file.h"

#include "common/fileload.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The directory part of path ("." when it has none), heap. */
static char *s_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup(".");
    return slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
}

/* Reads the file a campaign names as name, relative to dir. */
static int s_read_named(campaign_file_t *cf, const char *dir, const char *name, char **error_out)
{
    const fb_campaign_t *c = cf->campaign;
    char *path = name[0] == '/' ? xstrdup(name) : xasprintf("%s/%s", dir, name);
    char *text = NULL, *why = NULL;
    size_t len = 0;
    int rc = fb_load_file(path, CAMPAIGN_FILE_MAX_ATTACHED, &text, &len, &why);
    free(path);
    if (rc) {
        /* the first stage that names it, for the message's line and key path */
        size_t i = 0;
        while (i + 1 < c->n_stages &&
               !(c->stages[i].topology_path && !strcmp(c->stages[i].topology_path, name)))
            i++;
        if (error_out) {
            char shown[256];
            *error_out = xasprintf("%s:%d: stages[%zu].topology: cannot load %s: %s; expected a "
                                   "topology file (lines 'leaf01: node[01-04]') or ibnetdiscover "
                                   "output",
                                   c->source, c->stages[i].topology_line, i,
                                   fb_show_value(name, shown, sizeof shown), why);
            for (char *p = *error_out; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                    *p = '?';
        }
        free(why);
        return rc;
    }
    cf->files = xrealloc(cf->files, (cf->n_files + 1) * sizeof *cf->files);
    cf->files[cf->n_files++] = (fb_campaign_file_t){xstrdup(name), text, len};
    return 0;
}

int campaign_file_read(const char *path, campaign_file_t **out, char **error_out)
{
    *out = NULL;
    if (error_out)
        *error_out = NULL;
    campaign_file_t *cf = xcalloc(1, sizeof *cf);
    cf->path = xstrdup(path);
    char *why = NULL;
    int rc = fb_load_file(path, FB_CAMPAIGN_MAX_BYTES, &cf->yaml, &cf->len, &why);
    if (rc) {
        if (error_out)
            *error_out = xasprintf("%s; expected a campaign file", why);
        free(why);
        campaign_file_destroy(&cf);
        return rc;
    }
    rc = fb_campaign_parse(cf->yaml, cf->len, path, &cf->campaign, error_out);
    if (rc == 0) {
        size_t n = fb_campaign_file_names(cf->campaign, NULL, 0);
        const char **names = xcalloc(n ? n : 1, sizeof *names);
        fb_campaign_file_names(cf->campaign, names, n);
        char *dir = s_dirname(path);
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = s_read_named(cf, dir, names[i], error_out);
        free(dir);
        free(names);
    }
    if (rc == 0)
        rc = fb_campaign_attach_files(cf->campaign, cf->files, cf->n_files, error_out);
    if (rc) {
        campaign_file_destroy(&cf);
        return rc;
    }
    *out = cf;
    return 0;
}

void campaign_file_destroy(campaign_file_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    campaign_file_t *cf = *self_p;
    for (size_t i = 0; i < cf->n_files; i++) {
        free((char *)cf->files[i].name);
        free((char *)cf->files[i].content);
    }
    free(cf->files);
    fb_campaign_destroy(&cf->campaign);
    free(cf->yaml);
    free(cf->path);
    free(cf);
    *self_p = NULL;
}

int campaign_file_check_submission(const campaign_file_t *cf, char **error_out)
{
    char shown[256];
    char *why = NULL;
    size_t total = cf->len;
    if (cf->len > FB_WIRE_MAX_YAML)
        why = xasprintf("%s: %zu bytes; expected at most %u in a campaign sent to a coordinator",
                        cf->path, cf->len, FB_WIRE_MAX_YAML);
    for (size_t i = 0; !why && i < cf->n_files; i++) {
        total += cf->files[i].len + strlen(cf->files[i].name);
        if (cf->files[i].len > FB_WIRE_MAX_YAML)
            why = xasprintf("%s: the file %s is %zu bytes; expected at most %u in each file a "
                            "campaign sent to a coordinator names",
                            cf->path, fb_show_value(cf->files[i].name, shown, sizeof shown),
                            cf->files[i].len, FB_WIRE_MAX_YAML);
    }
    if (!why && (cf->n_files > FB_WIRE_MAX_FILES || total + 65536 > FB_WIRE_MAX_FRAME))
        why = xasprintf("%s: names %zu files, %zu bytes with the campaign; expected at most %d "
                        "files and %u bytes in a campaign sent to a coordinator",
                        cf->path, cf->n_files, total, FB_WIRE_MAX_FILES,
                        FB_WIRE_MAX_FRAME - 65536);
    if (!why)
        return 0;
    if (error_out)
        *error_out = why;
    else
        free(why);
    return -EFBIG;
}

uint8_t *campaign_file_encode_submit(const campaign_file_t *cf, size_t *len_out)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Submit submit = FLEETBURN__SUBMIT__INIT;
    submit.campaign_yaml = cf->yaml;
    submit.source = cf->path;
    size_t n = cf->n_files;
    Fleetburn__AttachedFile *files = xcalloc(n ? n : 1, sizeof *files);
    Fleetburn__AttachedFile **ptrs = xcalloc(n ? n : 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        fleetburn__attached_file__init(&files[i]);
        files[i].name = (char *)cf->files[i].name;
        files[i].content.data = (uint8_t *)cf->files[i].content;
        files[i].content.len = cf->files[i].len;
        ptrs[i] = &files[i];
    }
    submit.files = ptrs;
    submit.n_files = n;
    env.body_case = FLEETBURN__ENVELOPE__BODY_SUBMIT;
    env.submit = &submit;
    uint8_t *buf = fb_wire_encode(&env, len_out);
    free(ptrs);
    free(files);
    return buf;
}
