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
Q3_COLORS = (
    (0.45, 0.45, 0.45),
    (1.0, 0.25, 0.25),
    (0.25, 1.0, 0.25),
    (1.0, 1.0, 0.25),
    (0.35, 0.45, 1.0),
    (0.25, 1.0, 1.0),
    (1.0, 0.35, 1.0),
    (1.0, 1.0, 1.0),
)
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
            runs.append((name[at : m.start()], color))
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
        out += downs[i : i + 1] + ups[i + 3 : i + 4]
    return out


MAX_MISSES = 12  # labels left out before place() stops trying the rest


def place(
    wants: list[Want],
    area: Rect,
    taken: list[Rect] | None = None,
    gap: float = 2.0,
    max_steps: int = 12,
    max_misses: int | None = MAX_MISSES,
) -> list[Rect | None]:
    """A box per label (None: no free spot), in order: earlier labels get the better spots. Once
    `max_misses` labels have found no spot the area is crowded: the rest are left out untried (a
    crowd of 200 would otherwise cost tens of milliseconds of the pose loop's time). A label's
    spots share its columns: the boxes in them are gathered once, and each spot is tested against
    those only (50 labels in a room: ~1 ms)."""
    pad = gap / 2
    placed: list[Rect] = list(taken or ())
    out: list[Rect | None] = []
    offsets: dict[float, list[float]] = {}
    misses = 0
    for want in wants:
        if max_misses is not None and misses >= max_misses:
            out.append(None)
            continue
        step = want.h + gap
        x0 = min(max(want.x - want.w / 2, area[0]), area[2] - want.w)
        x1 = x0 + want.w
        box = None
        if x0 >= area[0] and x1 <= area[2]:
            dys = offsets.get(step)
            if dys is None:
                dys = offsets[step] = _offsets(max_steps, step)
            lo, hi = x0 - pad, x1 + pad
            column = [(b[1] - pad, b[3] + pad) for b in placed if b[0] < hi and lo < b[2]]
            tried = set()
            for dy in dys:
                y0 = min(max(want.y + dy, area[1]), area[3] - want.h)
                if y0 in tried:  # clamped to the area's edge: the same spot again
                    continue
                tried.add(y0)
                y1 = y0 + want.h
                if y0 < area[1] or y1 > area[3]:
                    continue
                for a, b in column:  # intersects(cand, box, pad) with the x overlap known
                    if a < y1 and y0 < b:
                        break
                else:
                    box = (x0, y0, x1, y1)
                    break
        if box is not None:
            placed.append(box)
        else:
            misses += 1
        out.append(box)
    return out
