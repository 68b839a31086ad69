"""Out-of-band packets: info strings, userinfo, request bytes, reply parsing (incl. fuzz)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.q3 import huffman, oob


def test_info_parse_and_build_round_trip_and_first_key_wins():
    assert oob.info_parse("\\a\\1\\b\\two\\a\\3") == {"a": "1", "b": "two"}
    assert oob.info_parse("") == {}
    assert oob.info_parse("\\lonely") == {"lonely": ""}
    assert oob.info_build({"name": "x", "rate": "25000"}) == "\\name\\x\\rate\\25000"
    for bad in ({"a\\b": "1"}, {"a": 'q"'}, {"a": "x;quit"}, {"": "v"}):
        with pytest.raises(oob.OobError):
            oob.info_build(bad)
    with pytest.raises(oob.OobError):
        oob.info_build({"k": "v" * 1100})


def test_userinfo_has_every_required_key_and_vr_only_when_vr():
    guid = oob.new_guid()
    assert len(guid) == 32 and int(guid, 16) >= 0
    flat = oob.info_parse(oob.build_userinfo(name="bot", challenge=-123, qport=70000, cl_guid=guid))
    assert flat == {
        "name": "bot",
        "rate": "25000",
        "snaps": "20",
        "model": "sarge",
        "handicap": "100",
        "cl_guid": guid,
        "protocol": "71",
        "qport": str(70000 & 0xFFFF),
        "challenge": "-123",
    }
    assert "vr" not in flat  # flatscreen omits the key (Trinity shows any non-empty vr as VR)
    vr = oob.info_parse(oob.build_userinfo(name="bot", challenge=1, qport=1, cl_guid=guid, vr=True, protocol=68))
    assert vr["vr"] == "1" and vr["protocol"] == "68"


def test_request_bytes():
    assert oob.getchallenge(42) == b"\xff\xff\xff\xffgetchallenge 42 Quake3Arena"
    assert oob.getinfo("ab") == b"\xff\xff\xff\xffgetinfo ab"
    assert oob.getstatus() == b"\xff\xff\xff\xffgetstatus"
    assert oob.rcon("pw", "map oa_dm2") == b"\xff\xff\xff\xffrcon pw map oa_dm2"
    with pytest.raises(oob.OobError):
        oob.rcon("has space", "status")


def test_connect_packet_compresses_and_the_server_side_decoder_reads_it_back():
    info = oob.build_userinfo(name="headcast", challenge=1592594996, qport=31337, cl_guid=oob.new_guid(), vr=True)
    plain = oob.connect_text(info)
    packet = huffman.compress(plain)
    assert packet[:12] == b"\xff\xff\xff\xffconnect " and len(packet) < len(plain)
    assert huffman.decompress(packet) == plain


def test_parse_replies_as_servers_send_them():
    r = oob.parse_oob(b"\xff\xff\xff\xffinfoResponse\n\\protocol\\71\\challenge\\n1\\mapname\\oa_dm1")
    assert r == oob.InfoResponse({"protocol": "71", "challenge": "n1", "mapname": "oa_dm1"})
    r = oob.parse_oob(b'\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\x\n5 12 "bob"\n0 999 2 "q3e" 3\n')
    assert r.info == {"sv_hostname": "x"}
    assert r.players == (oob.StatusPlayer(5, 12, "bob"), oob.StatusPlayer(0, 999, "q3e", ("2", "3")))
    assert oob.parse_oob(b"\xff\xff\xff\xffchallengeResponse -5 77 71") == oob.ChallengeResponse(-5, 77, 71)
    assert oob.parse_oob(b"\xff\xff\xff\xffchallengeResponse 4294967295") == oob.ChallengeResponse(-1, None, None)
    assert oob.parse_oob(b"\xff\xff\xff\xffconnectResponse 9 71") == oob.ConnectResponse(9)
    assert oob.parse_oob(b"\xff\xff\xff\xffprint\nInvalid GUID\n") == oob.Print("Invalid GUID\n")
    assert oob.parse_oob(b"\xff\xff\xff\xffdisconnect") == oob.Disconnect("")
    assert oob.parse_oob(b"\xff\xff\xff\xffkeyAuthorize x") == oob.UnknownOob("keyAuthorize")
    for bad in (
        b"\x00\x00\x00\x00print",
        b"\xff\xff\xff\xffchallengeResponse x",
        b"\xff\xff\xff\xffchallengeResponse",
        b"\xff\xff\xff\xffchallengeResponse 99999999999",
    ):
        with pytest.raises(oob.OobError):
            oob.parse_oob(bad)


def test_family_rule():
    assert oob.family_for_protocol(71) is oob.Family.LEGACY71
    assert oob.family_for_protocol(68) is oob.Family.NEW71
    assert oob.Family.LEGACY68.protocol == 68 and oob.Family.LEGACY68.legacy_netchan
    assert not oob.Family.NEW71.legacy_netchan
    with pytest.raises(oob.OobError):
        oob.family_for_protocol(43)


_REPLY_HEADS = [
    b"infoResponse\n",
    b"statusResponse\n",
    b"challengeResponse ",
    b"connectResponse ",
    b"print\n",
    b"disconnect",
    b"",
]


@settings(max_examples=400, deadline=None)
@given(head=st.sampled_from(_REPLY_HEADS), tail=st.binary(max_size=300), prefix=st.booleans())
def test_fuzz_parse_oob_raises_only_oob_error(head, tail, prefix):
    data = (b"\xff\xff\xff\xff" if prefix else b"") + head + tail
    try:
        oob.parse_oob(data)
    except oob.OobError:
        pass
