"""Where the mirror's floating labels go, and Quake 3 names in their colours (no GL, no ImGui).

A label wants to sit centred above what it names; when that spot is taken (another label, a
panel) it moves up or down a line at a time, and stays inside its area; one that finds no free
spot is left out and counted, never drawn over another.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1

# Quake 3's colour table (q_shared.c g_color_table), indexed by (character - '0') & 7. Black is drawn
# dark grey: the mirror's background is near black.
Q3_COLORS = ((0.45, 0.45, 0.45), (1.0, 0.25, 0.25), (0.25, 1.0, 0.25), (1.0, 1.0, 0.25),
             (0.35, 0.45, 1.0), (0.25, 1.0, 1.0), (1.0, 0.35, 1.0), (1.0, 1.0, 1.0))
_COLOR_CODE = re.compile(r"\^[^^]")


def plain_name(name: str) -> str:
    """A Quake 3 name without its colour codes (^ and any character but ^: Q_IsColorString)."""
    return _COLOR_CODE.sub("", name)


def q3_color_runs(name: str, default: tuple[float, float, float]) -> list[tuple[str, tuple[float, float, float]]]:
    """A Quake 3 name as (text, colour) runs, as the game draws it: ^N switches to colour N, the
    text before any code is `default` (the game's white; ours: the label's colour)."""
    runs: list[tuple[str, tuple[float, float, float]]] = []
    color, at = default, 0
    for m in _COLOR_CODE.finditer(name):
        if m.start() > at:
            runs.append((name[at:m.start()], color))
        color, at = Q3_COLORS[(ord(m.group()[1]) - ord("0")) & 7], m.end()
    if at < len(name):
        runs.append((name[at:], color))
    return runs or [("", default)]


def intersects(a: Rect, b: Rect, gap: float = 0.0) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def inside(a: Rect, area: Rect) -> bool:
    return a[0] >= area[0] and a[1] >= area[1] and a[2] <= area[2] and a[3] <= area[3]


@dataclass(frozen=True, slots=True)
class Want:
    """A label of size (w, h) that wants its top centre at (x, y)."""

    x: float
    y: float
    w: float
    h: float


def _offsets(n: int, step: float) -> list[float]:
    """0, then up to three lines up (a label above what it names hides nothing of it), then down
    and further up in turn."""
    ups = [-k * step for k in range(1, n + 1)]
    downs = [k * step for k in range(1, n + 1)]
    out = [0.0] + ups[:3]
    for i in range(n):
        out += downs[i:i + 1] + ups[i + 3:i + 4]
    return out


MAX_MISSES = 12  # labels left out before place() stops trying the rest
CELL = 48.0  # px: the grid that files placed boxes by where they are (place() looks only nearby)


class _Grid:
    """Placed boxes filed in square cells: a candidate is tested against the boxes in the cells it
    touches, not against every box — 50 labels in a room cost ~1 ms, not ~100 ms."""

    def __init__(self, pad: float) -> None:
        self.pad = pad
        self.cells: dict[tuple[int, int], list[Rect]] = {}

    def add(self, r: Rect) -> None:
        p, cells = self.pad, self.cells
        for i in range(int((r[0] - p) // CELL), int((r[2] + p) // CELL) + 1):
            for j in range(int((r[1] - p) // CELL), int((r[3] + p) // CELL) + 1):
                cell = cells.get((i, j))
                if cell is None:
                    cells[(i, j)] = [r]
                else:
                    cell.append(r)

    def hits(self, r: Rect) -> bool:
        p, cells = self.pad, self.cells
        x0, y0, x1, y1 = r[0] - p, r[1] - p, r[2] + p, r[3] + p
        for i in range(int(x0 // CELL), int(x1 // CELL) + 1):
            for j in range(int(y0 // CELL), int(y1 // CELL) + 1):
                for b in cells.get((i, j), ()):
                    if x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1:  # intersects(r, b, p)
                        return True
        return False


def place(wants: list[Want], area: Rect, taken: list[Rect] | None = None, gap: float = 2.0,
          max_steps: int = 12, max_misses: int | None = MAX_MISSES) -> list[Rect | None]:
    """A box per label (None: no free spot), in order: earlier labels get the better spots. Once
    `max_misses` labels have found no spot the area is crowded: the rest are left out untried (a
    crowd of 200 would otherwise cost tens of milliseconds of the pose loop's time)."""
    grid = _Grid(gap / 2)
    for r in taken or ():
        grid.add(r)
    out: list[Rect | None] = []
    offsets: dict[float, list[float]] = {}
    misses = 0
    for want in wants:
        if max_misses is not None and misses >= max_misses:
            out.append(None)
            continue
        step = want.h + gap
        x0 = min(max(want.x - want.w / 2, area[0]), area[2] - want.w)
        box = None
        dys = offsets.get(step)
        if dys is None:
            dys = offsets[step] = _offsets(max_steps, step)
        tried = set()
        for dy in dys:
            y0 = min(max(want.y + dy, area[1]), area[3] - want.h)
            if y0 in tried:  # clamped to the area's edge: the same spot again
                continue
            tried.add(y0)
            cand = (x0, y0, x0 + want.w, y0 + want.h)
            if inside(cand, area) and not grid.hits(cand):
                box = cand
                break
        if box is not None:
            grid.add(box)
        else:
            misses += 1
        out.append(box)
    return out
