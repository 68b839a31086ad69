"""The mirror takes input as events: a click quicker than a drawn frame (press and release in
the same event poll, as an instant click or a touchpad tap gives) switches the plot tab, and a
tap of space pauses the plots. Real X input under Xvfb (XTEST: mirror_input_shot.py). With the
buttons sampled once per drawn frame, as before, none of the four clicks switched a tab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

pytestmark = pytest.mark.display


@pytest.fixture(scope="module")
def result(xvfb_display, tmp_path_factory):
    out = tmp_path_factory.mktemp("mirror_input") / "input.json"
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mirror_input_shot.py")), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(out.read_text())


def test_a_click_within_one_frame_switches_the_tab(result):
    clicks = result["clicks"]
    assert len(clicks) == 4
    for c in clicks:
        assert c["before"] != c["want"], c  # each click asks for another tab...
        assert c["shown"] == c["want"], c  # ...and gets it


def test_a_tap_of_space_pauses_the_plots(result):
    assert result["space"] == {"before": False, "after": True}


def test_a_panel_row_shows_its_precise_terms_on_hover(result):
    """The panel's words are plain; the code's terms are the hovered row's tooltip."""
    assert result["tooltip_before"] == ""
    assert "ANGLE2SHORT" in result["tooltip"], result
