"""The desktop mirror window (glfw + PyOpenGL, GL 3.3 core): avatars, HUD, live plots.

Runs on the loop's thread. Never waits for vsync (the XR runtime paces the loop). When the
XR session has an OpenGL binding it binds to this window's context (pass `window` to
XRSession), so there is one GL context in the process. Minimised: nothing drawn, events
still pumped. Closing the window ends the run.
"""
from __future__ import annotations

import ctypes
import math
import os
import re
import struct
import zlib
from pathlib import Path

import numpy as np

from headcast.app import glfont, scene
from headcast.app.errors import AppError
from headcast.netcode.q3 import vrhead

_COLOR_VS = """#version 330 core
layout(location = 0) in vec3 pos;
layout(location = 1) in vec3 col;
uniform mat4 mvp;
out vec3 vcol;
void main() { gl_Position = mvp * vec4(pos, 1.0); vcol = col; }
"""
_COLOR_FS = """#version 330 core
in vec3 vcol;
out vec4 frag;
void main() { frag = vec4(vcol, 1.0); }
"""
_TEXT_VS = """#version 330 core
layout(location = 0) in vec2 pos;
layout(location = 1) in vec2 uv;
layout(location = 2) in vec3 col;
uniform mat4 mvp;
out vec2 vuv;
out vec3 vcol;
void main() { gl_Position = mvp * vec4(pos, 0.0, 1.0); vuv = uv; vcol = col; }
"""
_TEXT_FS = """#version 330 core
in vec2 vuv;
in vec3 vcol;
uniform sampler2D font;
out vec4 frag;
void main() { if (texture(font, vuv).r < 0.5) discard; frag = vec4(vcol, 1.0); }
"""

TEXT_SCALE = 2
HUD_PERIOD = 0.1  # seconds between HUD text refreshes
TEXT_CACHE_SIZE = 512  # text items whose triangles are kept (a few seconds of HUD refreshes)
WHITE = (0.95, 0.95, 0.95)
DIM = (0.6, 0.6, 0.65)
SENT_COLOR = (0.95, 0.95, 0.95)
SEEN_COLOR = scene.COLORS["q3"][0]


class MirrorError(AppError):
    pass


