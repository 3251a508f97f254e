#!/usr/bin/env python3
"""Independent PNG decoder for tests/plot (Python standard library only).

    png_oracle.py IN.png OUT.ppm

Parses the chunks of IN.png, checks the signature, every chunk's CRC-32
(binascii.crc32), that IHDR comes first and describes an 8-bit RGB
non-interlaced image, that IEND ends the file, decompresses the IDAT stream
(zlib, which also checks the Adler-32), checks every row's filter byte and
undoes the filters (all five PNG filter types), and writes the pixels as a
binary PPM (P6) for the C++ test to read. Exits 1 with a message on stderr
at the first problem.
"""
import binascii
import struct
import sys
import zlib


def fail(message):
    sys.stderr.write("png_oracle: " + message + "\n")
    sys.exit(1)


def chunks(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("bad signature")
    pos = 8
    while pos < len(data):
        if pos + 12 > len(data):
            fail("truncated chunk header at %d" % pos)
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            fail("truncated %r chunk" % kind)
        (stored_crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if binascii.crc32(kind + body) & 0xFFFFFFFF != stored_crc:
            fail("CRC mismatch in %r chunk" % kind)
        yield kind, body
        pos += 12 + length


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(raw, width, height):
    bpp, stride = 3, width * 3
    if len(raw) != height * (stride + 1):
        fail("decompressed %d bytes, expected %d" % (len(raw), height * (stride + 1)))
    out, prior = bytearray(), bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind > 4:
            fail("row %d: bad filter type %d" % (y, kind))
        for i in range(stride if kind else 0):  # type 0 (None) leaves the row as it is
            a = line[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            predictor = (0, a, b, (a + b) // 2, paeth(a, b, c))[kind]
            line[i] = (line[i] + predictor) & 0xFF
        out += line
        prior = line
    return bytes(out)


def main():
    if len(sys.argv) != 3:
        fail("usage: png_oracle.py IN.png OUT.ppm")
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    seen = list(chunks(data))
    if not seen or seen[0][0] != b"IHDR" or len(seen[0][1]) != 13:
        fail("IHDR must come first, with 13 bytes")
    if seen[-1] != (b"IEND", b""):
        fail("IEND must end the file, empty")
    if [kind for kind, _ in seen].count(b"IHDR") != 1 or [kind for kind, _ in seen].count(b"IEND") != 1:
        fail("exactly one IHDR and one IEND")
    width, height, depth, color, method, filt, interlace = struct.unpack(">IIBBBBB", seen[0][1])
    if width == 0 or height == 0:
        fail("empty image")
    if (depth, color, method, filt, interlace) != (8, 2, 0, 0, 0):
        fail("expected 8-bit RGB, deflate, adaptive filtering, no interlace; got %r"
             % ((depth, color, method, filt, interlace),))
    idat = b"".join(body for kind, body in seen if kind == b"IDAT")
    try:
        decompressor = zlib.decompressobj()
        raw = decompressor.decompress(idat) + decompressor.flush()
    except zlib.error as error:
        fail("IDAT: " + str(error))
    if not decompressor.eof or decompressor.unused_data:
        fail("IDAT: zlib stream incomplete or followed by extra bytes")
    pixels = unfilter(raw, width, height)
    with open(sys.argv[2], "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (width, height) + pixels)


if __name__ == "__main__":
    main()
