"""Quake 3 Huffman coding: the static message code and the adaptive code of the `connect` packet.

Both come from one adaptive (FGK) tree. The static code is that tree after replaying the byte
frequencies `MSG_HDATA` (ioq3 msg.c `msg_hData`); the result depends bit-exactly on the order
in which the tree swaps block leaders, so `AdaptiveTree` replays ioq3's update rule step for
step. The replay costs seconds in CPython, so the resulting 256 codes are kept below as data
(`STATIC_CODES`); a test re-derives them from `MSG_HDATA`.

Bits are packed LSB-first: stream bit k is bit (k & 7) of byte k >> 3. A code is stored as an
int whose bit 0 is the first bit on the wire (root to leaf, 1 = right child).
"""

from __future__ import annotations

from .errors import MsgError

NYT = 256  # "not yet transmitted": the escape leaf of the adaptive tree
_INTERNAL = 257

# Byte frequencies that shape the static tree (ioq3 code/qcommon/msg.c msg_hData; sums to 1,053,340).
MSG_HDATA: tuple[int, ...] = (
    250315,
    41193,
    6292,
    7106,
    3730,
    3750,
    6110,
    23283,
    33317,
    6950,
    7838,
    9714,
    9257,
    17259,
    3949,
    1778,
    8288,
    1604,
    1590,
    1663,
    1100,
    1213,
    1238,
    1134,
    1749,
    1059,
    1246,
    1149,
    1273,
    4486,
    2805,
    3472,
    21819,
    1159,
    1670,
    1066,
    1043,
    1012,
    1053,
    1070,
    1726,
    888,
    1180,
    850,
    960,
    780,
    1752,
    3296,
    10630,
    4514,
    5881,
    2685,
    4650,
    3837,
    2093,
    1867,
    2584,
    1949,
    1972,
    940,
    1134,
    1788,
    1670,
    1206,
    5719,
    6128,
    7222,
    6654,
    3710,
    3795,
    1492,
    1524,
    2215,
    1140,
    1355,
    971,
    2180,
    1248,
    1328,
    1195,
    1770,
    1078,
    1264,
    1266,
    1168,
    965,
    1155,
    1186,
    1347,
    1228,
    1529,
    1600,
    2617,
    2048,
    2546,
    3275,
    2410,
    3585,
    2504,
    2800,
    2675,
    6146,
    3663,
    2840,
    14253,
    3164,
    2221,
    1687,
    3208,
    2739,
    3512,
    4796,
    4091,
    3515,
    5288,
    4016,
    7937,
    6031,
    5360,
    3924,
    4892,
    3743,
    4566,
    4807,
    5852,
    6400,
    6225,
    8291,
    23243,
    7838,
    7073,
    8935,
    5437,
    4483,
    3641,
    5256,
    5312,
    5328,
    5370,
    3492,
    2458,
    1694,
    1821,
    2121,
    1916,
    1149,
    1516,
    1367,
    1236,
    1029,
    1258,
    1104,
    1245,
    1006,
    1149,
    1025,
    1241,
    952,
    1287,
    997,
    1713,
    1009,
    1187,
    879,
    1099,
    929,
    1078,
    951,
    1656,
    930,
    1153,
    1030,
    1262,
    1062,
    1214,
    1060,
    1621,
    930,
    1106,
    912,
    1034,
    892,
    1158,
    990,
    1175,
    850,
    1121,
    903,
    1087,
    920,
    1144,
    1056,
    3462,
    2240,
    4397,
    12136,
    7758,
    1345,
    1307,
    3278,
    1950,
    886,
    1023,
    1112,
    1077,
    1042,
    1061,
    1071,
    1484,
    1001,
    1096,
    915,
    1052,
    995,
    1070,
    876,
    1111,
    851,
    1059,
    805,
    1112,
    923,
    1103,
    817,
    1899,
    1872,
    976,
    841,
    1127,
    956,
    1159,
    950,
    7791,
    954,
    1289,
    933,
    1127,
    3207,
    1020,
    927,
    1355,
    768,
    1040,
    745,
    952,
    805,
    1073,
    740,
    1013,
    805,
    1008,
    796,
    996,
    1057,
    11457,
    13504,
)


