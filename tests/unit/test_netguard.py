"""engine/netguard.py: every blocked address family, names resolving to blocked addresses, the
operator's allowed networks, and the checked address being the one to connect to."""

from __future__ import annotations

import ipaddress

import pytest

from config.settings import ConfigError, Settings
from engine.netguard import BlockedDestination, check_url, parse_networks

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")

BLOCKED = {
    "loopback v4": "127.0.0.1",
    "loopback v4 elsewhere in 127/8": "127.45.6.7",
    "loopback v6": "[::1]",
    "unspecified v4": "0.0.0.0",
    "unspecified v6": "[::]",
    "private 10/8": "10.1.2.3",
    "private 172.16/12": "172.20.0.5",
    "private 192.168/16": "192.168.1.1",
    "shared CGNAT 100.64/10 (Alibaba metadata)": "100.100.100.200",
    "link-local / AWS+GCP+Azure metadata": "169.254.169.254",
    "link-local v6": "[fe80::1]",
    "unique-local v6 / AWS metadata v6": "[fd00:ec2::254]",
    "site-local v6 (deprecated, fec0::/10)": "[fec0::1]",
    "site-local v6, top of fec0::/10": "[feff:ffff::1]",
    "multicast v4": "224.0.0.1",
    "multicast v6": "[ff02::1]",
    "reserved 240/4": "240.0.0.1",
    "broadcast": "255.255.255.255",
    "documentation 192.0.2/24": "192.0.2.10",
    "IPv4-mapped loopback": "[::ffff:127.0.0.1]",
    "IPv4-mapped metadata": "[::ffff:169.254.169.254]",
    "IPv4-mapped private": "[::ffff:10.0.0.1]",
    "6to4 wrapping private": "[2002:0a00:0001::1]",
    "NAT64 wrapping loopback": "[64:ff9b::7f00:1]",
    "Teredo wrapping private": "[2001:0000:4136:e378:8000:63bf:f5ff:fffe]",
}


@pytest.mark.parametrize("host", list(BLOCKED.values()), ids=list(BLOCKED))
def test_blocked_address_literals(host):
    with pytest.raises(BlockedDestination):
        check_url(f"http://{host}:8080/hook")


@pytest.mark.parametrize("url", ["http://93.184.216.34/h", "https://[2606:2800:220:1:248:1893:25c8:1946]/h"])
def test_public_addresses_pass(url):
    dest = check_url(url)
    assert dest.address in url


@pytest.mark.parametrize("name", ["localhost", "LOCALHOST.", "ip6-localhost"])
def test_names_resolving_to_loopback_are_refused(name):
    # resolved by the system resolver (/etc/hosts), no network needed
    with pytest.raises(BlockedDestination):
        check_url(f"http://{name}:9/x")


def test_one_blocked_address_among_several_refuses():
    def resolver(host, port):
        return ["93.184.216.34", "10.0.0.7"]

    with pytest.raises(BlockedDestination, match="non-public"):
        check_url("https://hooks.example.test/x", resolver=resolver)


def test_unresolvable_name_is_refused():
    def resolver(host, port):
        raise OSError("NXDOMAIN")

    with pytest.raises(BlockedDestination, match="does not resolve"):
        check_url("https://nowhere.invalid/x", resolver=resolver)


def test_allowed_networks_open_a_private_range_only():
    allowed = parse_networks("10.20.0.0/16, 127.0.0.0/8")
    assert check_url("http://10.20.3.4/h", allowed).address == "10.20.3.4"
    assert ipaddress.ip_address(check_url("http://[::ffff:127.0.0.1]/h", allowed).address).ipv4_mapped == LOOPBACK
    with pytest.raises(BlockedDestination):
        check_url("http://10.21.0.1/h", allowed)
    with pytest.raises(BlockedDestination):
        check_url("http://169.254.169.254/latest/meta-data/", allowed)


def test_destination_keeps_name_port_and_target():
    dest = check_url("https://hooks.example.test:8443/a/b?c=1", resolver=lambda h, p: ["93.184.216.34"])
    assert (dest.scheme, dest.host, dest.port, dest.target, dest.address) == (
        "https",
        "hooks.example.test",
        8443,
        "/a/b?c=1",
        "93.184.216.34",
    )
    assert dest.host_header == "hooks.example.test:8443"
    assert check_url("https://h.example.test/", resolver=lambda h, p: ["93.184.216.34"]).host_header == "h.example.test"


@pytest.mark.parametrize("url", ["ftp://93.184.216.34/", "http://user:pw@93.184.216.34/", "http:///x", "http://[::1/"])
def test_malformed_or_other_schemes_refused(url):
    with pytest.raises(BlockedDestination):
        check_url(url)


def test_setting_is_validated_at_start_up():
    assert Settings.from_env({"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/8"}).webhook_allowed_networks == parse_networks(
        "10.0.0.0/8"
    )
    assert Settings.from_env({}).webhook_allowed_networks == ()
    with pytest.raises(ConfigError, match="WEBHOOK_ALLOWED_NETWORKS"):
        Settings.from_env({"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/8, intranet"})
