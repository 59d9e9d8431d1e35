"""Turn-by-turn steps for a leg: maneuvers, street names, distances, readable instructions.

A new step starts where the street name changes, where the path turns by more than
``TURN_MIN_DEG`` at a node that offers a choice, and on entering a roundabout (its step runs
through the roundabout and counts the exits passed). Maneuver types: ``depart``, ``turn``,
``new name`` (same direction, new street), ``continue`` (straight on at a junction),
``roundabout`` (with ``exit``: exits onto service roads are not counted, as OSRM), ``arrive``; modifiers ``uturn``, ``sharp right``, ``right``,
``slight right``, ``straight``, ``slight left``, ``left``, ``sharp left`` (OSRM's vocabulary).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.routing import profile as P

TURN_MIN_DEG = 35.0
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}
_CARDINAL = ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")


def modifier_for(angle: float) -> str:
    """``angle``: signed turn in degrees, positive to the right, 0 straight on."""
    a = abs(angle)
    if a <= 15:
        return "straight"
    side = "right" if angle > 0 else "left"
    if a <= 50:
        return f"slight {side}"
    if a <= 130:
        return side
    if a <= 170:
        return f"sharp {side}"
    return "uturn"


def _ordinal(n: int) -> str:
    return _ORDINAL.get(n, f"{n}th")


def instruction(mtype: str, modifier: str, name: str, *, bearing_after: float = 0.0, exit_n: int = 0,
                last: bool = True) -> str:
    onto = f" onto {name}" if name else ""
    if mtype == "depart":
        heading = _CARDINAL[int(((bearing_after % 360) + 22.5) // 45) % 8]
        return f"Head {heading}" + (f" on {name}" if name else "")
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
    if modifier.startswith("slight"):
        return f"Make a {modifier}{onto}"
    if modifier.startswith("sharp"):
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
        for t in range(tfirst[p], tfirst[p + 1]):
            if tto[t] == e:
                turn_s[i] = tcost[t]
                break
        a = (bstart[e] - bend[p] + 540.0) % 360.0 - 180.0
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


@njit(cache=True)
def _gather(edges, code, angle, turn_s, exits, start, end, length, duration, name_ids, bstart, bend,
            head, node_lat, node_lng):
    """Rows for the positions with a maneuver, and cumulative distance/time per position."""
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
    k = 0
    for i in range(n):
        if code[i] != 0:
            k += 1
    ints = np.empty((k, 5), np.int64)  # i, code, exits, name id, previous name id
    flts = np.empty((k, 5), np.float64)  # angle, bearing before, bearing after, lat, lng
    j = 0
    for i in range(n):
        if code[i] == 0:
            continue
        e = edges[i]
        p = edges[i - 1]
        ints[j, 0] = i
        ints[j, 1] = code[i]
        ints[j, 2] = exits[i]
        ints[j, 3] = name_ids[e]
        ints[j, 4] = name_ids[p]
        flts[j, 0] = angle[i]
        flts[j, 1] = bend[p]
        flts[j, 2] = bstart[e]
        flts[j, 3] = node_lat[head[p]]
        flts[j, 4] = node_lng[head[p]]
        j += 1
    return ints, flts, cd, ct


@njit(cache=True)
def _bearing_along(gf, gcum, glat, glng, edge, frac):
    """Bearing of the segment of ``edge``'s geometry at ``frac`` of its length."""
    a, b = gf[edge], gf[edge + 1]
    target = frac * gcum[b - 1]
    i = np.searchsorted(gcum[a:b], target, side="right") - 1
    i = min(max(i, 0), b - a - 2)
    p1, p2 = np.radians(glat[a + i]), np.radians(glat[a + i + 1])
    dl = np.radians(glng[a + i + 1] - glng[a + i])
    x = np.sin(dl) * np.cos(p2)
    y = np.cos(p1) * np.sin(p2) - np.sin(p1) * np.cos(p2) * np.cos(dl)
    return (np.degrees(np.arctan2(x, y)) + 360.0) % 360.0


