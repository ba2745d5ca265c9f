#!/usr/bin/env python3
"""Exit 0 when a PNG (8-bit RGB/RGBA/grey, non-interlaced, as Chromium
writes screenshots) has more than one distinct pixel colour, 1 when it is a
single colour, 2 when it cannot be read. Standard library only (no PIL).

With --color RRGGBB:MIN (repeatable) it also counts the pixels within 40 of
that colour on every channel and exits 1 unless each count reaches MIN: a
figure drawn in its series' colours, not only a frame. With --bands N the
image is cut into N bands of equal height (one figure each) and every band
must pass on its own."""
import struct
import sys
import zlib


def pixels_vary(path, colors=None, bands=1):
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
    vary = False
    band_h = max(1, h // bands)
    if colors is not None:
        for c in colors:
            c["band"] = [0] * bands
    vary_b = [False] * bands
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
        if colors is None and line != first * w:
            return True, w, h
        if colors is not None:
            k = min(y // band_h, bands - 1)
            if not vary_b[k] and line != bytes(line[:bpp]) * w:
                vary_b[k] = True
            vary = vary or line != first * w
            if bpp >= 3:
                for c in colors:
                    cr, cg, cb = c["rgb"]
                    n = 0
                    for x in range(0, stride, bpp):
                        if abs(line[x] - cr) <= 40 and abs(line[x + 1] - cg) <= 40 and abs(line[x + 2] - cb) <= 40:
                            n += 1
                    c["n"] += n
                    c["band"][k] += n
        prev = line
    if colors is not None and bands > 1:
        return vary_b, w, h
    return vary, w, h


if __name__ == "__main__":
    args, colors, bands = sys.argv[1:], None, 1
    while len(args) >= 3 and args[1] in ("--color", "--bands"):
        if args[1] == "--bands":
            bands = int(args[2])
        else:
            hexc, need = args[2].split(":")
            colors = (colors or []) + [{"hex": hexc, "rgb": bytes.fromhex(hexc), "min": int(need), "n": 0}]
        del args[1:3]
    if bands > 1 and colors is None:
        colors = []
    try:
        vary, w, h = pixels_vary(args[0], colors, bands)
    except (OSError, ValueError, zlib.error, struct.error, TypeError, IndexError) as e:
        print(f"png_nonblank: {args[0] if args else '?'}: {e}")
        sys.exit(2)
    if bands > 1:
        ok = True
        for k in range(bands):
            counts = "".join(f", #{c['hex']}: {c['band'][k]} px (need {c['min']})" for c in colors)
            good = vary[k] and all(c["band"][k] >= c["min"] for c in colors)
            ok = ok and good
            print(f"png_nonblank: {args[0]}: band {k + 1}/{bands}: {'ok' if good else 'BLANK or without its colours'}{counts}")
        sys.exit(0 if ok else 1)
    ok = vary
    counts = ""
    for c in colors or []:
        counts += f", #{c['hex']}: {c['n']} px (need {c['min']})"
        ok = ok and c["n"] >= c["min"]
    print(f"png_nonblank: {args[0]}: {w}x{h}, {'several colours' if vary else 'one colour'}{counts}")
    sys.exit(0 if ok else 1)
