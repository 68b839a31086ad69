"""Dear ImGui (imgui-bundle) in the mirror window: context, fonts, input, renderer, text records.

The renderer is imgui-bundle's native OpenGL 3 backend (C++: a frame's UI costs well under a
millisecond of Python). Input is fed from our own glfw window rather than through imgui's glfw
backend: that backend would need imgui-bundle's own libglfw, and the window is pyGLFW's (whose X11
variant the XR GL session shares). It arrives as events, not as a sampled state: glfw's cursor,
button, wheel, focus and key callbacks (run inside the loop's `poll_events`, 90 times a second)
queue what happened, in order, and the next drawn frame (at most 30 a second) hands the queue to
ImGui's event API (`io.add_mouse_button_event` …), whose input queue spreads a press and its
release over two frames — so a click quicker than a frame (a tap on a touchpad) still clicks.

Fonts: DejaVu Sans Mono (Latin, Greek, Cyrillic, symbols: the numbers keep their columns) with
Droid Sans Fallback merged in for CJK (a Japanese room name), both from Debian packages that
scripts/setup.sh installs (fonts-dejavu-core, fonts-droid-fallback: 4 MB, where Noto CJK is
~300 MB). ImGui 1.92 rasterises glyphs on demand, so a large fallback costs nothing until a
glyph is drawn, and any size is one push_font away.

Every text the mirror draws goes through `UiText.text`/`label`, which records its box (window
pixels) with the window that clips it: the layout tests read these boxes and check them against
the pixels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from imgui_bundle import imgui, implot

FONT_DIRS = (Path("/usr/share/fonts/truetype"), Path("/usr/share/fonts/opentype"), Path("/usr/share/fonts"))
MOUSE_BUTTONS = 5  # ImGuiMouseButton_COUNT
MAX_EVENTS = 1024  # input events kept between two drawn frames
MAIN_FONTS = ("dejavu/DejaVuSansMono.ttf", "DejaVuSansMono.ttf")
FALLBACK_FONTS = ("droid/DroidSansFallbackFull.ttf", "DroidSansFallbackFull.ttf")


def find_font(names: tuple[str, ...]) -> Path | None:
    """The first of `names` under the system font folders ($HEADCAST_FONT_DIR first)."""
    dirs = ([Path(os.environ["HEADCAST_FONT_DIR"])] if os.environ.get("HEADCAST_FONT_DIR") else []) + list(FONT_DIRS)
    for d in dirs:
        for n in names:
            if (d / n).is_file():
                return d / n
    return None


def rgba(c, a: float = 1.0) -> imgui.ImVec4:
    return imgui.ImVec4(c[0], c[1], c[2], a)


def u32(c, a: float = 1.0) -> int:
    return imgui.color_convert_float4_to_u32(rgba(c, a))


@dataclass(frozen=True, slots=True)
class TextBox:
    """One drawn text: its box and the rect that clips it (both window pixels: x0, y0, x1, y1)."""

    text: str
    box: tuple[float, float, float, float]
    clip: tuple[float, float, float, float]
    color: tuple[float, float, float]


@dataclass
class UiText:
    """The frame's text records."""

    boxes: list[TextBox] = field(default_factory=list)

    def text(self, s: str, color=(0.92, 0.92, 0.92), wrap: bool = False) -> None:
        """One text item in the current window (wrapped at the window's right edge if asked)."""
        if wrap:
            imgui.push_text_wrap_pos(0.0)
        imgui.push_style_color(imgui.Col_.text, rgba(color))
        imgui.text_unformatted(s)
        imgui.pop_style_color()
        if wrap:
            imgui.pop_text_wrap_pos()
        a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self._record(s, (a.x, a.y, b.x, b.y), color)

    def record_item(self, s: str, color=(0.92, 0.92, 0.92)) -> None:
        """The last item (a button, a tab) by its rect: its text is inside it."""
        a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self._record(s, (a.x, a.y, b.x, b.y), color)

    def _record(self, s: str, box, color) -> None:
        dl = imgui.get_window_draw_list()
        c0, c1 = dl.get_clip_rect_min(), dl.get_clip_rect_max()
        self.boxes.append(TextBox(s, box, (c0.x, c0.y, c1.x, c1.y), tuple(color)))

    def label(
        self, dl, x: float, y: float, runs: list[tuple[str, tuple]], clip, backdrop: bool = False
    ) -> tuple[float, float, float, float]:
        """Coloured runs of text on a draw list at (x, y) (top-left); recorded with `clip`. A
        backdrop (the window's dark, translucent) keeps a label legible over the 3D scene."""
        x0 = x
        h = imgui.get_font_size()
        if backdrop:
            w = sum(imgui.calc_text_size(s).x for s, _ in runs)
            dl.add_rect_filled((x - 2, y), (x + w + 2, y + h), u32((0.08, 0.08, 0.1), 0.6))
        for s, col in runs:
            dl.add_text((x, y), u32(col), s)
            x += imgui.calc_text_size(s).x
        box = (x0, y, x, y + h)
        self.boxes.append(TextBox("".join(s for s, _ in runs), box, clip, tuple(runs[0][1]) if runs else (1, 1, 1)))
        return box


