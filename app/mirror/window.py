"""The desktop mirror window: glfw + PyOpenGL (GL 3.3 core) for the 3D scene, Dear ImGui + ImPlot
(imgui-bundle) for the header, panels, plots, room maps and labels.

Runs on the loop's thread and skips frames: it draws at most `max_hz` times a second (30 by
default: a drawn frame costs a few milliseconds of software GL, so drawing every 90 Hz frame
would hold the pose loop back), and between draws only pumps the window's events. Never waits
for vsync (the XR runtime paces the loop). When the XR session has an OpenGL binding it binds to
this window's context (pass `window` to XRSession), so there is one GL context in the process;
ImGui's renderer saves and restores the GL state it touches. Minimised: nothing drawn, events
still pumped. Closing the window ends the run. Space (or the Pause button) freezes the plots.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import struct
import sys
import zlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from headcast.app.errors import AppError
from headcast.app.mirror import panels as mp, scene, view as mv
from headcast.app.mirror.labels import Want, place, plain_name, q3_color_runs
from headcast.app.sinks.farside import FarSideTracker

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

MIRROR_HZ = 30.0  # mirror frames a second at most: at 90 Hz a mirror frame's work is spread over 3 loop frames
ROWS_PERIOD = 0.1  # s between rebuilds of the sink panel's text
BACKGROUND = (0.08, 0.08, 0.1)
LABEL_Y = 2.02  # m: where an avatar's label hangs (above the head)
PEER_LABEL_UP = 0.32  # m above another member's head centre: clear of its box
MAX_SCENE_PEERS = 16  # others drawn per protocol in the 3D view, nearest first (the room maps show all)


class MirrorError(AppError):
    pass


# Systems whose desktop is not an X11/Wayland server named in the environment: a logged-in user
# always has one there, and glfw.init() says when there is none (a service, an ssh session).
DESKTOP_PLATFORMS = ("win32", "cygwin", "darwin")


def display_available() -> bool:
    """Whether a mirror window can be tried: on Windows and macOS always (glfw decides), on other
    systems when DISPLAY or WAYLAND_DISPLAY names a display."""
    if sys.platform in DESKTOP_PLATFORMS:
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@contextlib.contextmanager
def glfw_started(glfw: Any) -> Iterator[list[str]]:
    """glfw.init() with GLFW's own error text caught (X11: "Failed to open display :99") instead of
    pyGLFW's warning, which would print a stack location beside our line: MirrorError says why it
    could not start. The block gets the list later GLFW errors go to, until it ends."""
    errors: list[str] = []
    glfw.set_error_callback(
        lambda code, text: errors.append(text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text))
    )
    try:
        if not glfw.init():
            where = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "of this desktop"
            raise MirrorError(f"cannot open the display {where} ({'; '.join(errors) or 'glfw could not start'})")
        yield errors
    finally:
        glfw.set_error_callback(None)  # pyGLFW's default again


def write_png(path: Path, rgb: np.ndarray) -> Path:
    """A plain RGB8 PNG (no extra dependency): rows top first."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )
    path = Path(path)
    path.write_bytes(png)
    return path


