/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_wire_decode: one ZeroMQ frame from a peer, as the coordinator and the agent receive it.
 * A frame that decodes and validates must encode again, and the encoding must decode and encode
 * to the same bytes; a Hello's inventory goes through the coordinator's summary and JSON, and a
 * TaskResult through the conversion to fb_result_t, as they do after a real decode; a Relayed's
 * frame is decoded and used as the coordinator and the relay use it. */
#include "fuzz.h"

#include "common/inventory_format.h"
#include "common/result.h"
#include "common/wire.h"

#include <errno.h>

FZ_INITIALIZE()

static void s_use(const Fleetburn__Envelope *env, int depth)
{
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_RELAYED && depth == 0) {
        Fleetburn__Envelope *inner = NULL;
        char err[256] = "";
        int rc = fb_wire_decode(env->relayed->frame.data, env->relayed->frame.len, &inner, err,
                                sizeof err);
        FZ_CHECK((rc == 0 || rc == -EPROTONOSUPPORT) == (inner != NULL));
        if (rc == 0)
            s_use(inner, 1);
        fb_wire_free(&inner);
        return;
    }
    if (env->body_case == FLEETBURN__ENVELOPE__BODY_HELLO) {
        free(fb_inventory_summary(env->hello->inventory));
        free(fb_inventory_to_json(env->hello->inventory));
    } else if (env->body_case == FLEETBURN__ENVELOPE__BODY_TASK_RESULT) {
        fb_result_t *r = fb_wire_result_from_proto(env->task_result);
        FZ_CHECK(r != NULL);
        fb_result_destroy(&r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Fleetburn__Envelope *env = NULL;
    char err[256] = "";
    int rc = fb_wire_decode(data, size, &env, err, sizeof err);
    FZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -EINVAL);
    FZ_CHECK((rc == 0 || rc == -EPROTONOSUPPORT) == (env != NULL));
    FZ_CHECK(rc == 0 || err[0] != '\0');
    if (rc != 0) {
        fb_wire_free(&env);
        return 0;
    }
    s_use(env, 0);

    /* What validated once validates again after a round trip, and encoding is stable. */
    size_t len1 = 0, len2 = 0;
    uint8_t *buf1 = fb_wire_encode(env, &len1);
    fb_wire_free(&env);
    Fleetburn__Envelope *again = NULL;
    rc = fb_wire_decode(buf1, len1, &again, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "re-decode failed: %s\n", err);
    FZ_CHECK(rc == 0);
    uint8_t *buf2 = fb_wire_encode(again, &len2);
    FZ_CHECK(len1 == len2 && memcmp(buf1, buf2, len1) == 0);
    fb_wire_free(&again);
    free(buf1);
    free(buf2);
    return 0;
}
