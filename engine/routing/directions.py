"""Turn-by-turn steps for a leg: maneuvers, street names, distances, readable instructions.

A new step starts where the street name changes, where the path turns by more than
``TURN_MIN_DEG`` at a node that offers a choice, and on entering a roundabout (its step runs
through the roundabout and counts the exits passed). Maneuver types: ``depart``, ``turn``,
``new name`` (same direction, new street), ``continue`` (straight on at a junction),
``roundabout`` (with ``exit``: exits onto service roads are not counted, as OSRM), ``arrive``; modifiers ``uturn``, ``sharp right``, ``right``,
``slight right``, ``straight``, ``slight left``, ``left``, ``sharp left`` (OSRM's vocabulary).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from engine.geo import bearing_deg
from engine.routing import profile as P
from engine.routing.turns import turn_cost

_bearing_deg = njit(cache=True)(bearing_deg)  # the same formula, callable from the kernels below

TURN_MIN_DEG = 35.0
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}
_CARDINAL = ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")


def _ordinal(n: int) -> str:
    return _ORDINAL.get(n, f"{n}th")


@lru_cache(maxsize=4096)
def _instruction(mtype: str, modifier: str, name: str, heading: int, exit_n: int, last: bool) -> str:
    """The readable instruction (cached: routes repeat the same streets and maneuvers).
    ``heading``: index into ``_CARDINAL``, used by ``depart``."""
    onto = f" onto {name}" if name else ""
    if mtype == "depart":
        return f"Head {_CARDINAL[heading]}" + (f" on {name}" if name else "")
    if mtype == "arrive":
        return "You have arrived at your destination" if last else "You have arrived at your waypoint"
    if mtype == "roundabout":
        return f"Enter the roundabout and take the {_ordinal(exit_n)} exit{onto}"
    if mtype == "new name":
        return f"Continue onto {name}" if name else "Continue"
    if mtype == "continue":
        return f"Continue straight{onto}"
    if modifier == "uturn":
        return f"Make a U-turn{onto}"
    if modifier == "straight":
        return f"Go straight{onto}"
    if modifier.startswith(("slight", "sharp")):
        return f"Make a {modifier}{onto}"
    return f"Turn {modifier}{onto}"


# maneuver codes from _scan
_NONE, _TURN, _RB_ENTER, _RB_EXIT = 0, 1, 2, 3


@njit(cache=True)
def _scan(edges, name_ids, flags, bstart, bend, tfirst, tto, tcost, turn_min, rb_flag, cls, minor_cls):
    """Per position i (edge i entered from edge i-1): maneuver code, signed angle, turn seconds,
    and for roundabouts the running count of exits passed."""
    n = edges.shape[0]
    code = np.zeros(n, np.int64)
    angle = np.zeros(n, np.float64)
    turn_s = np.zeros(n, np.float64)
    exits = np.zeros(n, np.int64)
    passed = 0
    for i in range(1, n):
        p = edges[i - 1]
        e = edges[i]
        choices = tfirst[p + 1] - tfirst[p]
        turn_s[i] = turn_cost(tfirst, tto, tcost, p, e)
        a = (np.float64(bstart[e]) - np.float64(bend[p]) + 540.0) % 360.0 - 180.0  # float32 bearings
        angle[i] = a
        rb_p = (flags[p] & rb_flag) != 0
        rb = (flags[e] & rb_flag) != 0
        if rb and not rb_p:
            code[i] = _RB_ENTER
            passed = 0
        elif rb and rb_p:
            for t in range(tfirst[p], tfirst[p + 1]):
                # exits onto service roads (driveways, parkings) are not counted, as OSRM does
                if (flags[tto[t]] & rb_flag) == 0 and cls[tto[t]] != minor_cls:
                    passed += 1
                    break
        elif rb_p and not rb:
            code[i] = _RB_EXIT
            exits[i] = passed + 1
        else:
            name_change = name_ids[e] != name_ids[p]
            if (abs(a) > turn_min and choices > 1) or (name_change and (name_ids[e] != 0 or abs(a) > turn_min)):
                code[i] = _TURN
    return code, angle, turn_s, exits


# step kinds from _steps; modifiers indexed by _modifier_code
_KINDS = ("depart", "turn", "new name", "continue", "roundabout", "arrive")
_DEPART, _K_TURN, _NEW_NAME, _CONTINUE, _ROUNDABOUT, _ARRIVE = range(6)
_MODIFIERS = ("", "straight", "slight right", "right", "sharp right", "uturn", "slight left", "left", "sharp left")


@njit(cache=True)
def _modifier_code(angle):
    """Index into ``_MODIFIERS`` for a signed turn in degrees (positive to the right, 0 straight
    on): straight up to 15°, slight up to 50°, plain up to 130°, sharp up to 170°, then u-turn."""
    a = abs(angle)
    if a <= 15.0:
        return 1
    base = 1 if angle > 0 else 5
    if a <= 50.0:
        return base + 1
    if a <= 130.0:
        return base + 2
    if a <= 170.0:
        return base + 3
    return 5


@njit(cache=True)
def _bearing_int(b):
    return int(np.rint(b)) % 360


@njit(cache=True)
def _steps(
    edges,
    code,
    angle,
    turn_s,
    exits,
    start,
    end,
    length,
    duration,
    name_ids,
    bstart,
    bend,
    head,
    node_lat,
    node_lng,
    origin,
    destination,
    b_after,
    b_before,
):
    """The finished step rows, depart to arrive: ints (kind, modifier, exit, name id, bearing before,
    bearing after) and floats (distance m and duration s to one decimal, lat/lng to seven).

    A step runs from its maneuver to the next one; a roundabout's exit names its step's street
    and exit number instead of starting a step."""
    n = edges.shape[0]
    cd = np.zeros(n + 1, np.float64)
    ct = np.zeros(n + 1, np.float64)
    for i in range(n):
        e = edges[i]
        lo = start if i == 0 else 0.0
        hi = end if i == n - 1 else 1.0
        f = hi - lo
        if f < 0.0:
            f = 0.0
        cd[i + 1] = cd[i] + f * length[e]
        ct[i + 1] = ct[i] + f * duration[e] + turn_s[i]
    k = 2
    for i in range(n):
        if code[i] == _TURN or code[i] == _RB_ENTER:
            k += 1
    ints = np.zeros((k, 6), np.int64)
    flts = np.zeros((k, 4), np.float64)
    at = np.zeros(k + 1, np.int64)  # edge position where each step starts
    ints[0, 0] = _DEPART
    ints[0, 3] = name_ids[edges[0]]
    ints[0, 5] = _bearing_int(b_after)
    flts[0, 2] = origin[0]
    flts[0, 3] = origin[1]
    j = 1
    for i in range(1, n):
        c = code[i]
        if c == _NONE:
            continue
        e = edges[i]
        p = edges[i - 1]
        if c == _RB_EXIT:
            if ints[j - 1, 0] == _ROUNDABOUT:
                ints[j - 1, 2] = exits[i]
                ints[j - 1, 3] = name_ids[e]
            continue
        mod = _modifier_code(angle[i])
        if c == _RB_ENTER:
            kind = _ROUNDABOUT
        elif mod == 1:
            kind = _NEW_NAME if name_ids[e] != name_ids[p] else _CONTINUE
        else:
            kind = _K_TURN
        ints[j, 0] = kind
        ints[j, 1] = mod
        ints[j, 3] = name_ids[e]
        ints[j, 4] = _bearing_int(bend[p])
        ints[j, 5] = _bearing_int(bstart[e])
        flts[j, 2] = node_lat[head[p]]
        flts[j, 3] = node_lng[head[p]]
        at[j] = i
        j += 1
    ints[j, 0] = _ARRIVE
    ints[j, 3] = name_ids[edges[n - 1]]
    ints[j, 4] = _bearing_int(b_before)
    flts[j, 2] = destination[0]
    flts[j, 3] = destination[1]
    at[j] = n
    at[j + 1] = n
    for s in range(j + 1):
        flts[s, 0] = np.rint((cd[at[s + 1]] - cd[at[s]]) * 10.0) / 10.0
        flts[s, 1] = np.rint((ct[at[s + 1]] - ct[at[s]]) * 10.0) / 10.0
        flts[s, 2] = np.rint(flts[s, 2] * 1e7) / 1e7
        flts[s, 3] = np.rint(flts[s, 3] * 1e7) / 1e7
    return ints[: j + 1], flts[: j + 1]


@njit(cache=True)
def _bearing_along(gf, gcum, glat, glng, edge, frac):
    """Bearing of the segment of ``edge``'s geometry at ``frac`` of its length."""
    a, b = gf[edge], gf[edge + 1]
    target = frac * gcum[b - 1]
    i = np.searchsorted(gcum[a:b], target, side="right") - 1
    i = min(max(i, 0), b - a - 2)
    return _bearing_deg(glat[a + i], glng[a + i], glat[a + i + 1], glng[a + i + 1])


