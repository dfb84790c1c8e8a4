#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loads an HTML file in headless Chromium and checks it as an operator would see it.

    html_check.py [--expect ID,ID,...] [--screenshot PNG] [--profile DIR] FILE

- the page logs nothing to the console: the report has no script, so any console message is an
  error (a script error, or a Content-Security-Policy violation: something it tried to fetch or
  run). Chromium's --enable-logging=stderr writes console messages as ":INFO:CONSOLE" lines;
- every id given with --expect exists in the DOM Chromium built (--dump-dom, after layout);
- with --screenshot, the rendered page is not blank: the PNG (decoded here with zlib, no PIL)
  has many colours and a good share of pixels that are not the background.
Exit 0 and one "ok" line, or exit 1 naming what failed. The DOM is written next to the PNG (or
to FILE.dom) for further checks by the caller."""
import argparse
import os
import re
import struct
import subprocess
import sys
import zlib


def chromium(args, profile):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-sync", "--disable-background-networking",
           "--enable-logging=stderr", "--v=0", "--user-data-dir=" + profile] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def console_lines(stderr):
    return [l for l in stderr.splitlines() if ":CONSOLE" in l]


def png_pixels(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("PNG of depth %d colour type %d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, rows, prev = width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def not_blank(path):
    width, height, rows = png_pixels(path)
    counts = {}
    for row in rows[::4]:
        for px in row[::4]:
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    background = max(counts.values())
    colours = len(counts)
    share = 1 - background / total
    return colours, share, width, height


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--expect", default="")
    ap.add_argument("--screenshot")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--window", default="1400,2000")
    a = ap.parse_args()
    url = "file://" + os.path.abspath(a.file)
    profile = a.profile or os.path.join(os.path.dirname(os.path.abspath(a.file)), "chromium-profile")
    rc, dom, err = chromium(["--dump-dom", url], profile)
    if rc != 0 or "</html>" not in dom:
        sys.exit("FAIL: chromium --dump-dom exited %d: %s" % (rc, err[-2000:]))
    dom_path = (a.screenshot or a.file) + ".dom"
    open(dom_path, "w").write(dom)
    logged = console_lines(err)
    if logged:
        sys.exit("FAIL: %s logged to the console:\n%s" % (a.file, "\n".join(logged[:10])))
    missing = [i for i in filter(None, a.expect.split(",")) if not re.search(r'\sid="%s"' % re.escape(i), dom)]
    if missing:
        sys.exit("FAIL: %s lacks the elements %s" % (a.file, ", ".join(missing)))
    shot = ""
    if a.screenshot:
        rc, _, err = chromium(["--window-size=" + a.window, "--screenshot=" + a.screenshot, url], profile)
        if rc != 0 or not os.path.exists(a.screenshot):
            sys.exit("FAIL: chromium --screenshot exited %d: %s" % (rc, err[-2000:]))
        if console_lines(err):
            sys.exit("FAIL: %s logged to the console while drawn:\n%s" % (a.file, "\n".join(console_lines(err)[:10])))
        colours, share, w, h = not_blank(a.screenshot)
        if colours < 12 or share < 0.05:
            sys.exit("FAIL: the screenshot of %s is blank: %d colours, %.1f%% not background"
                     % (a.file, colours, share * 100))
        shot = ", screenshot %dx%d with %d colours, %.0f%% not background" % (w, h, colours, share * 100)
    print("ok: %s: no console message, %d expected elements%s" % (a.file, len(a.expect.split(",")) if a.expect else 0, shot))


if __name__ == "__main__":
    main()