class MirrorWindow:
    def __init__(
        self,
        width: int = 1280,
        height: int = 720,
        plot_seconds: float = 5.0,
        title: str = "headcast mirror",
        visible: bool = True,
        max_hz: float = MIRROR_HZ,
    ) -> None:
        os.environ.setdefault("PYGLFW_LIBRARY_VARIANT", "x11")
        # Software GL (Mesa llvmpipe) rasterises with one thread per core by default: while it draws
        # the mirror it takes every core and preempts the pose loop (30 % of 90 Hz slots missed at
        # 1280x720 on a 2-core machine under load, 0 % with one thread: bench_mirror.py). Read when
        # the driver loads; GPU drivers ignore it.
        os.environ.setdefault("LP_NUM_THREADS", "1")
        import glfw
        from OpenGL import GL

        self.glfw, self.gl = glfw, GL
        self.plot_seconds = plot_seconds
        self.interval = 1.0 / max_hz
        self.capture_next = False
        self.last_pixels: np.ndarray | None = None
        self.last_text: list = []  # the text boxes of the last drawn frame (mirror_ui.TextBox)
        self.last_layout: dict = {}  # the areas of the last drawn frame (name → rect)
        self.drawn = 0  # frames drawn (the others only pumped events)
        self.last_scene: tuple = ()  # (scene rect, anchors, view-projection) of the last drawn frame
        self.scene_left = 0  # others not drawn in the last frame's 3D view (past MAX_SCENE_PEERS)
        self._next_draw = -math.inf
        self._last_draw: float | None = None
        self._unswapped = False  # a flushed frame waits for its swap (draw())
        self._fence = None  # signalled when the flushed frame is rasterised
        self._rows: tuple = ([], 0)
        self._rows_due = -math.inf
        self._rows_key: tuple[float, float, float] | None = None
        self._pending: tuple | None = None  # a built frame whose GL commands go out next loop frame
        if not display_available():
            raise MirrorError("no display (DISPLAY is not set): use --no-mirror, or run under xvfb-run")
        with glfw_started(glfw) as errors:
            glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
            glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
            glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
            glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
            glfw.window_hint(glfw.VISIBLE, visible)
            # Any: glfw's window pointer, None once closed (glfw's calls are annotated with the pointer)
            self.window: Any = glfw.create_window(width, height, title, None, None)
            if not self.window:
                glfw.terminate()
                raise MirrorError(
                    "cannot create an OpenGL 3.3 window (" + ("; ".join(errors) or "driver too old?") + ")"
                )
        glfw.make_context_current(self.window)
        glfw.swap_interval(0)  # the XR runtime paces the loop, not the desktop's vsync
        self._init_gl()
        from headcast.app.mirror.ui import Ui

        self.ui = Ui(self.window, glfw)
        self.tracker = FarSideTracker(plot_seconds)
        self.panel = mp.PanelState()
        self.closed = False

    # -- GL setup -------------------------------------------------------------------------

    def _init_gl(self) -> None:
        GL = self.gl
        from OpenGL.GL import shaders

        self.color_prog = shaders.compileProgram(
            shaders.compileShader(_COLOR_VS, GL.GL_VERTEX_SHADER),
            shaders.compileShader(_COLOR_FS, GL.GL_FRAGMENT_SHADER),
        )
        self.color_mvp = GL.glGetUniformLocation(self.color_prog, "mvp")
        self.color_vao, self.color_vbo = GL.glGenVertexArrays(1), GL.glGenBuffers(1)
        GL.glBindVertexArray(self.color_vao)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, self.color_vbo)
        for i, offset in enumerate((0, 12)):
            GL.glEnableVertexAttribArray(i)
            GL.glVertexAttribPointer(i, 3, GL.GL_FLOAT, GL.GL_FALSE, 24, ctypes.c_void_p(offset))
        GL.glBindVertexArray(0)
        self.grid = scene.grid_lines()

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

    # -- one frame ----------------------------------------------------------------------

    def draw(self, loop, now: float) -> bool:
        """One loop frame's share of the mirror. A mirror frame is spread over loop frames so none
        holds the pose loop back: when due, (1) the UI and the scene's geometry (Python); at the
        next loop frame (2) the GL commands and a flush — Mesa's llvmpipe rasterises in its own
        threads from there —; (3) the swap when the next mirror frame is due and the frame's fence
        says it is finished (else at a later loop frame: the mirror slows down, never the loop),
        by then a copy. A capture (capture_next) draws, reads and swaps at once."""
        glfw = self.glfw
        glfw.poll_events()
        if glfw.window_should_close(self.window):
            self.closed = True
            return False
        st = loop.state
        if st is not None and st.snapped:  # every loop frame: a snap may fall between drawn frames
            self.panel.snap_at, self.panel.snap_deg = now, st.snapped
        self.tracker.update(loop, now)  # every loop frame: each matched pair and transient is seen
        capture = self.capture_next
        if self._pending is not None:
            glfw.make_context_current(self.window)
            self._gl(*self._pending)
            self._pending = None
            self._unswapped = True
            if not capture:
                return True
        if now < self._next_draw and not capture:
            return True
        if self._unswapped:
            if not capture and not self._rasterised():
                return True  # still being rasterised: swapping now would wait for it; next loop frame
            glfw.swap_buffers(self.window)
            self._unswapped = False
            self.drawn += 1
        self._next_draw = max(self._next_draw + self.interval, now + self.interval / 2)
        w, h = glfw.get_window_size(self.window)
        fw, fh = glfw.get_framebuffer_size(self.window)
        if w == 0 or h == 0 or fw == 0 or fh == 0:  # minimised
            return True
        glfw.make_context_current(self.window)
        dt = self.interval if self._last_draw is None else now - self._last_draw
        self._last_draw = now
        self._pending = self._frame(loop, now, w, h, fw, fh, dt)
        if capture:
            GL = self.gl
            self._gl(*self._pending)
            self._pending = None
            self.capture_next = False
            GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
            raw = GL.glReadPixels(0, 0, fw, fh, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
            self.last_pixels = np.frombuffer(raw, dtype=np.uint8).reshape(fh, fw, 3)[::-1].copy()
            glfw.swap_buffers(self.window)
            self.drawn += 1
        return True

    def _frame(self, loop, now: float, w: int, h: int, fw: int, fh: int, dt: float) -> tuple[Any, ...]:
        from imgui_bundle import imgui

        ui, panel, tracker = self.ui, self.panel, self.tracker
        views = tracker.views()
        avatars = mv.avatars(loop, views, now)
        rooms = mv.rooms(loop)
        sinks = mv.shown_sinks(loop)

        ui.new_frame(w, h, fw, fh, dt)
        if ui.space_pressed:
            self.toggle_pause()
        imgui.push_font(None, mp.font_size(w, h))
        t = ui.text
        line_h = imgui.get_text_line_height_with_spacing()
        pad = imgui.get_style().window_padding
        lay: dict[str, tuple[float, float, float, float]] = {}

        header = mp.pack_parts(mp.header_parts(loop, now, panel, 1.0 / self.interval, tracker.paused), w - 2 * pad.x)
        bar_h = math.ceil(len(header) * line_h + 2 * pad.y)
        strip_h = max(170.0, round(h * 0.36))
        left_w = round(w * (0.56 if w < 1100 else 0.5))
        mid = (bar_h, h - strip_h)
        lay["header"] = (0, 0, w, bar_h)
        lay["scene"] = (0, mid[0], left_w, mid[1])
        lay["sinks"] = (left_w, mid[0], w, mid[1])
        maps_w = 0 if not rooms else round(w * (0.36 if w >= 1000 else 0.4))
        lay["plots"] = (0, mid[1], w - maps_w, h)
        if maps_w:
            lay["rooms"] = (w - maps_w, mid[1], w, h)

        mp.begin_fixed("##header", lay["header"])
        mp.draw_rows(t, header, 0, pad.x)
        imgui.end()

        mp.begin_fixed("##sinks", lay["sinks"])
        inner_w = lay["sinks"][2] - lay["sinks"][0] - 2 * pad.x
        key = (inner_w, lay["sinks"][3] - lay["sinks"][1], line_h)
        if now >= self._rows_due or key != self._rows_key or self.capture_next:
            # Text a person reads: 10 refreshes a second are plenty (wrapping it costs a millisecond).
            statuses = {s.name: s.status(now) for s in sinks}
            links = {s.name: tracker.link(s.name) for s in sinks}
            self._rows = mp.fit_rows(
                mp.sink_rows(loop, avatars, statuses, links, inner_w, sinks), key[1] - 2 * pad.y, line_h
            )
            self._rows_due, self._rows_key = now + ROWS_PERIOD, key
        rows, hidden = self._rows
        panel.tooltip = mp.draw_rows(t, rows, hidden, pad.x)
        panel.hidden_rows = hidden
        imgui.end()

        scene_rect = lay["scene"]
        sw, sh = int(scene_rect[2] - scene_rect[0]), int(scene_rect[3] - scene_rect[1])
        keys = ["tracked"] + [a.slot for a in avatars]
        anchors = scene.lineup(keys)
        vp = scene.fit_view(sw, sh, (len(keys) - 1) / 2 * scene.SPACING)
        tris, labels = self._scene(loop, avatars, anchors, vp, sw, sh)
        self.last_scene = (scene_rect, anchors, vp)  # where the scene's points land (tests project them)
        mp.begin_fixed("##scene", scene_rect, background=False)
        panel.hidden_labels = self._labels(t, labels, scene_rect)
        imgui.end()

        self._plots(t, lay["plots"], avatars, [s.name for s in sinks])
        if "rooms" in lay:
            self._rooms(t, lay["rooms"], rooms, {s.name: s for s in sinks})
        imgui.pop_font()
        imgui.render()  # the draw data stays valid until the next new_frame
        self.last_text = t.boxes
        self.last_layout = lay
        return w, h, fw, fh, scene_rect, vp, tris

    def _gl(self, w: int, h: int, fw: int, fh: int, scene_rect, vp, tris) -> None:
        """The frame's GL commands, then a flush (no wait): the 3D scene in its viewport, the UI over it."""
        GL, sw, sh = self.gl, int(scene_rect[2] - scene_rect[0]), int(scene_rect[3] - scene_rect[1])
        # The XR session may share this context and run between our loop frames: the window's own
        # framebuffer, whatever it left bound.
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        GL.glViewport(0, 0, fw, fh)
        GL.glDisable(GL.GL_SCISSOR_TEST)
        GL.glClearColor(*BACKGROUND, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT | GL.GL_DEPTH_BUFFER_BIT)
        sx, sy = fw / w, fh / h  # window → framebuffer pixels (HiDPI)
        GL.glViewport(int(scene_rect[0] * sx), int(fh - scene_rect[3] * sy), int(sw * sx), int(sh * sy))
        GL.glEnable(GL.GL_DEPTH_TEST)
        self._draw(self.grid, GL.GL_LINES, vp)
        self._draw(tris, GL.GL_TRIANGLES, vp)
        GL.glDisable(GL.GL_DEPTH_TEST)
        GL.glViewport(0, 0, fw, fh)
        self.ui.render_gl()
        self._fence = GL.glFenceSync(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
        GL.glFlush()

    def _rasterised(self) -> bool:
        """Whether the flushed frame is finished (its fence signalled), without waiting."""
        GL, fence = self.gl, self._fence
        if fence is None:
            return True
        glfw = self.glfw
        glfw.make_context_current(self.window)
        if GL.glClientWaitSync(fence, 0, 0) == GL.GL_TIMEOUT_EXPIRED:
            return False
        GL.glDeleteSync(fence)
        self._fence = None
        return True

    def toggle_pause(self) -> None:
        """Freeze the plots and the error readouts (recording goes on), or let them run again."""
        if self.tracker.paused:
            self.tracker.resume()
        else:
            self.tracker.pause()

    # -- the 3D scene and its labels --------------------------------------------------------

    def _scene(self, loop, avatars, anchors, vp, sw, sh):
        """Triangles of every avatar, and the labels to hang over them: (world point, lines, keep)."""
        tracked = mv.tracked(loop)
        tris = [scene.avatar_triangles("tracked", tracked, anchors["tracked"])]
        labels = []
        labels.append(
            (
                anchors["tracked"],
                [[("you (tracked)", mp.WHITE)]] + ([[("TRACKING LOST", mp.RED)]] if tracked.head is None else []),
                9,
            )
        )
        for a in avatars:
            at = anchors[a.slot]
            tris.append(scene.avatar_triangles(a.slot, a.pose, at))
            second = [(a.source, mp.SOURCE_COLORS[a.source])]
            if a.not_sent:
                second.append((" · NOT SENT", mp.AMBER))
            if a.view.transient:
                second.append((f" · {a.view.transient}", mp.AMBER))
            elif a.pose.head is None:
                second.append((" · no head", mp.RED))
            labels.append((at, [[(a.title, scene.COLORS[a.slot][0])], second], 8))
        sinks = {s.name: s for s in loop.sinks}
        self.scene_left = 0
        for kind, base_key, peers in (
            ("peer", "netsync", _netsync_peers),
            ("q3peer", "q3", _q3_peers),
            ("sauerpeer", "sauer", _sauer_peers),
        ):
            s = sinks.get(base_key)
            if s is None or base_key not in anchors or not mv.shown(s):
                continue
            found = peers(s, anchors[base_key])
            if len(found) > MAX_SCENE_PEERS:
                # A crowd (a room of simulated clients): the nearest only — the squeeze towards the
                # avatar keeps their order — so a frame's geometry and labels stay a few milliseconds.
                bx, _, bz = anchors[base_key]
                found.sort(key=lambda f: math.hypot(f[0][0] - bx, f[0][2] - bz))
                self.scene_left += len(found) - MAX_SCENE_PEERS
                found = found[:MAX_SCENE_PEERS]
            for anchor, avatar, runs in found:
                tris.append(scene.avatar_triangles(kind, avatar, anchor))
                labels.append(((anchor[0], anchor[1] + PEER_LABEL_UP - (LABEL_Y - scene.HEAD_Y), anchor[2]), [runs], 3))
        return np.vstack(tris), [(p, lines, keep, vp, sw, sh) for p, lines, keep in labels]

    def _labels(self, t, labels, rect) -> int:
        from imgui_bundle import imgui

        dl = imgui.get_window_draw_list()
        line_h = imgui.get_text_line_height()
        wants, blocks = [], []
        for p, lines, keep, vp, sw, sh in sorted(labels, key=lambda x: -x[2]):
            at = scene.project(
                vp, (p[0], LABEL_Y, p[2]) if keep >= 8 else (p[0], p[1] + (LABEL_Y - scene.HEAD_Y), p[2]), sw, sh
            )
            if at is None:
                continue
            width = max(sum(mp.text_w(s) for s, _ in line) for line in lines)
            block_h = len(lines) * line_h
            wants.append(Want(rect[0] + at[0], rect[1] + at[1] - block_h, width, block_h))
            blocks.append(lines)
        area = (rect[0] + 2, rect[1] + 2, rect[2] - 2, rect[3] - 2)
        hidden = 0
        for lines, box in zip(blocks, place(wants, area)):
            if box is None:
                hidden += 1
                continue
            width = box[2] - box[0]
            for i, line in enumerate(lines):
                lw = sum(mp.text_w(s) for s, _ in line)
                t.label(dl, box[0] + (width - lw) / 2, box[1] + i * line_h, line, rect, backdrop=True)
        notes = []
        if hidden:
            notes.append(f"{hidden} label{'s' if hidden != 1 else ''} left out (no room)")
        if self.scene_left:
            notes.append(f"{self.scene_left} farther player{'s' if self.scene_left != 1 else ''} not drawn")
        if notes:
            note = ", ".join(notes) + ": see the room maps"
            t.label(dl, rect[0] + 4, rect[3] - line_h - 2, [(note, mp.DIM)], rect)
        return hidden

    # -- plots and room maps -------------------------------------------------------------------

    def _plots(self, t, rect, avatars, sinks: list[str]) -> None:
        from imgui_bundle import imgui

        tracker = self.tracker
        mp.begin_fixed("##plots", rect, inputs=True)
        label = "Resume" if tracker.paused else "Pause"
        if imgui.small_button(f"{label} (space)"):
            self.toggle_pause()
        t.record_item(f"{label} (space)")
        legend = (
            f"last {self.plot_seconds:g} s · white: sent · colour: seen "
            "(Quake degrees; what is compared: the line below)"
        )
        room = rect[2] - imgui.get_item_rect_max().x - 2 * imgui.get_style().item_spacing.x - 6
        if mp.text_w(legend) <= room:
            imgui.same_line()
            t.text(legend, mp.DIM)
        else:
            for line in mp.wrap_words(legend, rect[2] - rect[0] - 14):
                t.text(line, mp.DIM)
        t_end = tracker.now
        width = rect[2] - rect[0] - 14
        if imgui.begin_tab_bar("##views"):
            for a in avatars:
                title = a.title  # the source is on the avatar and the panel; a long tab is cut short
                shown = imgui.begin_tab_item_simple(f"{title}##{a.view.key}")
                t.record_item(title)
                if shown:
                    self.panel.tab = a.view.key
                    mp.plot_view(
                        t, tracker.series(a.view.key), a.view, scene.COLORS[a.slot][0], t_end, self.plot_seconds, width
                    )
                    imgui.end_tab_item()
            shown = imgui.begin_tab_item_simple("Latency")
            t.record_item("Latency")
            if shown:
                self.panel.tab = "latency"
                mp.plot_links(t, tracker, sinks, t_end, self.plot_seconds, width)
                imgui.end_tab_item()
            imgui.end_tab_bar()
        imgui.end()

    def _rooms(self, t, rect, rooms: dict, sinks: dict) -> None:
        from imgui_bundle import imgui

        mp.begin_fixed("##rooms", rect)
        line_h = imgui.get_text_line_height()
        top = rect[1] + 4
        for line in mp.wrap_words("the room as others see it (top-down, you in green)", rect[2] - rect[0] - 12):
            t.label(imgui.get_window_draw_list(), rect[0] + 6, top, [(line, mp.DIM)], rect)
            top += line_h
        top += 4
        n = len(rooms)
        width = (rect[2] - rect[0]) / n
        for i, (name, members) in enumerate(rooms.items()):
            r = (rect[0] + i * width, top, rect[0] + (i + 1) * width, rect[3] - 2)
            mp.draw_map(t, mv.room_title(sinks[name], members), members, r, mp.SINK_COLORS[name], q3_names=name == "q3")
        imgui.end()

    def screenshot(self, path: Path) -> Path:
        if self.last_pixels is None:
            raise MirrorError("no frame captured yet")
        return write_png(path, self.last_pixels)

    def close(self) -> None:
        if not self.closed or self.window is not None:
            if self.window is not None:
                self.glfw.make_context_current(self.window)
                self.ui.close()
                self.glfw.destroy_window(self.window)
            self.window = None
            self.closed = True


def _netsync_peers(ns, base):
    """Everybody else in the NetSync room, as the server broadcast them: (anchor, avatar, label runs)."""
    if ns.link is None or not ns.others:
        return []
    own = ns.seen.head.pos if ns.seen is not None and ns.seen.head is not None else None
    out = []
    for cn, body in sorted(ns.others.items()):
        if body.head is None:
            continue
        out.append(
            (
                scene.peer_anchor(base, own, body.head.pos),
                scene.netsync_avatar(body.head.pos, body.head.rot, body.right, body.left),
                [(f"client #{cn}", scene.PEER_COLORS[0])],
            )
        )
    return out


def _q3_peers(q3, base):
    """Everybody else on the Quake 3 server, as its latest snapshot relayed them."""
    ents = q3.others
    if ents is None or not ents.players:
        return []
    out = []
    for p in ents.players:
        head = None if p.head is None else (p.head.pitch, p.head.yaw, p.head.roll)
        runs = q3_color_runs(p.name, mp.WHITE) if plain_name(p.name).strip() else [(f"client {p.client_num}", mp.WHITE)]
        note = " ".join(n for n in ("VR" if head is not None else "", "(dead)" if p.dead else "") if n)
        if note:
            runs = runs + [(" " + note, scene.Q3_PEER_COLORS[1])]
        out.append((scene.q3_peer_anchor(base, ents.origin, p.origin), scene.q3_player_avatar(p.angles, head), runs))
    return out


def _sauer_peers(sauer, base):
    """Everybody else on the Sauerbraten server, from their latest relayed N_POS."""
    own = sauer.seen
    if own is None or not sauer.others:
        return []
    turn = sauer.anchor.turn if sauer.anchor is not None else 0.0
    out = []
    for p in sauer.others.values():
        rec = p.record
        if rec is None:
            continue
        runs = [(p.name or f"client {p.cn}", scene.SAUER_PEER_COLORS[1])]
        if rec.move or rec.strafe:
            runs.append((" walking", mp.DIM))
        out.append(
            (
                scene.sauer_peer_anchor(base, own.eye(), rec.eye(), turn),
                scene.AvatarPose(scene.sauer_head_quat(rec.yaw, rec.pitch, rec.roll_deg, turn)),
                runs,
            )
        )
    return out
