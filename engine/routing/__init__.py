"""Routing by car, on foot and by bicycle: profiles, road graph, contraction hierarchy, snapping,
directions.

    profile.py     OSM tags -> drivable? which directions, speed, flags (the car profile)
    foot.py        the same for walkers, bicycle.py for cyclists (way_tags.py: what they share)
    profiles.py    the profile registry: names, aliases, each profile's graph directory
    build.py       PBF -> RoadGraph (import time; the "roads" stage in engine/ingest/roads.py)
    graph.py       RoadGraph: the numpy arrays under <version>/graph/, memory-mapped (READ THIS
                   first to build on the graph: array names, dtypes, cost conventions)
    ch.py          contraction hierarchy over the turn graph (build + numba query)
    search.py      plain numba Dijkstra over the turn graph (oracle, alternatives, one-to-many)
    snap.py        EdgeSnapper: nearest drivable edge (projected point), candidates in a radius
    router.py      Router (dataset component "router"): legs, summaries, geometry, alternatives
    directions.py  turn-by-turn steps and instructions

The service function is engine/services/routing.py.
"""
