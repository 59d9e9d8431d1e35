"""Which network addresses an outgoing request to a client-supplied URL may reach.

Anyone may sign up and attach a webhook URL to a fence, so a URL is hostile until checked: it
must not make the workers call loopback, private, link-local (cloud metadata at
169.254.169.254 / fd00:ec2::254), site-local (fec0::/10), shared (100.64/10), multicast, reserved
or unspecified addresses, nor such an address wrapped in IPv6 (IPv4-mapped ``::ffff:a.b.c.d``,
6to4, Teredo, NAT64 ``64:ff9b::/96``). Only globally routable unicast addresses pass, plus the
networks an operator allows explicitly (``WEBHOOK_ALLOWED_NETWORKS``, e.g. ``10.20.0.0/16`` for
an internal receiver).

A name is resolved and *every* address it resolves to must pass (one bad address refuses the
URL), at creation and again at delivery; the delivery then connects to the address checked,
never resolving the name a second time (DNS rebinding: a name that answered a public address
at the check and a private one a moment later).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class BlockedDestination(ValueError):
    """The URL may not be called; the message says why without echoing internal details."""


@dataclass(frozen=True)
class Destination:
    """A checked URL: where to connect (``address``) and what to tell the server (``host``)."""

    scheme: str
    host: str  # the name as written in the URL (Host header, TLS SNI and certificate check)
    port: int
    target: str  # path and query, at least "/"
    address: str  # the checked IP literal to connect to

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == default else f"{name}:{self.port}"


def parse_networks(text: str | None) -> tuple[IPNetwork, ...]:
    """``"10.0.0.0/8, fd00::/8"`` -> networks; raises ``ValueError`` naming the bad item."""
    networks: list[IPNetwork] = []
    for item in (text or "").replace(";", ",").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not a CIDR network (e.g. 10.0.0.0/8 or fd00::/8)") from None
    return tuple(networks)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo client, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public(ip: IPAddress) -> bool:
    """Globally routable unicast, also for the IPv4 address an IPv6 one wraps."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None and not is_public(inner):
            return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return False  # fec0::/10: deprecated (RFC 3879) but still routed inside some networks
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified or ip.is_loopback)


def address_allowed(ip: IPAddress, allowed: Sequence[IPNetwork] = ()) -> bool:
    if any(ip.version == net.version and ip in net for net in allowed):
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        mapped = ip.ipv4_mapped
        if any(net.version == 4 and mapped in net for net in allowed):
            return True
    return is_public(ip)


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_url(url: str, allowed: Sequence[IPNetwork] = (), resolver: Resolver = system_resolver) -> Destination:
    """Resolve ``url``'s host and check every address; raises :class:`BlockedDestination`."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise BlockedDestination("not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise BlockedDestination("only http and https URLs can be called")
    if parts.username is not None or parts.password is not None:
        raise BlockedDestination("credentials in the URL are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise BlockedDestination("the URL has no host")
    port = port or (443 if parts.scheme == "https" else 80)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    try:
        literal: IPAddress | None = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = list(resolver(host, port))
        except (OSError, UnicodeError):
            raise BlockedDestination(f"the host {host!r} does not resolve") from None
        if not addresses:
            raise BlockedDestination(f"the host {host!r} does not resolve")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        if not address_allowed(ip, allowed):
            raise BlockedDestination(
                f"the host {host!r} resolves to a loopback, private, link-local or otherwise non-public address"
            )
    return Destination(parts.scheme, host, port, target, addresses[0].split("%", 1)[0])