class _Node:
    __slots__ = ("symbol", "weight", "parent", "left", "right", "next", "prev", "head")

    def __init__(self, symbol: int) -> None:
        self.symbol = symbol
        self.weight = 0
        self.parent: _Node | None = None
        self.left: _Node | None = None
        self.right: _Node | None = None
        # The rank list runs from the NYT leaf (lowest weight) towards the root (highest).
        self.next: _Node | None = None
        self.prev: _Node | None = None
        # Shared one-slot cell naming the leader (highest rank) of this node's weight block.
        self.head: list[_Node | None] = [None]


class AdaptiveTree:
    """ioq3's adaptive Huffman tree (Sayood's FGK variant with an implicit rank list).

    The update order, including its quirks (a swap of two siblings leaves the tree as it was),
    is kept exactly: every code the tree produces must match ioq3's bit for bit.
    """

    def __init__(self) -> None:
        nyt = _Node(NYT)
        self.root = nyt
        self._nyt = nyt
        self._leaf: dict[int, _Node] = {NYT: nyt}

    def knows(self, symbol: int) -> bool:
        return symbol in self._leaf

    def add_ref(self, symbol: int) -> None:
        leaf = self._leaf.get(symbol)
        if leaf is not None:
            self._increment(leaf)
            return
        nyt = self._nyt
        inner = _Node(_INTERNAL)
        inner.weight = 1
        first = nyt.next
        inner.next = first
        if first is not None:
            first.prev = inner
            inner.head = first.head if first.weight == 1 else [inner]
        else:
            inner.head = [inner]
        nyt.next = inner
        inner.prev = nyt
        leaf = _Node(symbol)
        leaf.weight = 1
        leaf.next = inner
        inner.prev = leaf
        leaf.head = inner.head
        nyt.next = leaf
        leaf.prev = nyt
        # The new inner node takes the NYT leaf's place; NYT and the new leaf hang below it.
        parent = nyt.parent
        if parent is None:
            self.root = inner
        elif parent.left is nyt:
            parent.left = inner
        else:
            parent.right = inner
        inner.right = leaf
        inner.left = nyt
        inner.parent = parent
        nyt.parent = leaf.parent = inner
        self._leaf[symbol] = leaf
        self._increment(parent)

    def code(self, symbol: int) -> tuple[int, int]:
        """(code, length) of a known symbol; bit 0 of `code` is sent first."""
        node = self._leaf[symbol]
        code = 0
        length = 0
        # Walking leaf to root and shifting left leaves the root's bit (sent first) in bit 0.
        while node.parent is not None:
            parent = node.parent
            code = (code << 1) | (1 if parent.right is node else 0)
            length += 1
            node = parent
        return code, length

    def _increment(self, node: _Node | None) -> None:
        # Iterative form of ioq3's recursion: walk up, then finish each level on the way back.
        pending: list[_Node] = []
        while node is not None:
            nxt = node.next
            if nxt is not None and nxt.weight == node.weight:
                leader = node.head[0]
                assert leader is not None
                if leader is not node.parent:
                    self._swap(leader, node)
                _swaplist(leader, node)
            prev = node.prev
            if prev is not None and prev.weight == node.weight:
                node.head[0] = prev
            else:
                node.head[0] = None
            node.weight += 1
            nxt = node.next
            if nxt is not None and nxt.weight == node.weight:
                node.head = nxt.head
            else:
                node.head = [node]
            if node.parent is None:
                break
            pending.append(node)
            node = node.parent
        for node in reversed(pending):
            parent = node.parent
            if parent is not None and node.prev is parent:  # (pending: nodes below the root)
                _swaplist(node, parent)
                if node.head[0] is node:
                    node.head[0] = parent

    def _swap(self, a: _Node, b: _Node) -> None:
        """Exchange two subtrees' positions, in ioq3's order (siblings: no change)."""
        pa = a.parent
        pb = b.parent
        if pa is not None:
            if pa.left is a:
                pa.left = b
            else:
                pa.right = b
        else:
            self.root = b
        if pb is not None:
            if pb.left is b:
                pb.left = a
            else:
                pb.right = a
        else:
            self.root = a
        a.parent = pb
        b.parent = pa


def _swaplist(a: _Node, b: _Node) -> None:
    """Exchange two nodes' ranks in the list, in ioq3's order."""
    t = a.next
    a.next = b.next
    b.next = t
    t = a.prev
    a.prev = b.prev
    b.prev = t
    if a.next is a:
        a.next = b
    if b.next is b:
        b.next = a
    if a.next is not None:
        a.next.prev = a
    if b.next is not None:
        b.next.prev = b
    if a.prev is not None:
        a.prev.next = a
    if b.prev is not None:
        b.prev.next = b


