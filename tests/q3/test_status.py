"""getinfo/getstatus without a connection (netcode/q3/status.py): request bytes, strict reply
parsing against replies a live ioq3 1.36 sent, colour codes as ioq3's Q_CleanStr strips them,
the per-server query (resends, round trips, drops), and fuzz: nothing but StatusError escapes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.q3 import status
from headcast.netcode.q3.status import Player, ServerQuery, StatusError

from support import LONG

EXAMPLES = 3000 if LONG else 300

# Captured from /usr/lib/ioquake3/ioq3ded (Debian 1.36) with two headcast clients in game,
# answering `getinfo n1` and `getstatus n2`.
IOQ3_INFO = (
    b"\xff\xff\xff\xffinfoResponse\n\\voip\\opus\\g_needpass\\0\\pure\\0\\gametype\\0\\sv_maxclients\\4"
    b"\\g_humanplayers\\2\\clients\\2\\mapname\\oa_dm1\\hostname\\^1Red^7 Server\\protocol\\68"
    b"\\gamename\\Quake3Arena\\challenge\\n1"
)
IOQ3_STATUS = (
    b"\xff\xff\xff\xffstatusResponse\n\\challenge\\n2\\sv_allowDownload\\0\\sv_hostname\\^1Red^7 Server"
    b"\\sv_maxclients\\4\\version\\ioq3 1.36+u20221123.70d07d9+dfsg-1/Debian linux-x86_64 Jan  8 2023"
    b"\\com_gamename\\Quake3Arena\\com_protocol\\71\\dmflags\\0\\fraglimit\\20\\timelimit\\0\\g_gametype\\0"
    b"\\mapname\\oa_dm1\\sv_privateClients\\0\\sv_minRate\\0\\sv_maxRate\\0\\sv_dlRate\\100\\sv_minPing\\0"
    b"\\sv_maxPing\\0\\sv_floodProtect\\1\\bot_minplayers\\0\\gamename\\baseoa\\g_maxGameClients\\0"
    b"\\videoflags\\7\\elimflags\\0\\voteflags\\767\\capturelimit\\8\\g_doWarmup\\0\\g_needpass\\0"
    b"\\g_allowVote\\1\\g_voteGametypes\\/0/1/3/4/5/6/7/8/9/10/11/12/\\g_voteMaxTimelimit\\1000"
    b"\\g_voteMinTimelimit\\0\\g_voteMaxFraglimit\\0\\g_voteMinFraglimit\\0\\g_obeliskRespawnDelay\\10"
    b"\\g_enableDust\\0\\g_enableBreath\\0\\g_delagHitscan\\0\\elimination_roundtime\\120\\g_rockets\\0"
    b"\\g_instantgib\\0\\g_lms_mode\\0\\g_altExcellent\\0\\g_timestamp\\2026-11-26 17:19:13\n"
    b'0 48 "^1Red^7Bot"\n0 48 "Pl^^ain^"\n'
)
FF = b"\xff\xff\xff\xff"


def test_requests_are_quakestats_with_a_nonce():
    assert status.getinfo_request("n1") == FF + b"getinfo n1"
    assert status.getstatus_request("abc123") == FF + b"getstatus abc123"
    for bad in ("", "x" * 129, "a b", "a\\b", "é", "a;b"):
        with pytest.raises(StatusError):
            status.getstatus_request(bad)


def test_real_ioq3_replies_parse_to_every_key_and_player():
    info = status.parse_info_response(IOQ3_INFO)
    assert info.challenge == "n1" and "challenge" not in info.info
    assert (
        info.info["protocol"] == "68" and info.info["g_needpass"] == "0" and info.info["hostname"] == "^1Red^7 Server"
    )
    assert len(info.info) == 11
    st_ = status.parse_status_response(IOQ3_STATUS)
    assert st_.challenge == "n2" and "challenge" not in st_.rules
    assert len(st_.rules) == 43 and st_.rules["version"].startswith("ioq3 1.36") and st_.rules["gamename"] == "baseoa"
    assert list(st_.rules)[:2] == ["sv_allowDownload", "sv_hostname"]  # the server's order is kept
    assert st_.players == (Player(0, 48, "^1Red^7Bot"), Player(0, 48, "Pl^^ain^"))
    empty = status.parse_status_response(FF + b"statusResponse\n\\challenge\\x\\sv_hostname\\e\n")
    assert empty.players == () and empty.rules == {"sv_hostname": "e"}


def test_player_lines_as_servers_write_them():
    assert status.parse_player('-5 999 "a b"') == Player(-5, 999, "a b")
    assert status.parse_player('3 20 1 "q3e" 7') == Player(3, 20, "q3e", ("1", "7"))  # team / client number
    assert status.parse_player('0 0 ""') == Player(0, 0, "")
    assert status.parse_player('1 2 "say "hi""') == Player(1, 2, 'say "hi"')  # the last quote ends the name
    assert status.parse_player('1 2 "\xe9\x01x"').name == "\xe9\x01x"  # raw bytes kept (latin-1)
    for bad in (
        '1 "x"',
        "1 2 x",
        '1 2 "x',
        'a 2 "x"',
        '1  2 "x"',
        '1 2 "x" "y',
        '1 2 "x"junk',
        '1 99999999999 "x"',
        '1 2 3a "x"',
        '٣ 2 "x"',
    ):
        with pytest.raises(StatusError):
            status.parse_player(bad)


@pytest.mark.parametrize(
    "packet, needle",
    [
        (b"statusResponse\n\\challenge\\x\n", "FF FF FF FF"),
        (FF + b"statusResponsX\n\\challenge\\x\n", "not a statusResponse"),
        (FF + b"statusResponse \\challenge\\x\n", "not a statusResponse"),
        (FF + b"statusResponse\n\\challenge\\x", "does not end with a newline"),
        (FF + b'statusResponse\n\\challenge\\x\n1 2 "a"', "does not end with a newline"),
        (FF + b"statusResponse\nchallenge\\x\n", "does not start with a backslash"),
        (FF + b"statusResponse\n\\challenge\\x\\lonely\n", "key without a value"),
        (FF + b"statusResponse\n\\challenge\\x\\\\v\n", "empty key"),
        (FF + b"statusResponse\n\\challenge\\x\\k\\1\\k\\2\n", "repeats the key 'k'"),
        (FF + b"statusResponse\n\\sv_hostname\\x\n", "does not echo a challenge"),
        (FF + b"statusResponse\n\\challenge\\x\n\n", "is not `score ping"),
        (FF + b"statusResponse\n\\challenge\\x\0\n", "NUL byte"),
        (FF + b"infoResponse\n\\challenge\\x\n\\k\\v", "more than one line"),
        (FF + b"infoResponse\n\\k\\v", "does not echo a challenge"),
    ],
)
def test_malformed_replies_are_typed_errors_saying_what(packet, needle):
    parse = status.parse_info_response if b"info" in packet else status.parse_status_response
    with pytest.raises(StatusError, match=None) as e:
        parse(packet)
    assert needle in str(e.value), str(e.value)


def test_lenient_only_where_servers_differ_harmlessly():
    assert status.parse_info_response(FF + b"INFORESPONSE\n\\challenge\\x\\k\\v\n").info == {"k": "v"}
    assert status.parse_info_response(FF + b"infoResponse\n\\challenge\\x\\empty\\").info == {"empty": ""}


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("^1Red^7Bot", "RedBot"),
        ("^xOdd^!", "Odd^!"),  # ioq3: a colour code is ^ + a letter or digit; ^! is text
        ("Pl^^ain^", "Pl^in^"),  # ^^ is a caret, then ^a is a colour; a trailing ^ stays
        ("^^11", "^1"),
        ("tab\there\x1b[31m\xe9", "tabhere[31m"),  # unprintable bytes go (no terminal escapes)
        ("", ""),
    ],
)
def test_clean_is_ioq3s_q_cleanstr(raw, clean):
    assert status.clean(raw) == clean
    assert Player(0, 0, raw).clean_name == clean


def q_cleanstr(text: str) -> str:
    """ioq3 q_shared.c Q_CleanStr, transcribed loop for loop (Q_IsColorString: ^ + isalnum)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "^" and i + 1 < len(text) and text[i + 1].isascii() and text[i + 1].isalnum():
            i += 1
        elif " " <= text[i] <= "~":
            out.append(text[i])
        i += 1
    return "".join(out)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(st.sampled_from("^^^1a!é\x01 Z9"), max_size=16))
