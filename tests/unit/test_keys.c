/* SPDX-License-Identifier: Apache-2.0 */
/* Key files: generation, never overwriting, the checks on load (a secret key readable by others,
 * a public file holding a secret, a secret that does not match its public key), the parser on
 * hostile text, which endpoints count as reachable only from this host, and keys loaded once
 * and applied to many sockets (fleetburn-simfleet) making a real CURVE handshake. */
#include "common/keys.h"
#include "common/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

static char s_dir[64];

static int s_setup(void **state)
{
    (void)state;
    strcpy(s_dir, "/tmp/fb-test-keys-XXXXXX");
    return mkdtemp(s_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", s_dir);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void s_write(const char *path, const char *text, unsigned mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void test_generate_write_load(void **state)
{
    (void)state;
    fb_key_t key, loaded;
    char err[256];
    assert_int_equal(fb_key_generate(&key), 0);
    assert_true(fb_key_valid_z85(key.public_key));
    char *path = xasprintf("%s/node1", s_dir), *pub = xasprintf("%s/node1.pub", s_dir);
    assert_int_equal(fb_key_write(path, &key, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(fb_key_load_secret(path, &loaded, err, sizeof err), 0);
    assert_string_equal(loaded.secret_key, key.secret_key);
    assert_string_equal(loaded.public_key, key.public_key);
    char *nodes = (char *)1;
    assert_int_equal(fb_key_load_public(pub, &loaded, &nodes, err, sizeof err), 0);
    assert_string_equal(loaded.public_key, key.public_key);
    assert_string_equal(loaded.secret_key, "");
    assert_null(nodes);

    /* never overwrites, and says which file is in the way */
    fb_key_t other;
    fb_key_generate(&other);
    assert_int_equal(fb_key_write(path, &other, err, sizeof err), -EEXIST);
    assert_non_null(strstr(err, "never overwritten"));
    assert_int_equal(fb_key_load_secret(path, &loaded, err, sizeof err), 0);
    assert_string_equal(loaded.secret_key, key.secret_key);
    unlink(path); /* PATH.pub alone still blocks a new pair */
    assert_int_equal(fb_key_write(path, &other, err, sizeof err), -EEXIST);
    assert_non_null(strstr(err, "node1.pub"));
    free(path);
    free(pub);
}

static void test_load_refusals(void **state)
{
    (void)state;
    fb_key_t key, loaded;
    char err[256];
    fb_key_generate(&key);
    char *text = xasprintf("public-key: %s\nsecret-key: %s\n", key.public_key, key.secret_key);
    char *path = xasprintf("%s/loose", s_dir);
    s_write(path, text, 0644);
    assert_int_equal(fb_key_load_secret(path, &loaded, err, sizeof err), -EPERM);
    assert_non_null(strstr(err, "chmod 600"));
    /* a public key file that holds the secret too is refused */
    assert_int_equal(fb_key_load_public(path, &loaded, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "holds a secret key"));
    /* the .pub file given as a secret key */
    char *pubtext = xasprintf("public-key: %s\n", key.public_key);
    s_write(path, pubtext, 0600);
    assert_int_equal(fb_key_load_secret(path, &loaded, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "no secret-key"));
    /* not a regular file */
    assert_true(fb_key_load_public("/dev/zero", &loaded, NULL, err, sizeof err) < 0);
    assert_non_null(strstr(err, "not a regular file"));
    assert_true(fb_key_load_public(s_dir, &loaded, NULL, err, sizeof err) < 0);
    free(pubtext);
    free(text);
    free(path);
}

static void test_parse(void **state)
{
    (void)state;
    fb_key_t a, b, k;
    char err[256], *nodes = NULL;
    fb_key_generate(&a);
    fb_key_generate(&b);
    char *text = xasprintf("# shared image key\n  public-key = %s  \r\nnodes: gpu[001-128]\n\n",
                           a.public_key);
    assert_int_equal(fb_key_parse(text, strlen(text), &k, &nodes, err, sizeof err), 0);
    assert_string_equal(k.public_key, a.public_key);
    assert_string_equal(nodes, "gpu[001-128]");
    free(nodes);
    free(text);

    /* a secret key of another pair */
    text = xasprintf("public-key: %s\nsecret-key: %s\n", a.public_key, b.secret_key);
    assert_int_equal(fb_key_parse(text, strlen(text), &k, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "does not belong"));
    assert_string_equal(k.public_key, ""); /* nothing half-loaded */
    free(text);

    static const char *bad[] = {
        "",                    /* no public key */
        "public-key: short\n", /* not 40 characters */
        "public-key: 0123456789012345678901234567890123456789x\n",
        "public-key: "
        "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\n",
        "colour: blue\n", /* unknown name */
        "no separator here\n",
        "nodes:\n", /* empty nodes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nodes = NULL;
        assert_int_equal(fb_key_parse(bad[i], strlen(bad[i]), &k, &nodes, err, sizeof err),
                         -EINVAL);
        assert_null(nodes);
        assert_true(err[0] != '\0');
    }
    /* a NUL byte inside a line, and two public keys */
    char withnul[] = "public-key: abc\0def\n";
    assert_int_equal(fb_key_parse(withnul, sizeof withnul - 1, &k, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "NUL"));
    text = xasprintf("public-key: %s\npublic-key: %s\n", a.public_key, b.public_key);
    assert_int_equal(fb_key_parse(text, strlen(text), &k, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "line 2"));
    free(text);
}

static void test_endpoint_is_local(void **state)
{
    (void)state;
    assert_true(fb_endpoint_is_local("tcp://127.0.0.1:7755"));
    assert_true(fb_endpoint_is_local("tcp://127.1.2.3:*"));
    assert_true(fb_endpoint_is_local("tcp://localhost:7755"));
    assert_true(fb_endpoint_is_local("tcp://[::1]:7755"));
    assert_true(fb_endpoint_is_local("ipc:///run/fleetburn.sock"));
    assert_false(fb_endpoint_is_local("tcp://*:7755"));
    assert_false(fb_endpoint_is_local("tcp://0.0.0.0:7755"));
    assert_false(fb_endpoint_is_local("tcp://10.0.0.1:7755"));
    assert_false(fb_endpoint_is_local("tcp://127.0.0.1.evil.example:7755"));
    assert_false(fb_endpoint_is_local("tcp://eth0:7755"));
    assert_false(fb_endpoint_is_local("udp://127.0.0.1:7755"));
}

/* A CURVE server on loopback with server_key; a DEALER given own and pinned via
 * fb_key_apply_client_keys sends one message. Returns whether it arrived within 2 s. */
static bool s_handshake_with_loaded_keys(const fb_key_t *server_key, const fb_key_t *own,
                                         const fb_key_t *pinned)
{
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int one = 1, zero = 0, timeout = 2000;
    zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, server_key->secret_key, FB_KEY_Z85_LEN + 1);
    zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    char endpoint[256];
    size_t len = sizeof endpoint;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len);
    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
    char err[256];
    assert_int_equal(fb_key_apply_client_keys(dealer, own, pinned, err, sizeof err), 0);
    assert_int_equal(zmq_connect(dealer, endpoint), 0);
    zmq_send(dealer, "hello", 5, 0);
    char buf[64];
    bool got = zmq_recv(router, buf, sizeof buf, 0) >= 0; /* the routing id, then "hello" */
    got = got && zmq_recv(router, buf, sizeof buf, 0) == 5 && !memcmp(buf, "hello", 5);
    zmq_close(dealer);
    zmq_close(router);
    zmq_ctx_term(ctx);
    return got;
}

static void test_apply_loaded_keys(void **state)
{
    (void)state;
    fb_key_t server, agent, imposter;
    assert_int_equal(fb_key_generate(&server), 0);
    assert_int_equal(fb_key_generate(&agent), 0);
    assert_int_equal(fb_key_generate(&imposter), 0);
    assert_true(s_handshake_with_loaded_keys(&server, &agent, &server));
    /* pinned to another coordinator's key: the handshake fails, nothing arrives */
    assert_false(s_handshake_with_loaded_keys(&server, &agent, &imposter));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_write_load),
        cmocka_unit_test(test_load_refusals),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_endpoint_is_local),
        cmocka_unit_test(test_apply_loaded_keys),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
