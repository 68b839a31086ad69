"""Joining, driven deterministically: one request per join, the protocol family told by the
server's answers, refusals, rate limiting (Q3ClientCore, no sockets; the live side is
test_handshake_live.py).

The server half is scripted from the wire rules (docs/protocols/quake3.md#connect): OOB replies as text, netchan
packets framed and (legacy) scrambled by the test itself, not by the client's own netchan.
"""

from __future__ import annotations

import random
import struct

import pytest

from headcast.netcode.q3 import huffman, oob, serverparse
from headcast.netcode.q3.client import (
    HANDSHAKE_WAIT,
    JITTER,
    RESEND_FIRST,
    RESEND_GROWTH,
    RESEND_MAX,
    ClientConfig,
    Q3ClientCore,
    State,
)
from headcast.netcode.q3.events import Connected, Disconnected, FamilyChanged, GamestateReceived, RateLimited, Refused
from headcast.netcode.q3.msg import BitWriter
from headcast.netcode.q3.netchan import netchan_checksum
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.refusal import RefusalKind, classify

from q3_spec import xor_from_spec

CHALLENGE = 1592594996
FF = b"\xff\xff\xff\xff"


def core_of(**cfg) -> Q3ClientCore:
    core = Q3ClientCore(ClientConfig(qport=31337, **cfg))
    core._rng = random.Random(7)  # the jitter, reproducible
    return core


def drain(core: Q3ClientCore, now: float) -> list[bytes]:
    return core.datagrams_to_send(now)


def run(core: Q3ClientCore, t1: float) -> list[tuple[float, bytes]]:
    """Fire the timer up to t1; every datagram with the time it went out."""
    out = []
    while (timer := core.get_timer()) is not None and timer <= t1:
        core.handle_timer(timer)
        out += [(timer, d) for d in drain(core, timer)]
    return out


def events(core: Q3ClientCore) -> list:
    return core.take_events()


def oob_text(d: bytes) -> str:
    assert d.startswith(FF)
    if d[4:12] == b"connect ":
        return huffman.decompress(d)[4:].decode("latin-1")
    return d[4:].decode("latin-1")


def userinfo(d: bytes) -> dict[str, str]:
    text = oob_text(d)
    assert text.startswith("connect ")
    return oob.info_parse(text[len("connect ") :].strip('"'))


def say(core: Q3ClientCore, text: str, now: float) -> None:
    core.receive_datagram(FF + text.encode("latin-1"), now)


def challenge_of(d: bytes) -> int:
    cmd, client_challenge, game = oob_text(d).split()
    assert cmd == "getchallenge" and game == "Quake3Arena"
    return int(client_challenge)


def to_connect(core: Q3ClientCore, protocol: str = " 71", now: float = 0.0) -> bytes:
    """connect(), answer the getchallenge; returns the connect datagram."""
    core.connect(now)
    (req,) = drain(core, now)
    say(core, f"challengeResponse {CHALLENGE} {challenge_of(req)}{protocol}", now)
    core.handle_timer(now)
    (connect,) = drain(core, now)
    return connect


def gamestate_body(server_id: int = 4242) -> bytes:
    """A minimal svc_gamestate message (reliable ack 0, no commands)."""
    w = BitWriter()
    w.write_long(0)
    w.write_byte(serverparse.SVC_GAMESTATE)
    w.write_long(0)
    for index, text in (
        (0, oob.info_build({"mapname": "oa_dm1"})),
        (1, oob.info_build({"sv_serverid": str(server_id), "sv_pure": "0"})),
    ):
        w.write_byte(serverparse.SVC_CONFIGSTRING)
        w.write_short(index)
        w.write_bigstring(text)
    w.write_byte(serverparse.SVC_EOF)
    w.write_long(0)  # clientNum
    w.write_long(-99)  # checksumFeed
    w.write_byte(serverparse.SVC_EOF)
    return w.to_bytes()


def nop_body() -> bytes:
    w = BitWriter()
    w.write_long(0)
    w.write_byte(serverparse.SVC_NOP)
    w.write_byte(serverparse.SVC_EOF)
    return w.to_bytes()


def checksummed(seq: int, body: bytes) -> bytes:
    return struct.pack("<Ii", seq, netchan_checksum(CHALLENGE, seq)) + body


def legacy(seq: int, body: bytes) -> bytes:
    """S→C legacy framing; the client's reliable ring is empty while connecting, so the text is ""."""
    return struct.pack("<I", seq) + xor_from_spec(body, 4, (CHALLENGE ^ seq) & 0xFF, "")


def has_checksum(d: bytes) -> bool:
    seq, _qport, chk = struct.unpack_from("<iHi", d)
    return chk == netchan_checksum(CHALLENGE, seq)


# ---------------------------------------------------------------------------------- one request