def display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def write_png(path: Path, rgb: np.ndarray) -> Path:
    """A plain RGB8 PNG (no extra dependency): rows top first."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    chunk = lambda tag, data: (struct.pack(">I", len(data)) + tag + data  # noqa: E731
                               + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    path = Path(path)
    path.write_bytes(png)
    return path


class MirrorWindow:
    def __init__(self, width: int = 1280, height: int = 720, plot_seconds: float = 5.0,
                 title: str = "headcast mirror", visible: bool = True) -> None:
        os.environ.setdefault("PYGLFW_LIBRARY_VARIANT", "x11")
        import glfw
        from OpenGL import GL

        self.glfw, self.gl = glfw, GL
        self.plot_seconds = plot_seconds
        self.capture_next = False
        self.last_pixels: np.ndarray | None = None
        self._hud: list = []
        self._hud_due = float("-inf")
        self._text_cache: dict[tuple, np.ndarray] = {}  # (x, y, text, colour) → its triangles
        if not display_available():
            raise MirrorError("no display (DISPLAY is not set): use --no-mirror, or run under xvfb-run")
        # GLFW's own error text says why (X11: Failed to open display :99); caught here instead of
        # the module's default warning, which would print a stack location beside our line.
        errors: list[str] = []
        glfw.set_error_callback(lambda code, text: errors.append(text.decode("utf-8", "replace")
                                                                   if isinstance(text, bytes) else str(text)))
        try:
            if not glfw.init():
                where = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                raise MirrorError(f"cannot open the display {where} ({'; '.join(errors) or 'glfw could not start'})")
            glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
            glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
            glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
            glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
            glfw.window_hint(glfw.VISIBLE, visible)
            self.window = glfw.create_window(width, height, title, None, None)
            if not self.window:
                glfw.terminate()
                raise MirrorError("cannot create an OpenGL 3.3 window ("
                                  + ("; ".join(errors) or "driver too old?") + ")")
        finally:
            glfw.set_error_callback(None)  # pyGLFW's default again
        glfw.make_context_current(self.window)
        glfw.swap_interval(0)  # the XR runtime paces the loop, not the desktop's vsync
        self._init_gl()
        self.closed = False

    # -- GL setup -------------------------------------------------------------------------

    def _program(self, vs: str, fs: str) -> int:
        from OpenGL.GL import shaders
        return shaders.compileProgram(shaders.compileShader(vs, self.gl.GL_VERTEX_SHADER),
                                      shaders.compileShader(fs, self.gl.GL_FRAGMENT_SHADER))

    def _vao(self, layout: list[int]) -> tuple[int, int]:
        GL = self.gl
        vao, vbo = GL.glGenVertexArrays(1), GL.glGenBuffers(1)
        GL.glBindVertexArray(vao)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, vbo)
        stride, offset = sum(layout) * 4, 0
        for i, n in enumerate(layout):
            GL.glEnableVertexAttribArray(i)
            GL.glVertexAttribPointer(i, n, GL.GL_FLOAT, GL.GL_FALSE, stride, ctypes.c_void_p(offset))
            offset += n * 4
        GL.glBindVertexArray(0)
        return vao, vbo

    def _init_gl(self) -> None:
        GL = self.gl
        self.color_prog = self._program(_COLOR_VS, _COLOR_FS)
        self.text_prog = self._program(_TEXT_VS, _TEXT_FS)
        self.color_mvp = GL.glGetUniformLocation(self.color_prog, "mvp")
        self.text_mvp = GL.glGetUniformLocation(self.text_prog, "mvp")
        self.color_vao, self.color_vbo = self._vao([3, 3])
        self.text_vao, self.text_vbo = self._vao([2, 2, 3])
        img = glfont.atlas()
        self.font_tex = GL.glGenTextures(1)
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.font_tex)
        GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
        GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, GL.GL_R8, img.shape[1], img.shape[0], 0,
                        GL.GL_RED, GL.GL_UNSIGNED_BYTE, np.ascontiguousarray(img))
        for p in (GL.GL_TEXTURE_MIN_FILTER, GL.GL_TEXTURE_MAG_FILTER):
            GL.glTexParameteri(GL.GL_TEXTURE_2D, p, GL.GL_NEAREST)
        self.font_w = img.shape[1]
        self.grid = scene.grid_lines()

    # -- drawing primitives -----------------------------------------------------------------

    def _draw(self, verts: np.ndarray, mode: int, mvp: np.ndarray) -> None:
        if len(verts) == 0:
            return
        GL = self.gl
        GL.glUseProgram(self.color_prog)
        GL.glUniformMatrix4fv(self.color_mvp, 1, GL.GL_TRUE, mvp.astype(np.float32))
        GL.glBindVertexArray(self.color_vao)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, self.color_vbo)
        data = np.ascontiguousarray(verts, dtype=np.float32)
        GL.glBufferData(GL.GL_ARRAY_BUFFER, data.nbytes, data, GL.GL_STREAM_DRAW)
        GL.glDrawArrays(mode, 0, len(data))

    def _text_verts(self, x: float, y: float, text: str, color) -> np.ndarray:
        n = len(text)
        if n == 0:
            return np.zeros((0, 7), dtype=np.float32)
        cw, ch = glfont.CELL_W * TEXT_SCALE, glfont.CELL_H * TEXT_SCALE
        idx = glfont.text_indices(text)
        x0 = x + np.arange(n, dtype=np.float32) * cw
        u0 = idx * glfont.CELL_W / self.font_w
        u1 = (idx + 1) * glfont.CELL_W / self.font_w
        # two triangles per glyph: (x0,y)(x1,y)(x1,y1) (x0,y)(x1,y1)(x0,y1); v = 0 is the glyph top
        quad = [(0, 0, 0, 0), (1, 0, 1, 0), (1, 1, 1, 1), (0, 0, 0, 0), (1, 1, 1, 1), (0, 1, 0, 1)]
        v = np.empty((n, 6, 7), dtype=np.float32)
        for k, (dx, dy, su, sv) in enumerate(quad):
            v[:, k, 0] = x0 + dx * cw
            v[:, k, 1] = y + dy * ch
            v[:, k, 2] = np.where(su, u1, u0)
            v[:, k, 3] = sv
        v[:, :, 4:] = color
        return v.reshape(-1, 7)

    def _draw_text(self, items: list[tuple[float, float, str, tuple]], mvp: np.ndarray) -> None:
        if not items:
            return
        GL = self.gl
        # Most text stands still between frames (HUD lines for 0.1 s, labels, plot titles): its
        # triangles are built once, not every frame (they were most of the mirror's CPU time).
        cache = self._text_cache
        if len(cache) > TEXT_CACHE_SIZE:
            cache.clear()
        parts = []
        for it in items:
            v = cache.get(it)
            if v is None:
                v = cache[it] = self._text_verts(*it)
            parts.append(v)
        data = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        if len(data) == 0:
            return
        GL.glUseProgram(self.text_prog)
        GL.glUniformMatrix4fv(self.text_mvp, 1, GL.GL_TRUE, mvp.astype(np.float32))
        GL.glActiveTexture(GL.GL_TEXTURE0)
        GL.glBindTexture(GL.GL_TEXTURE_2D, self.font_tex)
        GL.glBindVertexArray(self.text_vao)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, self.text_vbo)
        GL.glBufferData(GL.GL_ARRAY_BUFFER, data.nbytes, data, GL.GL_STREAM_DRAW)
        GL.glDrawArrays(GL.GL_TRIANGLES, 0, len(data))

    # -- one frame ----------------------------------------------------------------------

    def draw(self, loop, now: float) -> bool:
        glfw, GL = self.glfw, self.gl
        glfw.poll_events()
        if glfw.window_should_close(self.window):
            self.closed = True
            return False
        w, h = glfw.get_framebuffer_size(self.window)
        if w == 0 or h == 0:  # minimised
            return True
        glfw.make_context_current(self.window)
        GL.glViewport(0, 0, w, h)
        GL.glClearColor(0.08, 0.08, 0.1, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT | GL.GL_DEPTH_BUFFER_BIT)

        vp = scene.view_projection(w, h)
        GL.glEnable(GL.GL_DEPTH_TEST)
        self._draw(self.grid, GL.GL_LINES, vp)
        avatars = avatars_of(loop)
        tris = [scene.avatar_triangles(k, a) for k, a in avatars.items()]
        tris += [scene.avatar_triangles("peer", a, anchor) for anchor, a in peers_of(loop)]
        q3_players = q3_players_of(loop)
        tris += [scene.avatar_triangles("q3peer", a, anchor) for anchor, a, _ in q3_players]
        sauer_players = sauer_players_of(loop)
        tris += [scene.avatar_triangles("sauerpeer", a, anchor) for anchor, a, _ in sauer_players]
        self._draw(np.vstack(tris), GL.GL_TRIANGLES, vp)
        GL.glDisable(GL.GL_DEPTH_TEST)

        px = scene.ortho(w, h)
        text: list[tuple[float, float, str, tuple]] = []
        for kind, a in avatars.items():
            at = scene.project(vp, (scene.ANCHORS[kind][0], 2.05, scene.ANCHORS[kind][2]), w, h)
            labels = [scene.LABELS[kind] + ("" if a.head is not None else " (NO HEAD)")]
            if kind == "q3" and a.head is not None:
                labels.append("AS OTHERS SEE YOU")
                if not _q3_head_on_wire(loop):
                    labels.append("(IF THE SERVER HAD VR)")  # a 16-bit link carries no head
            if at is None:
                continue
            for i, label in enumerate(labels):
                text.append((at[0] - len(label) * glfont.CELL_W * TEXT_SCALE / 2,
                             at[1] + i * (glfont.CELL_H * TEXT_SCALE + 2), label, scene.COLORS[kind][0]))
        for anchor, _, label in q3_players:
            at = scene.project(vp, (anchor[0], anchor[1] + 0.3, anchor[2]), w, h)
            if at is not None:
                text.append((at[0] - len(label) * glfont.CELL_W * TEXT_SCALE / 2, at[1], label, scene.Q3_PEER_COLORS[0]))
        for anchor, _, label in sauer_players:
            at = scene.project(vp, (anchor[0], anchor[1] + 0.3, anchor[2]), w, h)
            if at is not None:
                text.append((at[0] - len(label) * glfont.CELL_W * TEXT_SCALE / 2, at[1], label,
                             scene.SAUER_PEER_COLORS[0]))
        if now >= self._hud_due or self.capture_next:
            # Text a person reads: 10 refreshes a second, not one per frame (percentiles, statuses).
            self._hud, self._hud_due = hud_lines(loop, now), now + HUD_PERIOD
        text += self._hud
        lines = self._plots(loop, now, w, h, text)
        self._draw(lines, GL.GL_LINES, px)
        self._draw_text(text, px)

        if self.capture_next:
            self.capture_next = False
            GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
            raw = GL.glReadPixels(0, 0, w, h, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
            self.last_pixels = np.frombuffer(raw, dtype=np.uint8).reshape(h, w, 3)[::-1].copy()
        glfw.swap_buffers(self.window)
        return True

    def _plots(self, loop, now: float, w: int, h: int, text: list) -> np.ndarray:
        series = loop.telemetry.head_series.values()
        pw, ph = (w - 60) / 2, min(140.0, h * 0.22)
        y = h - ph - 20
        out = []
        for i, (title, col_sent, col_seen, lim) in enumerate(
                (("HEAD PITCH SENT/SEEN (DEG, + DOWN)", 1, 3, 90.0), ("HEAD YAW SENT/SEEN (DEG, + LEFT)", 2, 4, 180.0))):
            rect = (20 + i * (pw + 20), y, pw, ph)
            out.append(scene.rect_lines(rect, DIM))
            mid = rect[1] + ph / 2
            out.append(np.array([(rect[0], mid, 0, *DIM), (rect[0] + pw, mid, 0, *DIM)], dtype=np.float32))
            out.append(scene.plot_lines(series, now, self.plot_seconds, rect, 0, col_sent, -lim, lim, SENT_COLOR))
            out.append(scene.plot_lines(series, now, self.plot_seconds, rect, 0, col_seen, -lim, lim, SEEN_COLOR))
            text.append((rect[0] + 6, rect[1] + 6, f"{title}  +-{lim:g}  LAST {self.plot_seconds:g} S", DIM))
        return np.vstack(out)

    def screenshot(self, path: Path) -> Path:
        if self.last_pixels is None:
            raise MirrorError("no frame captured yet")
        return write_png(path, self.last_pixels)

    def close(self) -> None:
        if not self.closed or self.window is not None:
            self.glfw.destroy_window(self.window)
            self.window = None
            self.closed = True


def _q3_head_on_wire(loop) -> bool:
    q3 = next((s for s in loop.sinks if s.name == "q3"), None)
    return q3 is not None and q3.head_bits_on_wire


def avatars_of(loop) -> dict[str, scene.AvatarPose]:
    """The three avatars from the loop's latest state and its sinks' far-side views."""
    out: dict[str, scene.AvatarPose] = {}
    st = loop.state
    if st is None:
        return {k: scene.AvatarPose(None) for k in scene.ANCHORS}
    hp = st.head.position

    def rel(pose):
        if not pose.valid:
            return None
        p = pose.position
        return (p[0] - hp[0], p[1] - hp[1], p[2] - hp[2]), pose.orientation
    out["tracked"] = scene.AvatarPose(st.head.orientation if st.head.orientation_valid else None,
                                      rel(st.right_grip), rel(st.left_grip))
    sinks = {s.name: s for s in loop.sinks}
    q3 = sinks.get("q3")
    if q3 is not None and q3.intent is not None:
        weapon = q3.others_view()[:2]  # as other players see it: whole degrees
        head = None
        if q3.far_head_smoothed is not None:
            p, y, r = q3.far_head_smoothed
            head = scene.q3_head_quat(p, y, r, weapon[1])
        out["q3"] = scene.AvatarPose(head, aim=weapon)
    else:
        out["q3"] = scene.AvatarPose(None)
    ns = sinks.get("netsync")
    body = getattr(ns, "seen", None)
    if body is not None and body.head is not None:
        out["netsync"] = scene.netsync_avatar(body.head.pos, body.head.rot, body.right, body.left)
    else:
        out["netsync"] = scene.AvatarPose(None)
    sauer = sinks.get("sauer")
    rec = getattr(sauer, "seen", None)
    if rec is not None:  # our N_POS as a receiving game decodes it: whole degrees
        turn = sauer.anchor.turn if sauer.anchor is not None else 0.0
        out["sauer"] = scene.AvatarPose(scene.sauer_head_quat(rec.yaw, rec.pitch, rec.roll_deg, turn))
    else:
        out["sauer"] = scene.AvatarPose(None)
    return out


def sauer_players_of(loop) -> list[tuple[tuple[float, float, float], scene.AvatarPose, str]]:
    """Everybody else on the Sauerbraten server, from their latest relayed N_POS: (anchor, avatar,
    label); a walking one (move/strafe set) is labelled so."""
    sauer = next((s for s in loop.sinks if s.name == "sauer"), None)
    own = getattr(sauer, "seen", None)
    if own is None or not sauer.others:
        return []
    turn = sauer.anchor.turn if sauer.anchor is not None else 0.0
    out = []
    for p in sauer.others.values():
        rec = p.record
        if rec is None:
            continue
        label = (p.name or f"CLIENT {p.cn}") + (" WALKING" if rec.move or rec.strafe else "")
        out.append((scene.sauer_peer_anchor(own.eye(), rec.eye(), turn),
                    scene.AvatarPose(scene.sauer_head_quat(rec.yaw, rec.pitch, rec.roll_deg, turn)), label))
    return out


def peers_of(loop) -> list[tuple[tuple[float, float, float], scene.AvatarPose]]:
    """Everybody else in the NetSync room, as the server broadcast them."""
    ns = next((s for s in loop.sinks if s.name == "netsync"), None)
    if ns is None or not ns.others:
        return []
    own = ns.seen.head.pos if ns.seen is not None and ns.seen.head is not None else None
    out = []
    for body in ns.others.values():
        if body.head is None:
            continue
        out.append((scene.peer_anchor(own, body.head.pos),
                    scene.netsync_avatar(body.head.pos, body.head.rot, body.right, body.left)))
    return out


def q3_players_of(loop) -> list[tuple[tuple[float, float, float], scene.AvatarPose, str]]:
    """Everybody else on the Quake 3 server, as its latest snapshot relayed them: (anchor, avatar,
    label)."""
    q3 = next((s for s in loop.sinks if s.name == "q3"), None)
    ents = getattr(q3, "others", None)
    if ents is None or not ents.players:
        return []
    out = []
    for p in ents.players:
        head = None if p.head is None else (p.head.pitch, p.head.yaw, p.head.roll)
        label = plain_name(p.name) or f"CLIENT {p.client_num}"
        out.append((scene.q3_peer_anchor(ents.origin, p.origin), scene.q3_player_avatar(p.angles, head),
                    label + (" VR" if head is not None else "") + (" (DEAD)" if p.dead else "")))
    return out


_COLOR_CODE = re.compile(r"\^[^^]")


def plain_name(name: str) -> str:
    """A Quake 3 name without its colour codes (^1 … ^7, ^x: any character but ^ after the ^)."""
    return _COLOR_CODE.sub("", name)


def _q3_far_lines(q3) -> list[tuple[str, tuple]]:
    """The far side of our last usercmd in numbers (MODEL), and who else is on the server (RELAYED)."""
    lines = []
    far = q3.far_side
    if far is not None:
        model = vrhead.RECEIVER_NAMES[far.receiver].upper()
        seen = q3.receiver_seen
        if seen is not None:  # another VR player's relayed head told which build the server runs
            model += f", SEEN ON {plain_name(seen[1]) or 'ANOTHER PLAYER'}"
        head = ("NO HEAD BITS" if far.pitch is None else
                f"PITCH {far.pitch:+.2f}° YAW OFFSET {far.yaw_offset:+.2f}° (SENT {far.sent_offset:+.2f}°)")
        lines.append((f"         FAR SIDE (MODEL: {model}): {head}", DIM))
        lines.append((f"         ROLL: YOUR PLAYERSTATE {far.roll_own:+.3f}°, OTHERS SEE {far.roll_others:+.0f}° (SNAPVECTOR)",
                      DIM))
    ents = q3.others
    if ents is not None and ents.players:
        names = ", ".join(plain_name(p.name) + (" (VR)" if p.head is not None else "") for p in ents.players)
        lines.append((f"         PLAYERS {len(ents.players)} (RELAYED): {names}"[:100], DIM))
    return lines


def hud_lines(loop, now: float) -> list[tuple[float, float, str, tuple]]:
    tel = loop.telemetry
    cost, wire = tel.frame_cost.percentile(50), tel.latency.percentile(50)
    lines = [(f"HEADCAST  FRAME {tel.frames}  COST {0 if cost is None else cost * 1000:.2f} MS"
              f"  MOTION-TO-WIRE {'-' if wire is None else f'{wire * 1000:.2f} MS'}"
              f"  TRACKING {'OK' if loop.frame is not None and loop.frame.head.valid else 'LOST'}", WHITE)]
    for s in loop.sinks:
        st = s.status(now)
        err = "" if st.error_deg is None else f"  ERR {st.error_deg:.2f}°"
        if st.ping_ms is not None:
            err = f"  {st.label.upper()} {st.ping_ms:.0f} MS{err}"
        lines.append((f"{st.name.upper():8} {st.state.upper():10} {st.send_hz:5.1f}/S {st.bytes_per_s / 1000:6.2f} KB/S"
                      f"  {st.packed}{err}", WHITE))
        if st.detail:
            lines.append((f"         {st.detail}", DIM))
        if s.name == "q3":
            lines += _q3_far_lines(s)
    step = glfont.CELL_H * TEXT_SCALE + 2
    return [(12.0, 10.0 + i * step, t, c) for i, (t, c) in enumerate(lines)]