def derive_static_codes() -> tuple[tuple[int, int], ...]:
    """Replay MSG_HDATA into a fresh tree: (code, length) for bytes 0..255, then NYT (slow: seconds)."""
    tree = AdaptiveTree()
    for symbol, count in enumerate(MSG_HDATA):
        for _ in range(count):
            tree.add_ref(symbol)
    return tuple(tree.code(s) for s in range(257))


# The static code, `(code << 4) | length` for bytes 0..255 and then NYT (same packing as Quake3e's
# huffman_static.c HuffmanEncoderTable). Derived by `derive_static_codes()`; a test checks it.
STATIC_CODES: tuple[int, ...] = (
    34,
    437,
    1159,
    1735,
    2584,
    280,
    263,
    1014,
    341,
    839,
    1687,
    183,
    311,
    726,
    920,
    2761,
    599,
    1417,
    7945,
    8073,
    7642,
    16186,
    8890,
    12858,
    3913,
    6362,
    2746,
    13882,
    7866,
    1080,
    1273,
    3400,
    886,
    3386,
    1097,
    11482,
    15450,
    16282,
    12506,
    15578,
    2377,
    6858,
    826,
    330,
    10010,
    12042,
    8009,
    1928,
    631,
    3128,
    3832,
    6521,
    1336,
    2840,
    217,
    5657,
    121,
    3865,
    6553,
    6426,
    4666,
    3017,
    5193,
    7994,
    3320,
    1287,
    1991,
    71,
    536,
    1304,
    2057,
    1801,
    5081,
    1594,
    11642,
    14106,
    6617,
    10938,
    7290,
    13114,
    4809,
    2522,
    5818,
    14010,
    7482,
    5914,
    7738,
    9018,
    3450,
    11450,
    5897,
    2697,
    3193,
    4185,
    3769,
    3464,
    3897,
    968,
    6841,
    6393,
    2425,
    775,
    1048,
    5369,
    454,
    648,
    3033,
    3145,
    2440,
    2297,
    200,
    2872,
    2136,
    2248,
    1144,
    1944,
    1431,
    1031,
    376,
    408,
    1208,
    3608,
    2616,
    1848,
    1784,
    1671,
    135,
    1623,
    502,
    663,
    1223,
    2007,
    248,
    2104,
    24,
    2168,
    1656,
    3704,
    1400,
    1864,
    7353,
    7241,
    2073,
    1241,
    4889,
    5690,
    6153,
    15738,
    698,
    5210,
    1722,
    986,
    12986,
    3994,
    3642,
    9306,
    4794,
    794,
    16058,
    7066,
    4425,
    8090,
    4922,
    714,
    11738,
    7194,
    12762,
    7450,
    5001,
    1562,
    11834,
    13402,
    9914,
    3290,
    3258,
    5338,
    905,
    15386,
    9178,
    15306,
    3162,
    15050,
    15930,
    10650,
    15674,
    8522,
    8250,
    7114,
    10714,
    14362,
    9786,
    2266,
    1352,
    4153,
    1496,
    518,
    151,
    15482,
    12410,
    2952,
    7961,
    8906,
    1114,
    58,
    4570,
    7258,
    13530,
    474,
    9,
    15258,
    3546,
    6170,
    4314,
    2970,
    7386,
    14666,
    7130,
    6474,
    14554,
    5514,
    15322,
    3098,
    15834,
    3978,
    3353,
    2329,
    2458,
    12170,
    570,
    1818,
    11578,
    14618,
    1175,
    8986,
    4218,
    9754,
    8762,
    392,
    8282,
    11290,
    7546,
    3850,
    11354,
    12298,
    15642,
    14986,
    8666,
    20491,
    90,
    13706,
    12186,
    6794,
    11162,
    10458,
    759,
    582,
    4107,
)

# Encoder: ENCODE_CODE[b] / ENCODE_LEN[b] for bytes 0..255.
ENCODE_CODE: tuple[int, ...] = tuple(e >> 4 for e in STATIC_CODES[:256])
ENCODE_LEN: tuple[int, ...] = tuple(e & 15 for e in STATIC_CODES[:256])

DECODE_BITS = 11  # the longest code