def test_joining_takes_one_connectionless_request_and_71_tries_the_checksummed_netchan_first():
    core = core_of()
    connect = to_connect(core)
    info = userinfo(connect)
    assert info["protocol"] == "71" and info["challenge"] == str(CHALLENGE) and "password" not in info
    say(core, f"connectResponse {CHALLENGE}", 0.01)
    core.handle_timer(0.01)
    (first,) = drain(core, 0.01)
    assert has_checksum(first) and core.status.family is Family.NEW71
    assert core.counters["packets_out"] == 3  # getchallenge, connect, the first netchan packet: no getinfo
    assert isinstance(events(core)[-1], Connected)


@pytest.mark.parametrize("answer, family", [(" 71", Family.NEW71), (" 68", Family.LEGACY68), ("", Family.LEGACY68)])
def test_the_challenge_response_names_the_protocol(answer, family):
    core = core_of()
    connect = to_connect(core, answer)
    assert userinfo(connect)["protocol"] == str(family.protocol) and core.status.family is family


def test_a_protocol_headcast_does_not_speak_is_a_refusal_for_good():
    core = core_of()
    core.connect(0.0)
    (req,) = drain(core, 0.0)
    say(core, f"challengeResponse {CHALLENGE} {challenge_of(req)} 43", 0.01)
    ev = events(core)
    assert isinstance(ev[-2], Refused) and ev[-2].fatal and ev[-2].text == "the server speaks protocol 43"
    assert core.state is State.CLOSED and run(core, 60.0) == []


def test_password_and_forced_family_go_into_the_userinfo():
    core = core_of(password="s3cret", family=Family.LEGACY68)
    info = userinfo(to_connect(core))  # the server says 71; a forced 68 is sent all the same
    assert info["password"] == "s3cret" and info["protocol"] == "68"
    with pytest.raises(oob.OobError):
        Q3ClientCore(ClientConfig(password='a"b'))


# ---------------------------------------------------------------------------------- silence, rate limiting


def test_silence_resends_getchallenge_growing_and_jittered_with_one_liveness_connect():
    core = core_of(connect_timeout=10.0)
    core.connect(0.0)
    sent = [(0.0, d) for d in drain(core, 0.0)] + run(core, 9.99)
    challenges = [t for t, d in sent if oob_text(d).startswith("getchallenge")]
    connects = [(t, d) for t, d in sent if d[4:12] == b"connect "]
    assert 5 <= len(challenges) <= 7  # not one a second, not one every 3 s
    expect = RESEND_FIRST
    for a, b in zip(challenges, challenges[1:]):
        assert expect * JITTER[0] - 1e-9 <= b - a <= expect * JITTER[1] + 1e-9
        expect = min(expect * RESEND_GROWTH, RESEND_MAX)
    # One connect without a challenge, with the third getchallenge (after two went unanswered).
    assert len(connects) == 1 and connects[0][0] == challenges[2] and userinfo(connects[0][1])["challenge"] == "0"
    other = core_of(connect_timeout=10.0)
    other._rng = random.Random(8)
    other.connect(0.0)
    assert [t for t, d in run(other, 9.99)][:3] != challenges[1:4]  # two clients do not ask in step
    run(core, 10.0)
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and ev[-1].reason.startswith("no answer to getchallenge")
    assert not core.status.rate_limited


def test_a_server_that_answers_the_liveness_connect_but_not_getchallenge_is_rate_limiting():
    core = core_of(connect_timeout=10.0)
    core.connect(0.0)
    sent = run(core, 3.0)
    t_live = next(t for t, d in sent if d[4:12] == b"connect ")
    say(core, "print\nNo or bad challenge for your address.\n", t_live + 0.001)
    ev = events(core)
    assert isinstance(ev[-1], RateLimited) and ev[-1].unanswered == 3
    assert core.state is State.CHALLENGING and core.status.rate_limited and core.status.refusal == ""
    run(core, 10.0)
    ev = events(core)
    assert "rate-limiting this address" in ev[-1].reason and ev[-1].will_reconnect
    assert core.status.rate_limited  # still, while it waits to try again
    core.handle_timer(core.get_timer())
    (req,) = drain(core, core.get_timer())
    say(core, f"challengeResponse {CHALLENGE} {challenge_of(req)} 71", 20.0)
    assert not core.status.rate_limited and core.state is State.CONNECTING


def test_the_liveness_answer_after_the_challenge_was_answered_is_not_a_refusal():
    core = core_of()
    core.connect(0.0)
    sent = run(core, 3.0)
    last = [d for _, d in sent if oob_text(d).startswith("getchallenge")][-1]
    say(core, f"challengeResponse {CHALLENGE} {challenge_of(last)} 71", 3.01)
    core.handle_timer(3.01)
    (connect,) = drain(core, 3.01)
    say(core, "print\nNo or bad challenge for your address.\n", 3.02)  # the liveness connect's answer
    assert core.state is State.CONNECTING and not core.status.rate_limited and core.status.refusal == ""
    say(core, f"connectResponse {CHALLENGE}", 3.03)
    assert core.state is State.CONNECTED


