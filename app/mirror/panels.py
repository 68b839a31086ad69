"""The mirror's ImGui layer: header, per-sink panels, live plots, room maps, avatar labels.

Layout (window pixels, any size from 800×600 up): a header across the top; the 3D scene (left)
beside the sink panel (right); a bottom strip with the plots (left) and the room maps (right).
Text never overflows its area: panel rows are wrapped to the panel's width and, when there are
more than fit, the least important go first with a line saying so; floating labels take a free
spot or are left out (app/mirror/labels.py). Fonts scale with the window (13–18 px).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui, implot

from headcast.app.mirror import view as mv
from headcast.app.mirror.labels import Rect, Want, place, plain_name, q3_color_runs
from headcast.app.mirror.ui import UiText, rgba, u32
from headcast.app.sinks import farside as fs
from headcast.app.sinks.q3.farside import RECEIVER_PLAIN
from headcast.netcode.netsync.model import FLAG_HEAD, FLAG_LEFT, FLAG_PHYSICAL, FLAG_RIGHT
from headcast.netcode.q3.vrhead import RECEIVER_NAMES

WHITE = (0.93, 0.93, 0.93)
DIM = (0.62, 0.62, 0.68)
RED = (1.0, 0.35, 0.3)
SOURCE_COLORS = {"RELAYED": (0.35, 0.92, 0.45), "MODEL": (1.0, 0.75, 0.2), "OFFLINE": (0.62, 0.62, 0.68)}
SINK_COLORS = {"q3": (0.95, 0.6, 0.2), "netsync": (0.35, 0.75, 0.98), "sauer": (0.72, 0.55, 0.98)}
SENT_COLOR = (0.95, 0.95, 0.95)
AMBER = (1.0, 0.85, 0.3)
FIXED = (
    imgui.WindowFlags_.no_decoration
    | imgui.WindowFlags_.no_move
    | imgui.WindowFlags_.no_saved_settings
    | imgui.WindowFlags_.no_bring_to_front_on_focus
    | imgui.WindowFlags_.no_scrollbar
    | imgui.WindowFlags_.no_scroll_with_mouse
    | imgui.WindowFlags_.no_focus_on_appearing
)
SNAP_SHOWN = 0.8  # s the header keeps saying a snap turn happened

Run = tuple[str, tuple]


@dataclass
class Row:
    """One line of a panel: coloured runs; lower `keep` goes first when the panel is full."""

    runs: list[Run]
    keep: int = 1
    indent: float = 0.0
    tip: str = ""  # the precise terms behind the row's plain words: a tooltip on hover


@dataclass
class PanelState:
    """What the user set and what carries between frames."""

    snap_at: float = -math.inf
    snap_deg: float = 0.0
    hidden_rows: int = 0
    hidden_labels: int = 0
    tab: str = ""  # the plots' tab shown in the last drawn frame (a view's key, or "latency")
    tooltip: str = ""  # the tooltip shown in the last drawn frame ("" none)


def font_size(w: int, h: int) -> float:
    return float(max(13, min(18, round(min(w / 72, h / 40)))))


def text_w(s: str) -> float:
    return imgui.calc_text_size(s).x


def wrap_words(s: str, width: float, first: float | None = None) -> list[str]:
    """`s` split at spaces into lines no wider than `width` (the first: `first`); a word longer
    than a line is cut at characters."""
    lines, cur = [], ""
    limit = width if first is None else first
    lead = len(s) - len(s.lstrip(" "))
    words = s[lead:].split(" ")
    words[0] = " " * lead + words[0]  # leading spaces are the run's own spacing: kept
    for word in words:
        cand = word if not cur else cur + " " + word
        if text_w(cand) <= limit:
            cur = cand
            continue
        if cur or (limit < width and text_w(word.lstrip(" ")) <= width):
            # the line is full (or a short first line has no room for a word a whole line would
            # take): the word starts the next line, whole
            lines.append(cur)
            limit = width
            word = word if cur else word.lstrip(" ")
        cur = word
        while text_w(cur) > limit and len(cur) > 1:  # cut a word longer than a line
            k = len(cur)
            while k > 1 and text_w(cur[:k]) > limit:
                k -= 1
            lines.append(cur[:k])
            cur = cur[k:]
            limit = width
    if cur or not lines:
        lines.append(cur)
    return lines


def wrap_runs(runs: list[Run], width: float, keep: int, indent: float, tip: str = "") -> list[Row]:
    """Coloured runs laid into rows of `width` (continuation rows indented); each row carries `tip`."""
    rows: list[Row] = [Row([], keep, 0.0, tip)]
    used = 0.0
    for s, col in runs:
        room = width - used
        parts = wrap_words(s, width - indent, room)
        for i, part in enumerate(parts):
            if i > 0:
                rows.append(Row([], keep, indent, tip))
                used = indent
            if part:
                rows[-1].runs.append((part, col))
                used += text_w(part)
    return rows


def fit_rows(rows: list[Row], height: float, line_h: float) -> tuple[list[Row], int]:
    """The rows that fit `height`, dropping the least important first (never reordering)."""
    cap = max(1, int(height // line_h))
    if len(rows) <= cap:
        return rows, 0
    cap -= 1  # a row says how many were left out
    order = sorted(range(len(rows)), key=lambda i: (rows[i].keep, -i))
    drop = set(order[: len(rows) - cap])
    return [r for i, r in enumerate(rows) if i not in drop], len(drop)


def draw_rows(t: UiText, rows: list[Row], hidden: int, x0: float) -> str:
    """The rows as text items; returns the tooltip shown (the hovered row's `tip`, "" none)."""
    tip = ""
    for r in rows:
        first = True
        for s, col in r.runs:
            if first:
                imgui.set_cursor_pos_x(x0 + r.indent)
                top = imgui.get_cursor_screen_pos().y
            else:
                imgui.same_line(0.0, 0.0)
            t.text(s, col)
            first = False
        if first:
            imgui.dummy((1, imgui.get_text_line_height()))
        elif r.tip and not tip:
            # The panel takes no input (no_inputs): the mouse is tested against the row's band.
            x_min = imgui.get_window_pos().x
            if imgui.is_mouse_hovering_rect(
                (x_min, top), (x_min + imgui.get_window_width(), top + imgui.get_text_line_height_with_spacing())
            ):
                tip = r.tip
    if hidden:
        t.text(f"… {hidden} more line{'s' if hidden != 1 else ''} (a larger window shows them)", DIM)
    if tip:
        imgui.set_tooltip(tip)
    return tip


def begin_fixed(name: str, rect: Rect, background: bool = True, inputs: bool = False) -> None:
    imgui.set_next_window_pos((rect[0], rect[1]))
    imgui.set_next_window_size((rect[2] - rect[0], rect[3] - rect[1]))
    flags = FIXED | (0 if background else imgui.WindowFlags_.no_background)
    if not inputs:
        flags |= imgui.WindowFlags_.no_inputs
    imgui.begin(name, None, flags)


# --- the header ------------------------------------------------------------------------------


def header_parts(loop, now: float, st: PanelState, mirror_hz: float, paused: bool) -> list[Run]:
    tel = loop.telemetry
    cost, wire = tel.frame_cost.percentile(50), tel.latency.percentile(50)
    tracking = loop.frame is not None and loop.frame.head.valid
    parts: list[Run] = [
        ("headcast", WHITE),
        (f"frame {tel.frames}", WHITE),
        (f"loop cost {0 if cost is None else cost * 1000:.2f} ms", WHITE),
        (f"motion-to-wire {'–' if wire is None else f'{wire * 1000:.2f} ms'}", WHITE),
        (f"mirror {mirror_hz:.0f} Hz", DIM),
        ("tracking OK", (0.35, 0.92, 0.45)) if tracking else ("TRACKING LOST", RED),
    ]
    if now - st.snap_at < SNAP_SHOWN:
        parts.append((f"snap turn {st.snap_deg:+.0f}°", (1.0, 0.85, 0.3)))
    if paused:
        parts.append(("plots paused", AMBER))
    return parts


def pack_parts(parts: list[Run], width: float, sep: str = "   ") -> list[Row]:
    rows: list[Row] = [Row([], 2)]
    used = 0.0
    for s, col in parts:
        w = text_w(s) + (text_w(sep) if rows[-1].runs else 0.0)
        if rows[-1].runs and used + w > width:
            rows.append(Row([], 2))
            used, w = 0.0, text_w(s)
        if rows[-1].runs:
            rows[-1].runs.append((sep, col))
        rows[-1].runs.append((s, col))
        used += w
    return rows


# --- the sink panel --------------------------------------------------------------------------


def error_text(e) -> str:
    """A view's error readout in one line (farside.ErrorReadout)."""
    if e.angle_deg is None and e.angle_max_deg is None and e.pos_m is None:
        return f"error: nothing compared yet ({e.basis})"
    parts = []
    if e.angle_deg is not None or e.angle_max_deg is not None:
        now = "–" if e.angle_deg is None else f"{e.angle_deg:.2f}°"
        worst = "–" if e.angle_max_deg is None else f"{e.angle_max_deg:.2f}°"
        parts.append(f"err {now} (max {worst})")
    if e.pos_m is not None or e.pos_max_m is not None:
        now = "–" if e.pos_m is None else f"{e.pos_m * 1000:.1f} mm"
        worst = "–" if e.pos_max_m is None else f"{e.pos_max_m * 1000:.1f} mm"
        parts.append(f"{now} (max {worst})")
    text = ", ".join(parts) + f": {e.basis}"
    if e.transient_samples:
        text += f"; {e.transient_samples} transient samples not counted"
    return text


GREEN = (0.35, 0.92, 0.45)
HEALTH_COLORS = {"green": GREEN, "amber": AMBER, "red": RED, "off": DIM}
LIGHT = "●"  # U+25CF (DejaVu Sans Mono has it)
# A sink's state → its light. Green: streaming to a server that has let us in. Red: lost or
# refused — nothing goes through until the user acts or the server returns. Amber: on the way in
# or degraded (connecting, loading, silent for a while, rate-limited, dead or spectating).
# Off (grey): no server asked for (computed and shown only).
GREEN_STATES = frozenset({"in game", "connected"})
RED_STATES = frozenset(
    {
        "disconnected",
        "refused",
        "pure check failed",
        "protocol mismatch",
        "stopped",
        "closed",
        "no answer",
        "failed",
        "error",
    }
)
AMBER_STATES = frozenset(
    {
        "idle",
        "connecting",
        "joining",
        "loading",
        "reconnecting",
        "server silent",
        "rate-limited",
        "dead",
        "spectator",
        "editing",
    }
)  # (and any state not named here)


def health(stt) -> str:
    """ "green", "amber", "red" or "off" for a sink's status (telemetry.SinkStatus)."""
    state = stt.state
    if state == "offline":
        return "off"
    if state in RED_STATES:
        return "red"
    if state in GREEN_STATES and stt.live:
        return "green"
    return "amber"


def _packed(name: str, stt) -> tuple[str, str]:
    """What a sink puts on the wire, in words (and the raw packed values as the tip)."""
    v = stt.values or {}
    if name == "netsync" and "body_bytes" in v:
        flags = v.get("flags", 0)
        hands = flags & (FLAG_RIGHT | FLAG_LEFT)
        parts = ["head"] if flags & FLAG_HEAD else []
        if hands:
            parts.append(
                "both hands"
                if hands == FLAG_RIGHT | FLAG_LEFT
                else "right hand"
                if hands == FLAG_RIGHT
                else "left hand"
            )
        text = f"pose {v['body_bytes']} B: {', '.join(parts) or 'no head or hands'}"
        if flags & FLAG_PHYSICAL and "dyaw" in v:
            text += f"; play space turned {v['dyaw']:+.0f}°"
        return text, f"{stt.packed} (the XROrigin Δ: dyaw)"
    if name == "sauer" and "npos_bytes" in v:
        return (
            f"position record {v['npos_bytes']} B: yaw {v['yaw']} pitch {v['pitch']} roll {v['roll_deg']} "
            f"(whole degrees)",
            stt.packed,
        )
    if name == "q3" and "buttons" in v:
        head = "head bits in the buttons" if v.get("head_bits") else "16-bit buttons, no head"
        return f"sends: {head}; roll {v['roll_deg']:+.1f}°", f"usercmd: {stt.packed} (the roll as ANGLE2SHORT)"
    return stt.packed, ""


def sink_rows(
    loop, avatars: list[mv.Avatar], statuses: dict, links: dict, width: float, sinks: list | None = None
) -> list[Row]:
    """Each sink's panel: a health light and its figures, each far side's source and why in plain
    words (the precise terms in the tooltip), what it sends, the Q3 decode, the link's detail."""
    rows: list[Row] = []
    ind = text_w("  ")
    for s in loop.sinks if sinks is None else sinks:
        stt = statuses[s.name]
        lk = links.get(s.name)
        col = SINK_COLORS.get(s.name, WHITE)
        light = health(stt)
        head: list[Run] = [(f"{LIGHT} {mv.SINK_TITLES.get(s.name, s.name)}", col), (stt.state, HEALTH_COLORS[light])]
        if stt.live or stt.send_hz:
            head += [(f"{stt.send_hz:.0f}/s", WHITE), (f"{stt.bytes_per_s / 1000:.2f} kB/s", WHITE)]
        rt_name, rt_tip = fs.round_trip_name(s), ""
        if lk is not None and lk.round_trip_ms is not None:
            head.append((f"{rt_name} {lk.round_trip_ms:.0f} ms", WHITE))
            rt_tip = fs.why_with_detail(lk.round_trip_basis)
        elif stt.ping_ms is not None:
            head.append((f"{rt_name} {stt.ping_ms:.0f} ms", WHITE))
        if lk is not None and lk.motion_to_wire_ms is not None:
            head.append((f"to wire {lk.motion_to_wire_ms:.2f} ms", WHITE))
        tip = "; ".join(
            t for t in (f"state: {light}", rt_tip, "to wire: from the pose read to its bytes handed to the socket") if t
        )
        packed = pack_parts(head, width, "  ")
        # the light in its colour, the name in the sink's
        packed[0].runs[0:1] = [(LIGHT, HEALTH_COLORS[light]), (packed[0].runs[0][0][len(LIGHT) :], col)]
        for r in packed:
            r.keep, r.tip = 5, tip
            rows.append(r)
        not_sent = False
        for a in (a for a in avatars if a.view.sink == s.name):
            v = a.view
            not_sent = not_sent or a.not_sent
            runs = [("  ", WHITE), (a.source, SOURCE_COLORS[a.source]), (f"  {a.title}: ", WHITE), (v.why, DIM)]
            if v.transient:
                runs.append((f"  ({v.transient})", AMBER))
            rows += wrap_runs(runs, width, 4, ind * 2, fs.detail(v.why))  # (its error readout: the view's plot tab)
        text, raw = _packed(s.name, stt)
        if text:
            rows += wrap_runs([("  " + text, WHITE)], width, 3, ind * 2, raw)
        if s.name == "q3":
            for text, keep, tip in q3_lines(s):
                rows += wrap_runs([("  " + text, DIM)], width, keep, ind * 2, tip)
        if stt.detail and getattr(s, "link", None) is not None:  # offline: the view's why says it
            detail = stt.detail
            if not_sent:  # the VR head's line says it once: not again in the link's words
                detail = "; ".join(d for d in detail.split("; ") if "vr_support" not in d)
            if detail:
                rows += wrap_runs([("  " + detail, DIM)], width, 1, ind * 2)
    return rows


def q3_lines(q3) -> list[tuple[str, int, str]]:
    """The Q3 far side in numbers (what a VR server makes of our last usercmd, the roll both ways)
    and who else is in view (RELAYED): (text, keep, tip)."""
    out = []
    far = q3.far_side
    if far is not None:
        precise = RECEIVER_NAMES[far.receiver]
        who = RECEIVER_PLAIN[far.receiver]
        seen = q3.receiver_seen
        if seen is not None:  # another VR player's relayed head told which build the server runs
            who += f", as seen on {plain_name(seen[1]) or 'another player'}"
        head = (
            "no head"
            if far.pitch is None
            else f"head pitch {far.pitch:+.2f}°, turn {far.yaw_offset:+.2f}° (sent {far.sent_offset:+.2f}°)"
        )
        out.append(
            (
                f"a VR server ({who}) would see: {head}",
                2,
                f"the {precise} decode of the head bits (buttons bits 12–25): pitch, yaw offset from the aim",
            )
        )
        out.append(
            (
                f"roll: you {far.roll_own:+.3f}°, others see {far.roll_others:+.0f}° (the server rounds it)",
                2,
                "your playerState's roll vs your entity's, which the server snaps to whole degrees (SnapVector)",
            )
        )
    ents = q3.others
    if ents is not None and ents.players:
        names = ", ".join(plain_name(p.name) + (" (VR)" if p.head is not None else "") for p in ents.players)
        out.append((f"others in view: {names}", 1, "the players in the server's snapshot (RELAYED)"))
    return out


# --- plots -----------------------------------------------------------------------------------

PLOT_FLAGS = implot.Flags_.no_title | implot.Flags_.no_legend | implot.Flags_.no_menus | implot.Flags_.no_box_select
ANGLES = (("pitch", 90.0), ("yaw", 180.0), ("roll", 60.0))


def _line(label: str, xs: np.ndarray, ys: np.ndarray, color, weight: float = 1.5) -> None:
    if len(xs) < 2:
        return
    spec = implot.Spec()
    spec.line_color = rgba(color)
    spec.line_weight = weight
    implot.plot_line(
        label, np.ascontiguousarray(xs, dtype=np.float64), np.ascontiguousarray(ys, dtype=np.float64), spec
    )


def transient_spans(t: np.ndarray, flag: np.ndarray) -> list[tuple[float, float]]:
    """Time spans where `flag` is set (a transient: joining, spawn, tracking lost)."""
    if len(t) == 0:
        return []
    on = flag > 0
    edges = np.flatnonzero(np.diff(on.astype(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [len(t)]))
    return [(float(t[a]), float(t[min(b, len(t) - 1)])) for a, b in zip(bounds[:-1], bounds[1:]) if on[a]]


def _bands(spans, lo: float, hi: float) -> None:
    dl = implot.get_plot_draw_list()
    implot.push_plot_clip_rect()
    for a, b in spans:
        p0, p1 = implot.plot_to_pixels(a, hi), implot.plot_to_pixels(b, lo)
        dl.add_rect_filled((p0.x, p0.y), (max(p1.x, p0.x + 2), p1.y), u32(AMBER, 0.2))
    implot.pop_plot_clip_rect()


def _grid(n: int, w: float, h: float) -> tuple[int, int]:
    """Rows × columns for n small plots in w × h: side by side when each gets 140 px."""
    if w >= n * 140 or h < 2 * 90:
        return 1, n
    if n == 4:
        return 2, 2
    return n, 1


def _begin_grid(id_: str, n: int) -> bool:
    """begin_subplots for n plots filling the rest of the panel; False when it is too small for any."""
    avail = imgui.get_content_region_avail()
    w, h = avail.x, avail.y
    if h < 40 or w < 60:
        return False
    rows, cols = _grid(n, w, h)
    return implot.begin_subplots(id_, rows, cols, (w, h), implot.SubplotFlags_.no_title)


def _begin_time_plot(label: str, ylabel: str, seconds: float) -> bool:
    """begin_plot of the last `seconds` (x fixed at [-seconds, 0]), its y axis fitted to the data."""
    if not implot.begin_plot(label, (-1, -1), PLOT_FLAGS):
        return False
    implot.setup_axes("", ylabel, implot.AxisFlags_.no_menus, implot.AxisFlags_.no_menus | implot.AxisFlags_.auto_fit)
    implot.setup_axis_limits(implot.ImAxis_.x1, -seconds, 0.0, imgui.Cond_.always)
    return True


def plot_view(t: UiText, series: dict, view, color, t_end: float, seconds: float, width: float) -> None:
    """Head pitch, yaw, roll sent (white) vs seen (the sink's colour) over the last `seconds`,
    transients shaded; and the position error where the protocol carries a position."""
    for line in wrap_words(error_text(view.error), width):
        t.text(line, DIM)
    tt = series["t"] - t_end
    spans = [(a - t_end, b - t_end) for a, b in transient_spans(series["t"], series["transient"])]
    if spans:
        for line in wrap_words("shaded: transients (joining, spawn, tracking lost), not counted as error", width):
            t.text(line, AMBER)
    err_m = series["err_m"]
    with_pos = bool(np.isfinite(err_m).any())
    plots = [(name, lim, "sent_" + name, "seen_" + name) for name, lim in ANGLES]
    if _begin_grid(f"##{view.key}", len(plots) + (1 if with_pos else 0)):
        for name, lim, sent, seen in plots:
            if implot.begin_plot(f"{name}##{view.key}", (-1, -1), PLOT_FLAGS):
                implot.setup_axes("", f"{name} °", implot.AxisFlags_.no_menus, implot.AxisFlags_.no_menus)
                implot.setup_axes_limits(-seconds, 0.0, -lim, lim, imgui.Cond_.always)
                _bands(spans, -lim, lim)
                _line("seen", tt, series[seen], color, 3.0)  # wide, under the sent line: both show where equal
                _line("sent", tt, series[sent], SENT_COLOR, 1.2)
                implot.end_plot()
        if with_pos and _begin_time_plot(f"pos##{view.key}", "position err mm", seconds):
            ok = np.isfinite(err_m)
            _line("position error", tt[ok], err_m[ok] * 1000.0, color)
            implot.end_plot()
        implot.end_subplots()


def plot_links(t: UiText, tracker, sinks: list[str], t_end: float, seconds: float, width: float) -> None:
    for line in wrap_words("in each sink's colour: ping or relay (thick), motion-to-wire (thin); kB/s", width):
        t.text(line, DIM)
    if _begin_grid("##links", 2):
        if _begin_time_plot("latency##l", "ms", seconds):
            for sink in sinks:
                ls = tracker.link_series(sink)
                tt = ls["t"] - t_end
                color = SINK_COLORS.get(sink, WHITE)
                _line(f"rtt {sink}", tt, ls["round_trip_ms"], color, 3.0)
                _line(f"m2w {sink}", tt, ls["motion_to_wire_ms"], color, 1.0)
            implot.end_plot()
        if _begin_time_plot("rates##l", "kB/s", seconds):
            for sink in sinks:
                ls = tracker.link_series(sink)
                _line(f"kB/s {sink}", ls["t"] - t_end, ls["bytes_per_s"] / 1000.0, SINK_COLORS.get(sink, WHITE))
            implot.end_plot()
        implot.end_subplots()


# --- room maps -------------------------------------------------------------------------------


def draw_map(t: UiText, title: str, members: list[mv.Member], rect: Rect, color, q3_names: bool = False) -> int:
    """One protocol's room top-down in `rect`: every member as a dot with a heading tick, named;
    returns the labels left out for want of room."""
    dl = imgui.get_window_draw_list()
    line_h = imgui.get_text_line_height()
    top = rect[1] + 2
    for line in wrap_words(title, rect[2] - rect[0] - 8):
        t.label(dl, rect[0] + 4, top, [(line, color)], rect)
        top += line_h
    top += 4
    side = min(rect[2] - rect[0] - 8, rect[3] - top - 4 - line_h)  # a line below for the "+N" note
    if side < 40:
        return len(members)
    cx, cy = (rect[0] + rect[2]) / 2, top + side / 2
    dl.add_rect((cx - side / 2, top), (cx + side / 2, top + side), u32(DIM, 0.5))
    half = mv.fit(members)
    k = (side / 2 - 6) / half
    wants, dots = [], []
    if side > 120:  # the scale, bottom left inside the frame
        sb = t.label(dl, cx - side / 2 + 3, top + side - line_h - 2, [(f"±{half:.0f} m", DIM)], rect)
        dots.append(sb)
    for m in members:
        x, y = cx + m.east * k, cy - m.north * k
        c = (0.35, 0.92, 0.45) if m.us else color
        dl.add_circle_filled((x, y), 4.0, u32(c))
        if m.heading is not None:
            a = math.radians(m.heading)
            dl.add_line((x, y), (x + 10 * math.cos(a), y - 10 * math.sin(a)), u32(c), 2.0)
        name = m.label + (f" {m.note}" if m.note else "")
        dots.append((x - 5, y - 5, x + 5, y + 5))
        shown = plain_name(name) if q3_names else name
        wants.append((name, m, Want(x, y + 6, text_w(shown), line_h)))
    area = (cx - side / 2 + 1, top + 1, cx + side / 2 - 1, top + side - 1)
    boxes = place([w for _, _, w in wants], area, taken=dots)
    hidden = 0
    for (name, m, _), box in zip(wants, boxes):
        if box is None:
            hidden += 1
            continue
        base = (0.35, 0.92, 0.45) if m.us else WHITE
        t.label(dl, box[0], box[1], q3_color_runs(name, base) if q3_names else [(name, base)], rect)
    if hidden:  # under the frame, right-aligned: names the map had no room for
        note = f"+{hidden} unnamed"
        if top + side + line_h <= rect[3] and text_w(note) <= side:
            t.label(dl, cx + side / 2 - text_w(note), top + side + 1, [(note, DIM)], rect)
    return hidden
