/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_key_parse (common/keys.c): a CurveZMQ key file's text, as the coordinator reads the
 * public keys of agents and operators (keys/agents/NAME.pub, keys/operators) and a daemon its own
 * secret key. What parses holds a valid public key, a secret key that is empty or belongs to it,
 * and a nodes: line that is non-empty; what does not parse leaves nothing behind. The nodes:
 * line goes through fb_hostlist_check as the coordinator's allow-list expands it. */
#include "fuzz.h"

#include "common/hostlist.h"
#include "common/keys.h"

#include <errno.h>
#include <zmq.h>

FZ_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fb_key_t key;
    char *nodes = (char *)1;
    char err[256] = "";
    int rc = fb_key_parse((const char *)data, size, &key, &nodes, err, sizeof err);
    if (rc != 0) {
        FZ_CHECK(rc == -EINVAL || rc == -EFBIG);
        FZ_CHECK(nodes == NULL && err[0] != '\0');
        FZ_CHECK(!key.public_key[0] && !key.secret_key[0]);
        return 0;
    }
    FZ_CHECK(fb_key_valid_z85(key.public_key));
    if (key.secret_key[0]) {
        FZ_CHECK(fb_key_valid_z85(key.secret_key));
        char derived[FB_KEY_Z85_LEN + 1];
        FZ_CHECK(zmq_curve_public(derived, key.secret_key) == 0);
        FZ_CHECK(strcmp(derived, key.public_key) == 0);
    }
    if (nodes) {
        FZ_CHECK(nodes[0] != '\0');
        size_t n = 0;
        (void)fb_hostlist_check(nodes, &n, err, sizeof err);
        free(nodes);
    }
    return 0;
}