# ---------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "text, kind, fatal",
    [
        ("Invalid password\n", RefusalKind.PASSWORD, True),
        ("You are banned from this server.\n", RefusalKind.BANNED, True),
        ("You have been banned by ^1admin^7 reason: ^3cheating^7 expires: never\n", RefusalKind.BANNED, True),
        ("Game mismatch: This is a Quake3Arena server\n", RefusalKind.GAME, True),
        ("Userinfo string length exceeded.  Try removing setu cvars from your config.\n", RefusalKind.USERINFO, True),
        ("Invalid GUID\n", RefusalKind.USERINFO, True),
        ("Server is full\n", RefusalKind.FULL, False),
        ("Server is full.\n", RefusalKind.FULL, False),
        ("Too many connections.\n", RefusalKind.TOO_MANY, False),
        ("Server is for low pings only\n", RefusalKind.OTHER, False),
    ],
)
def test_a_refusal_ends_the_attempt_with_the_servers_words(text, kind, fatal):
    assert classify(text).kind is kind and classify(text).fatal is fatal
    core = core_of(backoff=(1.0, 8.0))
    to_connect(core)
    say(core, "print\n" + text, 0.01)
    ev = events(core)
    refused, disc = ev[-2], ev[-1]
    clean = " ".join(text.replace("^1", "").replace("^7", "").replace("^3", "").split())
    assert isinstance(refused, Refused) and refused.text == clean and refused.kind == kind and refused.fatal is fatal
    assert isinstance(disc, Disconnected) and disc.reason == f"server refused: {clean}"
    assert core.status.refusal == clean and core.status.refusal_fatal is fatal
    if fatal:
        # Retrying cannot help: no loop, whatever `reconnect` says.
        assert disc.will_reconnect is False and core.state is State.CLOSED and run(core, 120.0) == []
    else:
        assert disc.will_reconnect and core.state is State.WAITING
        assert JITTER[0] <= refused.retry_in <= JITTER[1]  # the first backoff step, jittered
        assert core.get_timer() == pytest.approx(0.01 + refused.retry_in)
        again = run(core, core.get_timer())
        assert [oob_text(d).split()[0] for _, d in again] == ["getchallenge"]
        assert core.status.refusal == clean  # shown while it tries again
    # The same refusal without reconnect: stopped, not retried, and still not fatal.
    core = core_of(reconnect=False)
    to_connect(core)
    say(core, "print\n" + text, 0.01)
    assert core.state is State.CLOSED and core.status.refusal_fatal is fatal


def test_a_retried_refusal_is_forgotten_once_let_in():
    core = core_of(backoff=(1.0, 8.0))
    to_connect(core)
    say(core, "print\nServer is full\n", 0.01)
    ((t, req),) = run(core, core.get_timer())
    say(core, f"challengeResponse {CHALLENGE} {challenge_of(req)} 71", t)
    core.handle_timer(t)
    drain(core, t)
    say(core, f"connectResponse {CHALLENGE}", t)
    core.receive_datagram(checksummed(1, gamestate_body()), t + 0.01)
    assert core.state is State.PRIMED and core.status.refusal == ""


def test_auto_follows_the_protocol_the_server_names_and_a_forced_one_stops():
    core = core_of()
    connect = to_connect(core, "")  # an old-style challengeResponse: 68 first
    assert userinfo(connect)["protocol"] == "68"
    say(core, "print\nServer uses protocol version 71 (yours is 68).\n", 0.01)
    ev = events(core)
    assert isinstance(ev[-1], FamilyChanged) and (ev[-1].old, ev[-1].new) == (Family.LEGACY68, Family.NEW71)
    core.handle_timer(0.01)
    (again,) = drain(core, 0.01)  # at once, the same challenge: no connectResponse, no reconnect limit
    assert userinfo(again)["protocol"] == "71" and userinfo(again)["challenge"] == str(CHALLENGE)
    forced = core_of(family=Family.LEGACY68)
    to_connect(forced)
    say(forced, "print\nServer uses protocol version 71 (yours is 68).\n", 0.01)
    ev = events(forced)
    assert isinstance(ev[-2], Refused) and ev[-2].fatal and ev[-2].kind == RefusalKind.PROTOCOL
    assert forced.state is State.CLOSED


