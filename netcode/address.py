"""A server's address as a user writes it: HOST[:PORT] (and, for NetSync, more ports after it;
for a Quake 3 probe, [IPV6]:PORT too). One parser for every protocol; the caller names the option
(for the message) and the ports, and fills in what its protocol derives from them."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["AddressError", "parse_address"]


class AddressError(ValueError):
    """The text is not an address of the form asked for; the message says why (and names the
    option and the text when the caller gave the option)."""


def parse_address(
    text: str,
    default_port: int,
    *,
    option: str = "",
    ports: Sequence[str] = ("PORT",),
    last_port: int = 65535,
    ipv6: bool = False,
    note: str = "",
) -> tuple[str, tuple[int, ...]]:
    """HOST[:P1[:P2 …]] with at most len(`ports`) ports → (host, the ports given), or (host,
    (default_port,)) when none is. `ports` names them in the message; each must be 1..`last_port`
    (`note` says why, when that is less than 65535). `ipv6`: also [IPV6], [IPV6]:PORT and a bare
    IPv6 address (one port at most)."""

    def fail(problem: str) -> AddressError:
        return AddressError(f"{option} {text!r}: {problem}" if option else problem)

    forms = ["HOST", *("HOST:" + ":".join(ports[: i + 1]) for i in range(len(ports)))]
    if ipv6:
        forms += ["[IPV6]", "[IPV6]:PORT"]
    expected = f"expected {', '.join(forms[:-1])} or {forms[-1]}"
    parts: list[str]
    if ipv6 and text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise fail(expected)
        parts = [rest[1:]] if rest else []
    elif ipv6 and text.count(":") > 1:
        host, parts = text, []  # a bare IPv6 address: no port can follow it unbracketed
    else:
        host, *parts = text.split(":")
    if not host or len(parts) > len(ports):
        raise fail(expected)
    one = len(ports) == 1
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise fail("the port must be a number" if one else "ports must be numbers")
    numbers = tuple(int(p) for p in parts)
    if not all(0 < p <= last_port for p in numbers):
        raise fail(f"{'the port' if one else 'ports'} must be 1..{last_port}{note}")
    return host, numbers or (default_port,)