@njit(cache=True)
def _leg_rows(edges, start, end, name_ids, flags, bstart, bend, tfirst, tto, tcost, turn_min, rb_flag, cls,
              minor_cls, length, duration, head, node_lat, node_lng, gf, gcum, glat, glng):
    """One call for the whole leg (each numba dispatch costs microseconds): the maneuver rows of
    ``_gather``, cumulative distance/time, and the bearings at the origin and the destination."""
    code, angle, turn_s, exits = _scan(edges, name_ids, flags, bstart, bend, tfirst, tto, tcost, turn_min, rb_flag,
                                       cls, minor_cls)
    ints, flts, cd, ct = _gather(edges, code, angle, turn_s, exits, start, end, length, duration, name_ids, bstart,
                                 bend, head, node_lat, node_lng)
    first, last = edges[0], edges[edges.shape[0] - 1]
    b_after = bstart[first] if start <= 0.0 else _bearing_along(gf, gcum, glat, glng, first, start)
    b_before = bend[last] if end >= 1.0 else _bearing_along(gf, gcum, glat, glng, last, end)
    return ints, flts, cd, ct, b_after, b_before


def build_steps(router, leg, *, last_leg: bool = True) -> list[dict]:
    g = router.g
    edges = leg.edges
    n = edges.shape[0]
    names = g.names
    name_ids = router.name_ids
    ints, flts, cd, ct, b_after, b_before = _leg_rows(
        edges, float(leg.start), float(leg.end), name_ids, router.flags, router.bstart, router.bend, router.tfirst,
        router.tto, router.tcost, TURN_MIN_DEG, P.FLAG_ROUNDABOUT, router.cls, P.CLASS_CODE["service"],
        router.length, router.duration, router.edge_head, router.node_lat, router.node_lng, router.gf, router.gcum,
        router.glat, router.glng)
    cd = cd.tolist()
    ct = ct.tolist()
    o, d = leg.origin, leg.destination
    # step = [type, modifier, exit, name, bearing_before, bearing_after, i, lat, lng]
    steps = [["depart", "", 0, names[int(name_ids[edges[0]])], 0.0, b_after, 0, o.lat, o.lng]]
    for (i, c, exit_n, name_id, prev_id), (a, bb, ba, lat, lng) in zip(ints.tolist(), flts.tolist(), strict=True):
        name = names[name_id]
        if c == _RB_EXIT:
            cur = steps[-1]
            if cur[0] == "roundabout":
                cur[2] = exit_n
                cur[3] = name
            continue
        mod = modifier_for(a)
        if c == _RB_ENTER:
            mtype = "roundabout"
        elif mod == "straight":
            mtype = "new name" if name_id != prev_id else "continue"
        else:
            mtype = "turn"
        steps.append([mtype, mod, 0, name, bb, ba, i, lat, lng])
    steps.append(["arrive", "", 0, names[int(name_ids[edges[-1]])], b_before, 0.0, n, d.lat, d.lng])
    out = []
    i1s = [step[6] for step in steps[1:]] + [n]
    for (mtype, mod, exit_n, name, bb, ba, i0, lat, lng), i1 in zip(steps, i1s, strict=True):
        maneuver = {"type": mtype, "bearing_before": round(bb) % 360, "bearing_after": round(ba) % 360}
        if mod:
            maneuver["modifier"] = mod
        if mtype == "roundabout":
            exit_n = max(1, exit_n)
            maneuver["exit"] = exit_n
        out.append({
            "instruction": instruction(mtype, mod, name, bearing_after=ba, exit_n=exit_n, last=last_leg),
            "maneuver": maneuver,
            "name": name,
            "distance": round(cd[i1] - cd[i0], 1),
            "duration": round(ct[i1] - ct[i0], 1),
            "location": {"lat": round(lat, 7), "lng": round(lng, 7)},
        })
    return out
