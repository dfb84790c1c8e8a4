/* SPDX-License-Identifier: Apache-2.0 */
/* A submitted campaign on the coordinator's side (coord_campaign_from_submit): the files a
 * campaign names are taken from the submission's attachments only. A hand-made Submit naming
 * /etc/shadow, or a FIFO that would block any reader, without attaching it is refused at once
 * and nothing is read; a Submit made by the client (campaign_file_encode_submit) carries every
 * file its campaign names and resolves through the wire; and an attached file that is not a
 * topology gets an error that quotes none of its lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "campaign_file.h"
#include "coord.h"
#include "common/util.h"
#include "common/wire.h"
#include "scheduler/campaign.h"
#include "scheduler/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char s_stage[] = "name: x\nstages:\n  - name: net\n    workload: netbw\n"
                              "    scope: pairs\n    pairing: topology\n";

/* A Submit as a peer could hand-craft it: the campaign text and the given attachments. */
static int s_submit(const char *yaml, Fleetburn__AttachedFile **files, size_t n,
                    fb_campaign_t **out, char **err)
{
    Fleetburn__Submit m = FLEETBURN__SUBMIT__INIT;
    m.campaign_yaml = (char *)yaml;
    m.source = "remote.yaml";
    m.files = files;
    m.n_files = n;
    return coord_campaign_from_submit(&m, out, err);
}

static void test_names_without_attachment(void **state)
{
    (void)state;
    char dir[] = "/tmp/fbsubmit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *fifo = xasprintf("%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *paths[] = {"/etc/shadow", fifo, "/dev/zero", "fabric.topo"};
    for (size_t i = 0; i < 4; i++) {
        char *yaml = xasprintf("%s    topology: %s\n", s_stage, paths[i]);
        fb_campaign_t *c = (fb_campaign_t *)1;
        char *err = NULL;
        double t0 = fb_mono_s();
        /* Opening the FIFO would block here for ever: returning is the proof nothing was. */
        assert_int_equal(s_submit(yaml, NULL, 0, &c, &err), -EINVAL);
        assert_true(fb_mono_s() - t0 < 5.0);
        assert_null(c);
        char shown[256];
        char *want = xasprintf("remote.yaml:7: stages[0].topology: '%s' was not attached to the "
                               "campaign; expected the topology file's content with it "
                               "(fleetburn run sends the files a campaign names; the "
                               "coordinator opens no path it is sent)",
                               fb_show_value(paths[i], shown, sizeof shown));
        assert_string_equal(err, want);
        free(want);
        free(err);
        free(yaml);
    }
    unlink(fifo);
    rmdir(dir);
    free(fifo);
}

