"""What a Quake 3 userinfo can carry (ioq3 Info_SetValueForKey, SV_DirectConnect, the game's
ClientCleanName): each limit refused by the library with a message naming it."""

from __future__ import annotations

import pytest

from headcast.netcode.q3 import oob


@pytest.mark.parametrize(
    "name, words",
    [
        ('a"b', 'holds "'),
        ("a\\b", "holds \\"),
        ("a;b", "holds ;"),
        ("", "is empty"),
        ("x" * 2000, "is 2000 characters; the game keeps 35 (MAX_NETNAME 36"),
        ("nul\x00here", "control character"),
        ("line\nbreak", "control character"),
        ("李", "not Latin-1"),
    ],
)
def test_a_name_the_engine_would_mangle_is_refused_naming_the_limit(name, words):
    assert words in oob.player_name_problem(name)


@pytest.mark.parametrize("name", ["headcast", "^1Red^7 Player", "Jörg", "x" * 35, " spaced "])
def test_names_the_game_keeps_as_given_pass(name):
    assert oob.player_name_problem(name) is None


def test_the_userinfo_leaves_room_for_the_servers_ip_key():
    # SV_DirectConnect refuses a userinfo that `\ip\[ipv6]:port` would push to MAX_INFO_STRING.
    assert oob.MAX_USERINFO == 1023 - len("\\ip\\") - len("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")
    base = dict(challenge=-2147483648, qport=65535, cl_guid="F" * 32, vr=True)
    fixed = len(oob.build_userinfo(name="x", **base)) - 1
    fits = oob.build_userinfo(name="n" * (oob.MAX_USERINFO - fixed), **base)
    assert len(fits) == oob.MAX_USERINFO
    with pytest.raises(oob.OobError, match=f"a server takes at most {oob.MAX_USERINFO}"):
        oob.build_userinfo(name="n" * (oob.MAX_USERINFO - fixed + 1), **base)
    with pytest.raises(oob.OobError, match="not Latin-1"):
        oob.build_userinfo(name="李", **base)