def test_please_wait_is_waited_out_and_a_stale_challenge_is_asked_again():
    core = core_of()
    to_connect(core)
    say(core, "print\nReconnecting, please wait 2 seconds.\n", 0.5)
    ev = events(core)
    assert isinstance(ev[-1], Refused) and not ev[-1].fatal and ev[-1].retry_in == pytest.approx(2.2)
    assert core.state is State.CONNECTING and core.status.refusal.startswith("Reconnecting")
    assert run(core, 2.69) == []
    ((t, again),) = run(core, 2.7)
    assert userinfo(again)["challenge"] == str(CHALLENGE)
    say(core, "print\nIncorrect challenge, please reconnect.\n", 2.8)
    assert core.state is State.CHALLENGING
    core.handle_timer(2.8)
    assert [oob_text(d).split()[0] for d in drain(core, 2.8)] == ["getchallenge"]


# ---------------------------------------------------------------------------------- which netchan


def connected(**cfg) -> Q3ClientCore:
    core = core_of(**cfg)
    to_connect(core)
    say(core, f"connectResponse {CHALLENGE}", 0.0)
    core.handle_timer(0.0)
    drain(core, 0.0)
    events(core)
    return core


def test_a_legacy_answer_to_the_checksummed_guess_switches_the_link_in_place():
    """Stock OpenArena: "71" is its legacy netchan. It answers our unreadable packets with a gamestate."""
    core = connected()
    core.receive_datagram(legacy(1, gamestate_body()), 0.02)
    ev = events(core)
    changed = next(e for e in ev if isinstance(e, FamilyChanged))
    assert (changed.old, changed.new) == (Family.NEW71, Family.LEGACY71)
    assert any(isinstance(e, GamestateReceived) for e in ev) and core.state is State.PRIMED
    assert core.status.family is Family.LEGACY71 and core.counters["family_switches"] == 1
    packets = [d for _, d in run(core, 0.1)]
    assert packets and not any(has_checksum(d) for d in packets)
    # The next attempt (a reconnect) starts in the family that worked.
    assert core._first_family(71) is Family.LEGACY71


def test_a_checksummed_answer_to_a_legacy_guess_switches_the_link_in_place():
    """ioq3 on 71 (or Quake3e): its snapshots to a connecting client carry the checksum."""
    core = connected(family_guess=Family.LEGACY71)
    assert core.status.family is Family.LEGACY71
    core.receive_datagram(checksummed(1, nop_body()), 0.02)
    ev = events(core)
    assert isinstance(ev[0], FamilyChanged) and (ev[0].old, ev[0].new) == (Family.LEGACY71, Family.NEW71)
    core.handle_timer(0.02)
    (answer,) = drain(core, 0.02)  # at once, in the server's netchan: it answers with the gamestate
    assert has_checksum(answer)
    core.receive_datagram(checksummed(2, gamestate_body()), 0.03)
    assert core.state is State.PRIMED and core.status.family is Family.NEW71


def test_a_silent_server_after_connect_response_gets_the_other_family_after_its_reconnect_limit():
    core = connected(family_guess=Family.LEGACY71)
    sent = run(core, HANDSHAKE_WAIT - 0.01)
    assert sent and all(d[:4] != FF for _, d in sent)  # netchan packets only, about one a second
    ((t, again),) = run(core, HANDSHAKE_WAIT)
    info = userinfo(again)
    assert t == pytest.approx(HANDSHAKE_WAIT) and info["protocol"] == "71" and info["challenge"] == str(CHALLENGE)
    ev = events(core)
    assert isinstance(ev[-1], FamilyChanged) and ev[-1].new is Family.NEW71 and "no gamestate" in ev[-1].reason
    say(core, f"connectResponse {CHALLENGE}", t + 0.01)
    core.handle_timer(t + 0.01)
    (first,) = drain(core, t + 0.01)
    assert has_checksum(first)
    # Both tried: no third switch; the attempt ends at the connect timeout, naming both.
    run(core, 10.0)
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and "no gamestate" in ev[-1].reason
    assert "legacy netchan" in ev[-1].reason and "checksummed netchan" in ev[-1].reason


def test_a_forced_family_the_server_does_not_speak_stops_naming_what_it_speaks():
    core = connected(family=Family.NEW71)
    core.receive_datagram(legacy(1, gamestate_body()), 0.02)
    ev = events(core)
    refused = next(e for e in ev if isinstance(e, Refused))
    assert refused.fatal and "legacy netchan (stock OpenArena), not protocol 71 on the checksummed" in refused.text
    assert core.state is State.CLOSED and run(core, 30.0) == []
    core = connected(family=Family.LEGACY71)
    core.receive_datagram(checksummed(1, nop_body()), 0.02)
    assert core.state is State.CLOSED and "checksummed netchan" in core.status.refusal
    assert run(core, 30.0) == []  # no silent-switch either: forced means forced