@njit(cache=True)
def _leg_steps(
    edges,
    start,
    end,
    origin,
    destination,
    name_ids,
    flags,
    bstart,
    bend,
    tfirst,
    tto,
    tcost,
    turn_min,
    rb_flag,
    cls,
    minor_cls,
    length,
    duration,
    head,
    node_lat,
    node_lng,
    gf,
    gcum,
    glat,
    glng,
):
    """One call for the whole leg (each numba dispatch costs microseconds): ``_scan``, the bearings
    at the origin and the destination, then ``_steps``."""
    code, angle, turn_s, exits = _scan(
        edges, name_ids, flags, bstart, bend, tfirst, tto, tcost, turn_min, rb_flag, cls, minor_cls
    )
    first, last = edges[0], edges[edges.shape[0] - 1]
    b_after = bstart[first] if start <= 0.0 else _bearing_along(gf, gcum, glat, glng, first, start)
    b_before = bend[last] if end >= 1.0 else _bearing_along(gf, gcum, glat, glng, last, end)
    return _steps(
        edges,
        code,
        angle,
        turn_s,
        exits,
        start,
        end,
        length,
        duration,
        name_ids,
        bstart,
        bend,
        head,
        node_lat,
        node_lng,
        origin,
        destination,
        b_after,
        b_before,
    )