def _decode_table() -> tuple[int, ...]:
    """2048 entries indexed by the next 11 stream bits (LSB-first): `(symbol << 4) | length`."""
    table = [-1] * (1 << DECODE_BITS)
    for symbol, entry in enumerate(STATIC_CODES):
        code, length = entry >> 4, entry & 15
        for high in range(1 << (DECODE_BITS - length)):
            table[code | (high << length)] = (symbol << 4) | length
    # The static tree is complete (Kraft sum 1 with NYT), so every index names a leaf.
    assert -1 not in table
    return tuple(table)


DECODE: tuple[int, ...] = _decode_table()
DECODE_SYMBOL: tuple[int, ...] = tuple(e >> 4 for e in DECODE)
DECODE_LENGTH: tuple[int, ...] = tuple(e & 15 for e in DECODE)


# --- adaptive code of the `connect` packet (ioq3 huffman.c Huff_Compress / Huff_Decompress) ---

CONNECT_RAW_PREFIX = 12  # FF FF FF FF "connect " stays raw


def compress(packet: bytes, offset: int = CONNECT_RAW_PREFIX) -> bytes:
    """`Huff_Compress(msg, offset)`: raw prefix, big-endian length, adaptive bitstream.

    ioq3 stops writing code bits once the stream (length prefix included) reaches the
    uncompressed size, silently truncating data that does not shrink; the server would read
    garbage, so that case raises MsgError instead of producing ioq3's broken bytes.
    """
    body = packet[offset:]
    size = len(body)
    if size <= 0:
        return bytes(packet)
    if size > 0xFFFF:
        raise MsgError(f"adaptive Huffman input of {size} bytes exceeds the 16-bit length")
    cap = size << 3
    # Code bits stop before `cap` and a literal adds at most 8 more: size + 2 bytes always suffice.
    out = bytearray(size + 3)
    out[0] = size >> 8
    out[1] = size & 0xFF
    bit = 16
    tree = AdaptiveTree()
    for ch in body:
        if tree.knows(ch):
            code, length = tree.code(ch)
            literal = False
        else:
            code, length = tree.code(NYT)
            literal = True
        if bit + length > cap:
            raise MsgError(f"connect payload of {size} bytes does not compress (ioq3 would truncate it)")
        for _ in range(length):
            out[bit >> 3] |= (code & 1) << (bit & 7)
            code >>= 1
            bit += 1
        if literal:
            # The first sight of a byte: its 8 bits follow the NYT code, most significant first.
            for i in range(7, -1, -1):
                out[bit >> 3] |= ((ch >> i) & 1) << (bit & 7)
                bit += 1
        tree.add_ref(ch)
    # ioq3 reports (bit + 8) >> 3 bytes: one spare byte when the stream ends on a byte boundary.
    return bytes(packet[:offset]) + bytes(out[: (bit + 8) >> 3])


def decompress(packet: bytes, offset: int = CONNECT_RAW_PREFIX, max_size: int = 16384) -> bytes:
    """`Huff_Decompress(msg, offset)`, strict: raises MsgError where ioq3 would read past the end.

    `max_size` bounds the whole decompressed packet (ioq3 clamps the length to its buffer).
    """
    body = packet[offset:]
    if len(body) < 2:
        raise MsgError("adaptive Huffman stream shorter than its length prefix")
    count = (body[0] << 8) | body[1]
    if count > max_size - offset:
        raise MsgError(f"adaptive Huffman length {count} exceeds {max_size - offset}")
    nbits = len(body) << 3
    bit = 16
    tree = AdaptiveTree()
    out = bytearray()
    for _ in range(count):
        node = tree.root
        while node.symbol == _INTERNAL:
            if bit >= nbits:
                raise MsgError("adaptive Huffman stream ends inside a code")
            # an internal node has both children
            node = node.right if (body[bit >> 3] >> (bit & 7)) & 1 else node.left  # type: ignore[assignment]
            bit += 1
        ch = node.symbol
        if ch == NYT:
            if bit + 8 > nbits:
                raise MsgError("adaptive Huffman stream ends inside a literal")
            ch = 0
            for _ in range(8):
                ch = (ch << 1) | ((body[bit >> 3] >> (bit & 7)) & 1)
                bit += 1
        out.append(ch)
        tree.add_ref(ch)
    return bytes(packet[:offset]) + bytes(out)