class Ui:
    """ImGui + ImPlot contexts bound to the current GL context."""

    def __init__(self, window, glfw) -> None:
        self.glfw, self.window = glfw, window
        self.ctx = imgui.create_context()
        self.plot_ctx = implot.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini written into the user's working directory
        io.set_log_filename("")
        main, fallback = find_font(MAIN_FONTS), find_font(FALLBACK_FONTS)
        self.fonts = [str(p) for p in (main, fallback) if p is not None]
        if main is not None:
            io.fonts.add_font_from_file_ttf(str(main), 15.0)
        else:  # ImGui's built-in ProggyClean: ASCII only; `doctor` names the missing package
            io.fonts.add_font_default()
        if fallback is not None:
            cfg = imgui.ImFontConfig()
            cfg.merge_mode = True
            io.fonts.add_font_from_file_ttf(str(fallback), 15.0, cfg)
        style = imgui.get_style()
        style.window_rounding = 0.0
        style.window_border_size = 1.0
        style.item_spacing = imgui.ImVec2(6, 3)
        style.window_padding = imgui.ImVec2(6, 4)
        style.window_min_size = imgui.ImVec2(1, 1)  # the layout sizes every window itself
        imgui.backends.opengl3_init("#version 330")
        self.text = UiText()
        self.space_pressed = False  # space went down since the last drawn frame (the Pause toggle)
        self.events: list[tuple] = []  # input since the last drawn frame, in order (the callbacks')
        self._install_callbacks()

    def _install_callbacks(self) -> None:
        """glfw's input callbacks on our window: each queues its event for the next drawn frame."""
        glfw, win, put = self.glfw, self.window, self._put
        # pyGLFW keeps a reference to each callback for as long as it is set.
        glfw.set_cursor_pos_callback(win, lambda _w, x, y: put(("pos", float(x), float(y))))
        glfw.set_cursor_enter_callback(win, lambda _w, entered: None if entered else put(("leave",)))
        glfw.set_mouse_button_callback(
            win,
            lambda _w, b, action, _m: (
                put(("button", b, action == glfw.PRESS)) if 0 <= b < MOUSE_BUTTONS and action != glfw.REPEAT else None
            ),
        )
        glfw.set_scroll_callback(win, lambda _w, dx, dy: put(("wheel", float(dx), float(dy))))
        glfw.set_window_focus_callback(win, lambda _w, focused: put(("focus", bool(focused))))
        glfw.set_key_callback(
            win,
            lambda _w, key, _sc, action, _m: (
                put(("space",)) if key == glfw.KEY_SPACE and action == glfw.PRESS else None
            ),
        )

    def _put(self, ev: tuple) -> None:
        q = self.events
        if q and ev[0] == "pos" and q[-1][0] == "pos":
            q[-1] = ev  # moves between two other events: only where the cursor ended matters
        elif len(q) < MAX_EVENTS:  # a window not drawn for long (minimised) keeps the first ones
            q.append(ev)

    def feed_events(self, io) -> None:
        """The queued input, in order, as ImGui events (ImGui's queue trickles a press and its
        release over two frames: a click within one frame still clicks)."""
        q, self.space_pressed = self.events, False
        for ev in q:
            kind = ev[0]
            if kind == "pos":
                io.add_mouse_pos_event(ev[1], ev[2])
            elif kind == "button":
                io.add_mouse_button_event(ev[1], ev[2])
            elif kind == "wheel":
                io.add_mouse_wheel_event(ev[1], ev[2])
            elif kind == "leave":
                io.add_mouse_pos_event(-imgui.FLT_MAX, -imgui.FLT_MAX)
            elif kind == "focus":
                io.add_focus_event(ev[1])
            elif kind == "space":
                self.space_pressed = True
        q.clear()

    def missing_glyphs(self, text: str) -> str:
        """The characters of `text` no loaded font has (drawn as '?')."""
        imgui.set_current_context(self.ctx)
        font = imgui.get_io().fonts.fonts[0]
        return "".join(sorted({c for c in text if not c.isspace() and not font.is_glyph_in_font(ord(c))}))

    def new_frame(self, width: int, height: int, fb_width: int, fb_height: int, dt: float) -> None:
        imgui.set_current_context(self.ctx)
        implot.set_current_context(self.plot_ctx)
        io = imgui.get_io()
        io.display_size = imgui.ImVec2(width, height)
        io.display_framebuffer_scale = imgui.ImVec2(fb_width / max(width, 1), fb_height / max(height, 1))
        io.delta_time = max(dt, 1e-4)
        self.feed_events(io)
        imgui.backends.opengl3_new_frame()
        imgui.new_frame()
        self.text = UiText()

    def render_gl(self) -> None:
        """The last frame's draw data (imgui.render() ran) as GL commands."""
        imgui.set_current_context(self.ctx)
        imgui.backends.opengl3_render_draw_data(imgui.get_draw_data())

    def close(self) -> None:
        imgui.set_current_context(self.ctx)
        imgui.backends.opengl3_shutdown()
        implot.destroy_context(self.plot_ctx)
        imgui.destroy_context(self.ctx)
