/* SPDX-License-Identifier: Apache-2.0 */
/* The CURVE secure-memory pool: libzmq's allocations land in it (a real CURVE handshake over TCP
 * loopback in this process), blocks are zeroed when freed and reused, sizes past the largest
 * class go to libsodium's allocator and come back to it, overflowing counts are refused, and
 * concurrent threads do not corrupt it. */
#include "common/securemem.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

#include <cmocka.h>

static void test_blocks_zeroed_and_reused(void **state)
{
    (void)state;
    fb_securemem_use();
    size_t before = fb_securemem_in_use();
    uint8_t *a = sodium_malloc(100);
    assert_non_null(a);
    assert_true(fb_securemem_owns(a));
    assert_int_equal(fb_securemem_in_use(), before + 1);
    memset(a, 0xa5, 100);
    sodium_free(a);
    assert_int_equal(fb_securemem_in_use(), before);
    uint8_t *b = sodium_malloc(90); /* same class: the block just freed */
    assert_ptr_equal(a, b);
    for (size_t i = 0; i < 90; i++)
        assert_int_equal(b[i], 0);
    sodium_free(b);
    sodium_free(NULL);
}

static void test_large_and_overflow(void **state)
{
    (void)state;
    void *big = sodium_malloc(64 * 1024); /* past the largest class: libsodium's allocator */
    assert_non_null(big);
    assert_false(fb_securemem_owns(big));
    memset(big, 1, 64 * 1024);
    sodium_free(big);
    errno = 0;
    assert_null(sodium_allocarray(SIZE_MAX / 2, 4));
    assert_int_equal(errno, ENOMEM);
    uint32_t *arr = sodium_allocarray(8, sizeof(uint32_t));
    assert_true(fb_securemem_owns(arr));
    sodium_free(arr);
}

static void *s_churn(void *arg)
{
    (void)arg;
    void *held[64] = {0};
    for (unsigned i = 0; i < 200000; i++) {
        unsigned k = i % 64;
        sodium_free(held[k]);
        held[k] = sodium_malloc(16 + (i * 37) % 3000);
        if (!held[k])
            return (void *)1;
        memset(held[k], (int)i, 16);
    }
    for (unsigned k = 0; k < 64; k++)
        sodium_free(held[k]);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    size_t before = fb_securemem_in_use();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, s_churn, NULL);
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    assert_int_equal(fb_securemem_in_use(), before);
}

/* libzmq's CURVE takes its secure memory from here once a program links the pool in. */
static void test_curve_handshake_uses_pool(void **state)
{
    (void)state;
    size_t before = fb_securemem_in_use(), served = fb_securemem_served();
    char spub[41], ssec[41], cpub[41], csec[41];
    assert_int_equal(zmq_curve_keypair(spub, ssec), 0);
    assert_int_equal(zmq_curve_keypair(cpub, csec), 0);
    void *ctx = zmq_ctx_new();
    void *server = zmq_socket(ctx, ZMQ_ROUTER), *client = zmq_socket(ctx, ZMQ_DEALER);
    int one = 1, linger = 0, timeout = 10000;
    zmq_setsockopt(server, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(server, ZMQ_CURVE_SECRETKEY, ssec, 41);
    zmq_setsockopt(server, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    assert_int_equal(zmq_bind(server, "tcp://127.0.0.1:*"), 0);
    char ep[64];
    size_t len = sizeof ep;
    zmq_getsockopt(server, ZMQ_LAST_ENDPOINT, ep, &len);
    zmq_setsockopt(client, ZMQ_CURVE_SERVERKEY, spub, 41);
    zmq_setsockopt(client, ZMQ_CURVE_PUBLICKEY, cpub, 41);
    zmq_setsockopt(client, ZMQ_CURVE_SECRETKEY, csec, 41);
    assert_int_equal(zmq_connect(client, ep), 0);
    assert_int_equal(zmq_send(client, "hello", 5, 0), 5);
    char buf[16];
    assert_true(zmq_recv(server, buf, sizeof buf, 0) > 0); /* identity */
    assert_int_equal(zmq_recv(server, buf, sizeof buf, 0), 5);
    assert_memory_equal(buf, "hello", 5);
    /* both sides' handshake secrets came from the pool (libzmq 4.3 takes about six blocks per
     * side) */
    assert_true(fb_securemem_served() >= served + 6);
    zmq_setsockopt(client, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(server, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(client);
    zmq_close(server);
    zmq_ctx_term(ctx);
    assert_int_equal(fb_securemem_in_use(), before); /* and go back to it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_zeroed_and_reused),
        cmocka_unit_test(test_large_and_overflow),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_curve_handshake_uses_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