def test_fuzz_clean_equals_the_c_loop(text):
    assert status.clean(text) == q_cleanstr(text)


# ---------------------------------------------------------------------------- the query


def fixed_nonces(*names: str):
    it = iter(names)
    return lambda: next(it)


def info_reply(challenge: str, **kv: str) -> bytes:
    return FF + b"infoResponse\n" + "".join(f"\\{k}\\{v}" for k, v in {**kv, "challenge": challenge}.items()).encode()


def status_reply(challenge: str, players: str = "") -> bytes:
    return FF + f"statusResponse\n\\challenge\\{challenge}\\sv_hostname\\s\n{players}".encode()


def test_query_sends_both_then_resends_only_the_silent_one_after_1_2_4_s():
    q = ServerQuery(nonce=fixed_nonces("i1", "s1", "s2", "s3", "s4"))
    assert q.get_timer() is None and q.datagrams_to_send(0.0) == []
    q.start(10.0)
    assert q.datagrams_to_send(10.0) == [FF + b"getinfo i1", FF + b"getstatus s1"]
    assert q.get_timer() == 11.0 and q.datagrams_to_send(10.9) == []
    q.receive_datagram(info_reply("i1", protocol="68"), 10.0004)
    assert q.info is not None and q.info_rtt_ms == pytest.approx(0.4) and not q.done
    assert q.datagrams_to_send(11.0) == [FF + b"getstatus s2"]
    assert q.get_timer() == 13.0 and q.datagrams_to_send(12.9) == []
    assert q.datagrams_to_send(13.0) == [FF + b"getstatus s3"]
    assert q.get_timer() == 17.0
    # The answer to the second attempt: timed from that attempt's own send.
    q.receive_datagram(status_reply("s2", '4 12 "^2x"\n'), 13.5)
    assert q.done and q.ping_ms == pytest.approx(2500.0) and q.get_timer() is None
    assert q.status.players == (Player(4, 12, "^2x"),)
    assert q.datagrams_to_send(100.0) == []
    q.receive_datagram(status_reply("s1"), 13.6)  # the first attempt's late answer
    assert q.drops == {"duplicate": 1} and q.ping_ms == pytest.approx(2500.0)


