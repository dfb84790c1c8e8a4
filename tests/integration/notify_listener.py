#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Stands in for systemd's notification socket (sd_notify(3)): binds a datagram socket at PATH and
# writes every message it gets as one line, "TIME PID MESSAGE" (newlines in the message as '|'),
# with the sender's PID from SO_PASSCRED, which systemd uses for NotifyAccess=main.
import os, socket, struct, sys, time

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
with open(out, "a", buffering=1) as f:
    while True:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", data[:12])[0]
        f.write("%.3f %d %s\n" % (time.time(), pid, msg.decode().rstrip("\n").replace("\n", "|")))
