"""The web tier's settings (issue 26): where gunicorn listens, the request head's deadline, the
proxies whose X-Forwarded-For is believed; each validated with a message naming the variable."""

from __future__ import annotations

import pytest

from config.settings import ConfigError, Settings


def test_defaults_listen_on_loopback_and_trust_no_proxy():
    s = Settings.from_env({})
    assert (s.bind_host, s.header_read_timeout_s, s.trusted_proxy_hops) == ("127.0.0.1", 10.0, 0)


def test_values_are_read():
    s = Settings.from_env({"BIND_HOST": "0.0.0.0", "HEADER_READ_TIMEOUT": "2.5", "TRUSTED_PROXY_HOPS": "1"})
    assert (s.bind_host, s.header_read_timeout_s, s.trusted_proxy_hops) == ("0.0.0.0", 2.5, 1)
    assert Settings.from_env({"BIND_HOST": "::1"}).bind_host == "::1"


@pytest.mark.parametrize(
    "name, value",
    [
        ("BIND_HOST", "example.com"),
        ("BIND_HOST", "0.0.0.0:3000"),
        ("HEADER_READ_TIMEOUT", "0"),
        ("HEADER_READ_TIMEOUT", "soon"),
        ("TRUSTED_PROXY_HOPS", "-1"),
        ("TRUSTED_PROXY_HOPS", "9"),
    ],
)
def test_bad_values_name_the_variable(name, value):
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})
