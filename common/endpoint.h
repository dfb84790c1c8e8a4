/* SPDX-License-Identifier: Apache-2.0 */
/* Coordinator endpoints as operators write them (--coordinator, --bind, `coordinator =` in the
 * agent's and the client's configuration), made into ZeroMQ endpoints:
 *   tcp://HOST:PORT, ipc://PATH, inproc://NAME   as given (ZeroMQ checks the rest)
 *   HOST:PORT, [IPV6]:PORT                        tcp://HOST:PORT
 *   HOST                                          tcp://HOST:7755 (serve's port)
 * HOST is a name, an IPv4 address, `*` (bind: every interface) or an IPv6 address in brackets;
 * PORT a number from 1 to 65535 (or `*`, bind: any free port). */
#ifndef FB_ENDPOINT_H
#define FB_ENDPOINT_H

#include <stddef.h>

#define FB_DEFAULT_PORT 7755
#define FB_ENDPOINT_MAX 300 /* room for any endpoint fb_endpoint_normalize writes */

/* Writes the ZeroMQ endpoint that text means into out (outlen bytes). 0, or -EINVAL with what is
 * wrong and what is expected in err, e.g. "'coord:77x': '77x' is not a port; expected
 * tcp://HOST:PORT, HOST:PORT or HOST". */
int fb_endpoint_normalize(const char *text, char *out, size_t outlen, char *err, size_t errlen);

#endif
