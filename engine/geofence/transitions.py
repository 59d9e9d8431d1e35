"""Enter/exit transitions per device, with the device's last state in Redis.

The state of a device is the set of fence ids it was inside at its last check, kept in one Redis
set per (account, device) that expires ``ttl_s`` seconds after the device's last check. Reading
the previous state and writing the new one is one Lua script (run with EVALSHA), so it is atomic:
of two concurrent checks of one device entering a fence, exactly one reports ``enter`` and the
other ``inside``.

Transition of fence F for a check, from ``was`` (F in the stored state) and ``now`` (the point is
inside F): ``enter`` (not was, now), ``exit`` (was, not now), ``inside`` (was, now), ``outside``
(neither). A device never seen before (or whose state expired) was outside every fence, so its
first check reports ``enter`` for the fences it is in.

A check covers either all fences of the account (``checked=None``: the stored set becomes the
new inside set) or a subset (``checked`` = the fence ids looked at: only their membership is
updated, the device's state for other fences is kept).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ENTER, EXIT, INSIDE, OUTSIDE = "enter", "exit", "inside", "outside"

DEFAULT_PREFIX = "meridian:geofence:"
DEFAULT_TTL_S = 7 * 24 * 3600

# KEYS[1] = state set. ARGV[1] = ttl seconds, ARGV[2] = "all" | "subset", ARGV[3] = n_inside,
# ARGV[4 .. 3+n_inside] = fence ids inside now, the rest (subset mode) = checked ids not inside.
# Returns the ids that were inside before: the whole previous set ("all") or the checked ids
# that were members ("subset").
_LUA = """
local key = KEYS[1]
local ttl = tonumber(ARGV[1])
local mode = ARGV[2]
local n_in = tonumber(ARGV[3])
local was = {}
if mode == 'all' then
  was = redis.call('SMEMBERS', key)
  redis.call('DEL', key)
  for i = 4, 3 + n_in do redis.call('SADD', key, ARGV[i]) end
else
  for i = 4, #ARGV do
    if redis.call('SISMEMBER', key, ARGV[i]) == 1 then was[#was + 1] = ARGV[i] end
  end
  for i = 4, 3 + n_in do redis.call('SADD', key, ARGV[i]) end
  for i = 4 + n_in, #ARGV do redis.call('SREM', key, ARGV[i]) end
end
if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
return was
"""


def transition(was: bool, now: bool) -> str:
    if now:
        return INSIDE if was else ENTER
    return EXIT if was else OUTSIDE


@dataclass(frozen=True)
class CheckResult:
    """The transitions of one device check: ``of(fence_id)`` for any fence id (fences the device
    was never in are ``outside``); ``changes`` lists only the enter/exit events."""

    previous: frozenset[str]
    inside: frozenset[str]

    def of(self, fence_id: str) -> str:
        return transition(fence_id in self.previous, fence_id in self.inside)

    @property
    def changes(self) -> dict[str, str]:
        out = {f: ENTER for f in sorted(self.inside - self.previous)}
        out.update({f: EXIT for f in sorted(self.previous - self.inside)})
        return out


class DeviceTransitions:
    """Device states of one account in Redis.

    ``client`` is a ``redis.Redis`` (any client with ``register_script``), shared freely between
    threads. Keys: ``{prefix}state:{account_id}:{device}``.
    """

    def __init__(self, client, account_id: str, *, prefix: str = DEFAULT_PREFIX, ttl_s: int = DEFAULT_TTL_S) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        self.client = client
        self.account_id = str(account_id)
        self.prefix = prefix
        self.ttl_s = int(ttl_s)
        self._script = client.register_script(_LUA)

    def key(self, device: str) -> str:
        return f"{self.prefix}state:{self.account_id}:{device}"

    def update(self, device: str, inside: Iterable[str], checked: Sequence[str] | None = None) -> CheckResult:
        """Record that ``device`` is now inside ``inside`` and return its transitions.

        ``checked=None``: the check covered all the account's fences. Otherwise ``checked`` lists
        the fence ids looked at (``inside`` must be among them)."""
        keys, args = self._call_args(device, inside, checked)
        was = self._script(keys=keys, args=args)
        return self._result(was, args)

    def update_many(self, items: Sequence[tuple[str, Iterable[str], Sequence[str] | None]]) -> list[CheckResult]:
        """:meth:`update` for many devices in one round trip (a pipeline of EVALSHA calls, run in
        order, so a device listed twice sees its first update)."""
        if not items:
            return []
        pipe = self.client.pipeline(transaction=False)
        calls = []
        for device, inside, checked in items:
            keys, args = self._call_args(device, inside, checked)
            self._script(keys=keys, args=args, client=pipe)
            calls.append(args)
        return [self._result(was, args) for was, args in zip(pipe.execute(), calls, strict=True)]

    def forget(self, device: str) -> None:
        self.client.delete(self.key(device))

    def _call_args(self, device: str, inside: Iterable[str], checked: Sequence[str] | None):
        inside_l = list(dict.fromkeys(str(f) for f in inside))
        if checked is None:
            args = [self.ttl_s, "all", len(inside_l), *inside_l]
        else:
            inside_set = set(inside_l)
            rest = [f for f in dict.fromkeys(str(c) for c in checked) if f not in inside_set]
            args = [self.ttl_s, "subset", len(inside_l), *inside_l, *rest]
        return [self.key(device)], args

    @staticmethod
    def _result(was, args) -> CheckResult:
        n_in = int(args[2])
        previous = frozenset(w.decode() if isinstance(w, bytes) else str(w) for w in was)
        return CheckResult(previous=previous, inside=frozenset(args[3 : 3 + n_in]))
