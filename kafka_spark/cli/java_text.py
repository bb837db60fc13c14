"""Bytes as Java's `new String(bytes, UTF_8)` reads them, for output that must equal a Java tool's.

Python's and Java's decoders both put U+FFFD where input is malformed, but not the same number of
them: Java replaces a whole 3-byte surrogate encoding with one, and a malformed sequence with one per
the length its checks reach, where Python follows Unicode's maximal-subpart rule. Valid UTF-8 is
decoded by Python's own codec; only the malformed stretches take the slow path here.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_second3(b1: int, b2: int) -> bool:
    # The second byte cannot follow this lead of a 3-byte sequence (overlong E0, or not a continuation).
    return (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2)


def _bad_second4(b1: int, b2: int) -> bool:
    return ((b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
            or not _cont(b2))


def _malformed4_len(b1: int, b2: int, b3: int) -> int:
    # How many bytes one replacement covers when a 4-byte sequence is malformed.
    if b1 > 0xF4 or _bad_second4(b1, b2):
        return 1
    return 2 if not _cont(b3) else 3


def java_utf8(data: bytes) -> str:
    """`data` decoded the way Java's String(byte[], UTF_8) decodes it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    n, i = len(data), 0
    while i < n:
        b1 = data[i]
        if b1 < 0x80:
            j = i + 1
            while j < n and data[j] < 0x80:
                j += 1
            out.append(data[i:j].decode("ascii"))
            i = j
        elif 0xC2 <= b1 <= 0xDF:
            if i + 1 < n:
                if _cont(data[i + 1]):
                    out.append(data[i:i + 2].decode("utf-8"))
                    i += 2
                else:
                    out.append(REPLACEMENT)
                    i += 1
                continue
            out.append(REPLACEMENT)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if i + 2 < n:
                b2, b3 = data[i + 1], data[i + 2]
                if _bad_second3(b1, b2) or not _cont(b3):
                    out.append(REPLACEMENT)
                    i += 1 if _bad_second3(b1, b2) else 2
                    continue
                code = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                out.append(REPLACEMENT if 0xD800 <= code <= 0xDFFF else chr(code))
                i += 3
                continue
            if i + 1 < n and _bad_second3(b1, data[i + 1]):
                out.append(REPLACEMENT)
                i += 1
                continue
            out.append(REPLACEMENT)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 3 < n:
                b2, b3, b4 = data[i + 1], data[i + 2], data[i + 3]
                code = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= code <= 0x10FFFF:
                    out.append(REPLACEMENT)
                    i += _malformed4_len(b1, b2, b3)
                    continue
                out.append(chr(code))
                i += 4
                continue
            if b1 > 0xF4 or (i + 1 < n and _bad_second4(b1, data[i + 1])):
                out.append(REPLACEMENT)
                i += 1
                continue
            out.append(REPLACEMENT)
            i += 2
            if i < n and not _cont(data[i]):
                continue
            break
        else:
            out.append(REPLACEMENT)
            i += 1
    return "".join(out)


__all__ = ["java_utf8"]
