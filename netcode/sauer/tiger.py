"""The Tiger hash as Sauerbraten has it (src/shared/crypto.cpp) and the game's password hash.

A server with a password (`serverpass`) checks N_CONNECT's password field against
`hashstring("<cn> <sessionid> <password>")`: Tiger/192 (the original padding byte 0x01, three
passes), printed as 48 hex digits, each byte low nibble first (server.cpp hashpassword).
The S-boxes are generated as the game generates them (tiger::gensboxes), once, on first use.
"""

from __future__ import annotations

M64 = (1 << 64) - 1
_SEED = b"Tiger - A Fast New Hash Function, by Ross Anderson and Eli Biham"
_IV = (0x0123456789ABCDEF, 0xFEDCBA9876543210, 0xF096A5B4C3B2E187)
_ROLES = ((0, 1, 2), (1, 2, 0), (2, 0, 1))
_sboxes: list[int] | None = None


def _compress(block: bytes, state: list[int], sb: list[int]) -> None:
    x = [int.from_bytes(block[i : i + 8], "little") for i in range(0, 64, 8)]
    a, b, c = state
    aa, bb, cc = a, b, c
    s1, s2, s3, s4 = sb[0:256], sb[256:512], sb[512:768], sb[768:1024]
    for pass_no in range(3):
        if pass_no:
            x0, x1, x2, x3, x4, x5, x6, x7 = x
            x0 = (x0 - (x7 ^ 0xA5A5A5A5A5A5A5A5)) & M64
            x1 ^= x0
            x2 = (x2 + x1) & M64
            x3 = (x3 - (x2 ^ ((~x1 << 19) & M64))) & M64
            x4 ^= x3
            x5 = (x5 + x4) & M64
            x6 = (x6 - (x5 ^ ((~x4 & M64) >> 23))) & M64
            x7 ^= x6
            x0 = (x0 + x7) & M64
            x1 = (x1 - (x0 ^ ((~x7 << 19) & M64))) & M64
            x2 ^= x1
            x3 = (x3 + x2) & M64
            x4 = (x4 - (x3 ^ ((~x2 & M64) >> 23))) & M64
            x5 ^= x4
            x6 = (x6 + x5) & M64
            x7 = (x7 - (x6 ^ 0x0123456789ABCDEF)) & M64
            x = [x0, x1, x2, x3, x4, x5, x6, x7]
        mul = (5, 7, 9)[pass_no]
        regs = [a, b, c]
        # round(a, b, c, x0) round(b, c, a, x1) round(c, a, b, x2) ...: the roles rotate
        for i in range(8):
            ra, rb, rc = _ROLES[i % 3]
            cv = regs[rc] ^ x[i]
            regs[rc] = cv
            regs[ra] = (
                regs[ra] - (s1[cv & 0xFF] ^ s2[(cv >> 16) & 0xFF] ^ s3[(cv >> 32) & 0xFF] ^ s4[(cv >> 48) & 0xFF])
            ) & M64
            regs[rb] = (
                regs[rb]
                + (s4[(cv >> 8) & 0xFF] ^ s3[(cv >> 24) & 0xFF] ^ s2[(cv >> 40) & 0xFF] ^ s1[(cv >> 56) & 0xFF])
            ) & M64
            regs[rb] = (regs[rb] * mul) & M64
        a, b, c = regs
        a, b, c = c, a, b  # tmp = a; a = c; c = b; b = tmp
    state[0] = a ^ aa
    state[1] = (b - bb) & M64
    state[2] = (c + cc) & M64


def _gen_sboxes() -> list[int]:
    """tiger::gensboxes: start with every byte of entry i equal to i & 0xFF, then swap bytes
    column by column as the state of compressing the seed string says. The compressions read
    the boxes as they are at that moment, as the game's do."""
    boxes = [(i & 0xFF) * 0x0101010101010101 for i in range(1024)]
    state = list(_IV)
    abc = 2
    for _ in range(5):
        for i in range(256):
            for sb in range(0, 1024, 256):
                abc += 1
                if abc >= 3:
                    abc = 0
                    _compress(_SEED, state, boxes)
                picks = state[abc]
                for col in range(8):
                    shift = 8 * col
                    p, q = sb + i, sb + ((picks >> shift) & 0xFF)
                    if p == q:
                        continue
                    mask = 0xFF << shift
                    bp, bq = boxes[p] & mask, boxes[q] & mask
                    boxes[p] = (boxes[p] & ~mask) | bq
                    boxes[q] = (boxes[q] & ~mask) | bp
    return boxes


def tiger(data: bytes) -> bytes:
    """Tiger/192 of `data`: the three state words as the game stores them (little-endian)."""
    global _sboxes
    if _sboxes is None:
        _sboxes = _gen_sboxes()
    state = list(_IV)
    n = len(data)
    full = n - n % 64
    for i in range(0, full, 64):
        _compress(data[i : i + 64], state, _sboxes)
    tail = bytearray(data[full:]) + b"\x01"
    tail += bytes(-len(tail) % 8)
    if len(tail) > 56:
        tail += bytes(64 - len(tail))
        _compress(bytes(tail), state, _sboxes)
        tail = bytearray()
    tail += bytes(56 - len(tail)) + ((n << 3) & M64).to_bytes(8, "little")
    _compress(bytes(tail), state, _sboxes)
    return b"".join(w.to_bytes(8, "little") for w in state)


def hashstring(text: bytes) -> str:
    """crypto.cpp hashstring: the 24 hash bytes as hex, each byte's low nibble first."""
    digits = "0123456789abcdef"
    return "".join(digits[b & 0xF] + digits[b >> 4] for b in tiger(text))


def hash_password(cn: int, sessionid: int, password: bytes) -> str:
    """server.cpp hashpassword: hashstring("<cn> <sessionid> <password>") (the password in the
    cube charset's bytes)."""
    return hashstring(f"{cn} {sessionid} ".encode("ascii") + password)
