/* SPDX-License-Identifier: Apache-2.0 */
/* A made-up leaf/spine fabric as topology text (simfabric.h). */
#include "simfabric.h"

#include "common/util.h"

#include <stdio.h>

char *fb_simfabric_text(char *const *names, unsigned n, unsigned leaf_size, unsigned spines,
                        int width)
{
    unsigned leaves = (n + leaf_size - 1) / leaf_size;
    int lw = width ? width : leaves >= 100 ? (leaves >= 1000 ? 4 : 3) : 2;
    size_t cap = 256 + (size_t)n * 16 + leaves * 32, len = 0;
    char *text = xmalloc(cap);
    for (unsigned l = 0; l < leaves; l++) {
        len += (size_t)snprintf(text + len, cap - len, "leaf%0*u:", lw, l + 1);
        for (unsigned i = l * leaf_size; i < n && i < (l + 1) * leaf_size; i++)
            len += (size_t)snprintf(text + len, cap - len, "%s%s", i % leaf_size ? "," : " ",
                                    names[i]);
        len += (size_t)snprintf(text + len, cap - len, "\n");
    }
    for (unsigned s = 0; s < spines; s++)
        len += (size_t)snprintf(text + len, cap - len, "spine%02u: leaf[%0*u-%0*u]\n", s + 1, lw, 1,
                                lw, leaves);
    return text;
}
