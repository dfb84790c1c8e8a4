/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes fb_edac_read (common/edac.c): the EDAC tree under sys/devices/system/edac, built from the
 * input (tests/fuzz/fuzz_tree.h). Controller and DIMM directory names, counters, labels and sizes
 * are all the fuzzer's. A snapshot that reads must diff against itself to no changes. */
#include "fuzz_tree.h"

#include "common/edac.h"

FZ_INITIALIZE(fz_tree_init())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *root = fz_tree_build(data, size);
    fb_edac_t edac = {0};
    int rc = fb_edac_read(root, &edac);
    FZ_CHECK(rc <= 0);
    if (rc == 0) {
        for (size_t i = 0; i < edac.n_dimms; i++)
            FZ_CHECK(edac.dimms[i].label && edac.dimms[i].location);
        fb_edac_change_t changes[8];
        FZ_CHECK(fb_edac_diff(&edac, &edac, changes, 8) == 0);
    }
    fb_edac_clear(&edac);
    fz_tree_clear();
    return 0;
}
