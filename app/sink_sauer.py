"""The Sauerbraten sink: the N_POS record this frame's head would produce (computed and shown).

Axes: Sauerbraten is x right, y forward, z up, in cube units; yaw 0 faces +y and grows to the
left, pitch grows looking up. From OpenXR: (x, y, z)_sauer = (x, −z, y)_xr · UNITS_PER_METRE,
yaw = Quake yaw, pitch = −Quake pitch. A player is 14 units from eye to feet (≈ 1.75 m), so a
cube unit is taken as 1/8 m.
"""
from __future__ import annotations

from headcast.app.rig import RigState
from headcast.app.telemetry import SinkStatus
from headcast.netcode.pose import quake_angles
from headcast.netcode.sauer.npos import NPos, decode_npos, encode_npos, make_npos
from headcast.xr.frame import TrackingFrame

UNITS_PER_METRE = 8.0
SEND_RATE = 30.0  # the game sends N_POS at most 30 times a second (reference sauerbraten.md §6)


def npos_for(state: RigState, cn: int = 0) -> NPos | None:
    """The record for this frame, None while the head is not tracked (no stale position)."""
    if not state.head.valid:
        return None
    x, y, z = state.head.position
    pitch, yaw, roll = quake_angles(state.head.orientation)
    vx, vz = state.move_world
    u = UNITS_PER_METRE
    return make_npos(cn, eye=(x * u, -z * u, y * u), yaw=yaw, pitch=-pitch, roll=roll,
                     vel=(vx * u, -vz * u, 0.0))


class SauerSink:
    """Nothing is sent (no Sauerbraten connection in this build), so the record is built from
    the state taken at the game's send rate only when something shows it (status, demo)."""

    name = "sauer"
    poll = None       # no socket
    observe = None    # the record is built when shown

    def __init__(self) -> None:
        self._state: RigState | None = None
        self._built: tuple[RigState | None, bytes] = (None, b"")
        self._next = 0.0

    @property
    def data(self) -> bytes:
        """The N_POS bytes of the last state taken (b"" while the head is not tracked)."""
        if self._built[0] is not self._state:
            record = None if self._state is None else npos_for(self._state)
            self._built = (self._state, b"" if record is None else encode_npos(record))
        return self._built[1]

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def seen(self) -> NPos | None:
        """The last record as a receiving game parses it."""
        data = self.data
        return decode_npos(data)[0] if data else None

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        if now < self._next:
            head = frame.head  # the stage pose: as valid as the world one, and no world pose built
            if head.position_valid and head.orientation_valid:
                return None
        self._next = now + 1.0 / SEND_RATE
        self._state = state
        return None

    def status(self, now: float) -> SinkStatus:
        s = self.seen
        if s is None:
            return SinkStatus(self.name, "offline", detail="tracking lost: no position record")
        return SinkStatus(self.name, "offline",
                          packed=f"N_POS {self.size} B yaw {s.yaw} pitch {s.pitch} roll {s.roll_deg}",
                          detail="computed only (no Sauerbraten connection in this build)",
                          values={"npos_bytes": self.size, "yaw": s.yaw, "pitch": s.pitch, "roll_deg": s.roll_deg})

    def close(self) -> None:
        pass
