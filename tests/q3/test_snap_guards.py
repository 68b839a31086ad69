"""The C snapshot decoder's and the pump's guards (found by a sanitizer review, reproduced here):
a sequence outside what the netchans pass is refused, not written to the ring (a negative index
corrupted it); a message past the netchan's MAX_MSGLEN is left to the Python core, which drops and
counts it as the Python netchan does (the C took it, uncounted); send_input's overflow raises
without first casting a NaN to an integer (undefined behaviour: run under UBSan with
-fsanitize=float-cast-overflow to see it)."""

import select
import struct

import pytest

from headcast.netcode.q3.msg import MAX_MSGLEN, BitWriter
from headcast.netcode.q3.native import NATIVE
from headcast.netcode.q3.netchan import Netchan, NetchanMode, netchan_checksum

from q3.test_pump import in_game_core, udp_pair
from q3.test_snapdecode import CT_IX, DELTA_IX

pytestmark = pytest.mark.skipif(
    NATIVE is None, reason="the C extension is not built (HEADCAST_PURE_PYTHON or no compiler)"
)


def _minimal_snapshot() -> bytes:
    """ack 0, a full svc_snapshot (server time 1000, nothing changed, no entities), svc_EOF."""
    w = BitWriter()
    for value, bits in ((0, 32), (7, 8), (1000, 32), (0, 8), (0, 8), (0, 8), (0, 8)):
        w.write_bits(value, bits)
    w.write_flag(0)
    w.write_bits(1023, 10)
    w.write_bits(8, 8)
    return w.to_bytes()


@pytest.mark.parametrize("seq", [-1, -31, -(2**40), 2**31])
def test_snap_parse_refuses_a_sequence_outside_the_netchans(seq):
    pump = NATIVE.Pump(-1)
    pump.snap_reset({}, DELTA_IX, CT_IX)
    pump.snap_enable(True, 0, 0, 0.0)
    for hook in (pump.snap_parse, pump.snap_parse_cmds):
        with pytest.raises(ValueError, match="sequence"):
            hook(_minimal_snapshot(), seq)
    assert pump.snap_parse(_minimal_snapshot(), 7) is True


@pytest.mark.parametrize("extra", [0, 1, 8, 16])
def test_a_message_past_max_msglen_is_the_cores_to_drop(extra):
    body = _minimal_snapshot()
    body += b"\0" * (MAX_MSGLEN + extra - len(body))
    challenge, seq = 1234567, 11
    dgram = struct.pack("<Ii", seq, netchan_checksum(challenge, seq)) + body
    nc = Netchan(NetchanMode.NEW71, challenge, 31337)
    nc.incoming_sequence = seq - 1
    taken = nc.process(dgram)
    core = in_game_core(challenge=challenge, msg_seq=seq - 1, timer=0.0, next_probe=1e9, last_packet=0.99)
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(core.pump_context())
        pump.snap_reset({}, DELTA_IX, CT_IX)
        pump.snap_enable(True, 0, 0, 10.0)
        b.send(dgram)
        assert select.select([a], [], [], 2.0)[0]
        pump.step(1.0)
        consumed, queued = pump.snap_take(), pump.take()[9]
    if extra == 0:
        assert taken is not None and len(consumed) == 1 and not queued
    else:
        assert taken is None and nc.drops["oversized message"] == 1
        assert not consumed and len(queued) == 1  # the core reads it and counts the drop


def test_send_input_overflow_raises_without_a_nan_cast():
    """Run under UBSan with -fsanitize=float-cast-overflow: no 'runtime error' before the OverflowError."""
    core = in_game_core(timer=0.0, next_probe=1e18, last_packet=0.0, timeout=1e18)
    with udp_pair() as (a, _b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(core.pump_context())
        with pytest.raises(OverflowError):
            pump.send_input(1.0, (3.5e38, 0.0, 0.0), 0, 0, 0, 0, 0, None)