static void test_attached_content(void **state)
{
    (void)state;
    char *yaml = xasprintf("%s    topology: /etc/shadow\n", s_stage);
    /* Whatever the name says, the content is what was attached. */
    Fleetburn__AttachedFile good = FLEETBURN__ATTACHED_FILE__INIT, *goodp = &good;
    good.name = "/etc/shadow";
    const char *fabric = "leaf01: n[1-2]\nleaf02: n[3-4]\nspine01: leaf[01-02]\n";
    good.content.data = (uint8_t *)fabric;
    good.content.len = strlen(fabric);
    fb_campaign_t *c = NULL;
    char *err = NULL;
    assert_int_equal(s_submit(yaml, &goodp, 1, &c, &err), 0);
    assert_null(err);
    assert_int_equal(fb_topology_n_nodes(c->stages[0].topology), 4);
    fb_campaign_destroy(&c);

    /* A shadow-like file attached (a client that could read it sent it): the error quotes a
     * character of it, none of its lines. */
    const char *secret = "root:$6$saltsalt$hashhashhash:20228:0:99999:7:::\n"
                         "daemon:*:20228:0:99999:7:::\n";
    good.content.data = (uint8_t *)secret;
    good.content.len = strlen(secret);
    assert_int_equal(s_submit(yaml, &goodp, 1, &c, &err), -EINVAL);
    assert_string_equal(err, "remote.yaml:7: stages[0].topology: cannot load '/etc/shadow': line "
                             "1: root: a member holds the character '$'; expected node names in "
                             "hostlist notation (letters, digits, '.', '_', '-', ',', '[', ']'); "
                             "expected a topology file (lines 'leaf01: node[01-04]') or "
                             "ibnetdiscover output");
    free(err);

    /* An attachment the campaign does not name. */
    Fleetburn__AttachedFile extra = FLEETBURN__ATTACHED_FILE__INIT;
    extra.name = "/etc/passwd";
    Fleetburn__AttachedFile *two[] = {&good, &extra};
    good.content.data = (uint8_t *)fabric;
    good.content.len = strlen(fabric);
    assert_int_equal(s_submit(yaml, two, 2, &c, &err), -EINVAL);
    assert_non_null(strstr(err, "'/etc/passwd' is attached but the campaign does not name it"));
    free(err);
    free(yaml);

    /* A megabyte of nesting sent straight to the coordinator: refused at once, on its loop. */
    char *nested = xmalloc(1000004);
    memcpy(nested, "a: ", 3);
    memset(nested + 3, '[', 500000);
    memset(nested + 500003, ']', 500000);
    nested[1000003] = '\0';
    double t0 = fb_mono_s();
    assert_int_equal(s_submit(nested, NULL, 0, &c, &err), -EINVAL);
    assert_true(fb_mono_s() - t0 < 5.0);
    assert_string_equal(err, "remote.yaml:1: YAML nesting: mappings and lists nested more than 32 "
                             "levels deep; expected a campaign file of a few levels");
    free(err);
    free(nested);

    /* A campaign that does not parse is refused before any file is looked at. */
    assert_int_equal(s_submit("name: [", NULL, 0, &c, &err), -EINVAL);
    assert_true(!strncmp(err, "remote.yaml:", 12) && strstr(err, ": YAML syntax error: "));
    free(err);
}

/* What `fleetburn run --coordinator` sends: the campaign read from disk with its files, through
 * the wire's encoding and validation, resolves on the coordinator's side. */
static void test_client_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/fbsubmit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *campaign = xasprintf("%s/c.yaml", dir), *topo = xasprintf("%s/fabric.topo", dir);
    FILE *f = fopen(topo, "w");
    fputs("leaf01: n[1-2]\nleaf02: n[3-4]\nspine01: leaf[01-02]\n", f);
    fclose(f);
    f = fopen(campaign, "w");
    fprintf(f, "%s    topology: fabric.topo\n", s_stage);
    fclose(f);
    campaign_file_t *cf = NULL;
    char *err = NULL;
    assert_int_equal(campaign_file_read(campaign, &cf, &err), 0);
    assert_int_equal(campaign_file_check_submission(cf, &err), 0);
    size_t len = 0;
    uint8_t *buf = campaign_file_encode_submit(cf, &len);
    Fleetburn__Envelope *env = NULL;
    char werr[256];
    assert_int_equal(fb_wire_decode(buf, len, &env, werr, sizeof werr), 0);
    assert_int_equal(env->submit->n_files, 1);
    assert_string_equal(env->submit->files[0]->name, "fabric.topo");
    assert_string_equal(env->submit->source, campaign);
    fb_campaign_t *c = NULL;
    assert_int_equal(coord_campaign_from_submit(env->submit, &c, &err), 0);
    assert_int_equal(fb_topology_n_nodes(c->stages[0].topology), 4);
    fb_campaign_destroy(&c);
    fb_wire_free(&env);
    free(buf);

    /* A file too large for a submission is said so by the client. */
    free((char *)cf->files[0].content);
    cf->files[0].len = FB_WIRE_MAX_YAML + 1;
    cf->files[0].content = xcalloc(cf->files[0].len, 1);
    assert_int_equal(campaign_file_check_submission(cf, &err), -EFBIG);
    assert_non_null(strstr(err, "the file fabric.topo is 1048577 bytes; expected at most 1048576"));
    free(err);
    campaign_file_destroy(&cf);
    unlink(topo);
    unlink(campaign);
    rmdir(dir);
    free(topo);
    free(campaign);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_without_attachment),
        cmocka_unit_test(test_attached_content),
        cmocka_unit_test(test_client_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