def test_query_counts_what_it_cannot_use_and_keeps_waiting():
    q = ServerQuery(nonce=fixed_nonces("i1", "s1"))
    q.start(0.0)
    q.datagrams_to_send(0.0)
    q.receive_datagram(status_reply("not-ours"), 0.1)
    q.receive_datagram(info_reply("s1"), 0.1)  # the status nonce echoed in an infoResponse
    q.receive_datagram(FF + b"print\nhello\n", 0.1)
    q.receive_datagram(b"\x01\x00\x00\x00garbage", 0.1)
    q.receive_datagram(FF + b"statusResponse\n\\challenge\\s1\n1 2 x\n", 0.1)
    assert q.drops == {"foreign": 2, "malformed": 3} and q.info is None and q.status is None
    assert "is not `score ping" in q.last_drop
    q.receive_datagram(status_reply("s1"), 0.2)
    q.receive_datagram(info_reply("i1"), 0.3)
    assert q.done and q.ping_ms == pytest.approx(200.0) and q.info_rtt_ms == pytest.approx(300.0)


# ---------------------------------------------------------------------------- fuzz


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_random_bytes_only_ever_raise_status_error(data):
    for parse in (status.parse_info_response, status.parse_status_response):
        for packet in (data, FF + data, FF + b"statusResponse\n" + data, FF + b"infoResponse\n" + data):
            try:
                parse(packet)
            except StatusError:
                pass


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.sampled_from([IOQ3_INFO, IOQ3_STATUS]),
    st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, 2000),
)
def test_fuzz_mutated_real_replies_parse_or_raise_status_error(packet, flips, cut):
    data = bytearray(packet)
    for pos, value in flips:
        data[pos % len(data)] = value
    data = bytes(data[: max(cut, 4)] if cut < len(data) else data)
    parse = status.parse_info_response if packet is IOQ3_INFO else status.parse_status_response
    try:
        parse(data)
    except StatusError:
        pass
    q = ServerQuery(nonce=fixed_nonces("n1", "n2"))
    q.start(0.0)
    q.datagrams_to_send(0.0)
    q.receive_datagram(data, 0.001)  # never raises: a use, or a counted drop
    assert sum(q.drops.values()) + (q.info is not None) + (q.status is not None) == 1


_text = st.text(st.characters(min_codepoint=1, max_codepoint=255, blacklist_characters='\\\n"'), max_size=12)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.dictionaries(_text.filter(bool), _text, max_size=8),
    st.lists(st.tuples(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(-1, 999), _text), max_size=5),
)
def test_fuzz_what_a_server_could_send_round_trips(rules, players):
    rules.pop("challenge", None)
    infostring = "".join(f"\\{k}\\{v}" for k, v in {"challenge": "n2", **rules}.items())
    lines = "".join(f'{s} {p} "{n}"\n' for s, p, n in players)
    reply = status.parse_status_response(FF + f"statusResponse\n{infostring}\n{lines}".encode("latin-1"))
    assert reply.rules == rules and reply.challenge == "n2"
    assert reply.players == tuple(Player(s, p, n) for s, p, n in players)
