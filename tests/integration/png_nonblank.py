#!/usr/bin/env python3
"""Exit 0 when a PNG (8-bit RGB/RGBA/grey, non-interlaced, as Chromium
writes screenshots) has more than one distinct pixel colour, 1 when it is a
single colour, 2 when it cannot be read. Standard library only (no PIL)."""
import struct
import sys
import zlib


def pixels_vary(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or interlace or ctype not in (0, 2, 4, 6):
        raise ValueError("unsupported PNG format")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    first = None
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        if first is None:
            first = bytes(line[:bpp])
        if line != first * w:
            return True, w, h
        prev = line
    return False, w, h


if __name__ == "__main__":
    try:
        vary, w, h = pixels_vary(sys.argv[1])
    except (OSError, ValueError, zlib.error, struct.error, TypeError) as e:
        print(f"png_nonblank: {sys.argv[1]}: {e}")
        sys.exit(2)
    print(f"png_nonblank: {sys.argv[1]}: {w}x{h}, {'several colours' if vary else 'one colour'}")
    sys.exit(0 if vary else 1)