def build_steps(router, leg, *, last_leg: bool = True) -> list[dict]:
    o, d = leg.origin, leg.destination
    ints, flts = _leg_steps(
        leg.edges,
        float(leg.start),
        float(leg.end),
        (float(o.lat), float(o.lng)),
        (float(d.lat), float(d.lng)),
        router.name_ids,
        router.flags,
        router.bstart,
        router.bend,
        router.tfirst,
        router.tto,
        router.tcost,
        TURN_MIN_DEG,
        P.FLAG_ROUNDABOUT,
        router.cls,
        P.CLASS_CODE["service"],
        router.length,
        router.duration,
        router.edge_head,
        router.node_lat,
        router.node_lng,
        router.gf,
        router.gcum,
        router.glat,
        router.glng,
    )
    names = router.g.names
    out = []
    for (kind, mod_i, exit_n, name_id, bb, ba), (dist, dur, lat, lng) in zip(ints.tolist(), flts.tolist(), strict=True):
        mtype, mod, name = _KINDS[kind], _MODIFIERS[mod_i], names[name_id]
        maneuver = {"type": mtype, "bearing_before": bb, "bearing_after": ba}
        if mod:
            maneuver["modifier"] = mod
        if kind == _ROUNDABOUT:
            exit_n = maneuver["exit"] = max(1, exit_n)
        # the nearest of the 8 compass points: (ba + 22.5) // 45 for a whole-degree bearing
        heading = ((ba + 22) // 45) % 8 if kind == _DEPART else 0
        out.append(
            {
                "instruction": _instruction(mtype, mod, name, heading, exit_n, last_leg),
                "maneuver": maneuver,
                "name": name,
                "distance": dist,
                "duration": dur,
                "location": {"lat": lat, "lng": lng},
            }
        )
    return out
