"""Back end, step 4b: padding routed connections to their exact lengths, locally (issue 36).

After the first routing pass (:mod:`.route`, no length targets) every connection has a length,
and the timing (:mod:`.timing`) gives each LUT operand a *target*: the depth its wire must
have so that all operands of a LUT arrive in the same wave (SPEC section 4). The difference is
even (tags keep the cells' parity). Instead of routing again on ``(wire, depth)`` states, which
is what made the general back end slow and often fail, each route keeps its geometry and is
lengthened where it stands, as PipeRoute and SPR pad latency after placement:

* a *stub* at cell ``A`` of a route is a walk of free wires that leaves ``A`` and comes back
  to it (``A -> B -> A`` is 2 subcycles, ``A -> B -> C -> B -> A`` or around a 2 x 2 square 4,
  and so on); the route's next wire out of ``A`` (or, at the sink cell, the LUT) then reads the
  side the walk came back on, so everything after ``A`` arrives ``2 m`` subcycles later;
* a net's tree is padded top-down: at each cell the consumers (the wires leaving it and the
  LUT operand of a sink cell) each get the smallest slack left among the sinks they lead to,
  so a fan-out trunk carries the padding its branches share once;
* a wire is free when no net uses it and its cells are usable; a stub prefers cells already
  in use, since the report counts cells;
* a sink no stub can pad is routed again from where its path leaves the other sinks' paths,
  at exactly its target over free wires (a *trombone*, :meth:`.route.Router._search` on
  ``(wire, depth)`` states for that one connection);
* the sinks still left (at most :data:`NEGOTIATION_MAX_FAILED`) are negotiated locally: each
  is routed at its target over other nets' wires too, at PathFinder's cost, and the sinks that
  lose a wire are routed again the same way, within :data:`NEGOTIATION_BUDGET` reroutes per
  sink (rip-up and reroute, as detailed routers do), or until a round over the sinks left
  pads none (the searches that fail are the costly ones: up to :data:`.route.MAX_EXPANSIONS`
  states each; measured on ``priority``, 2026-12-07, 320 such searches took 18 s and padded
  3 sinks).

:func:`pad_routes` does it for every net and returns the sinks it could not pad; the caller
(:func:`.general.compile_on`) tries another placement, or routes every net again with exact
targets.
"""

import dataclasses

from . import maze

__all__ = ["PadResult", "pad_routes", "MAX_STUB_STEPS", "NEGOTIATION_BUDGET",
           "NEGOTIATION_MAX_FAILED"]

#: Walk states a stub search may visit before it gives up (per stub).
MAX_STUB_STEPS = 4000
#: Reroutes the negotiation may spend per sink that stubs and free trombones could not pad.
NEGOTIATION_BUDGET = 40
#: More sinks than this left by stubs and trombones: no negotiation (the placement has no
#: room; the caller tries another).
NEGOTIATION_MAX_FAILED = 12
#: PathFinder's present-congestion factor while negotiating (a taken wire costs this much
#: more per net already on it).
NEGOTIATION_PRESENT = 2.0
#: Its growth after each round over the sinks left.
NEGOTIATION_GROWTH = 1.5


@dataclasses.dataclass
class PadResult:
    """What :func:`pad_routes` did: ``stubs`` inserted, ``padded`` subcycles they add in all,
    ``detours`` (sinks routed again at their length over free wires), ``negotiated`` (sinks
    routed at their length over other nets' wires, those nets' sinks then routed again), and
    ``failed`` sinks ``(net, sink)`` still short of their target (or, after a negotiation,
    without a route: goal None)."""
    stubs: int = 0
    padded: int = 0
    detours: int = 0
    negotiated: int = 0
    failed: list = dataclasses.field(default_factory=list)


def pad_routes(router, targets):
    """Lengthen the routes in ``router`` (a :class:`.route.Router` after a pass without
    targets) so that every sink with a target reaches it exactly.

    :param targets: ``targets[net][sink]``: the depth the sink's wire must have, or None.
    :returns: :class:`PadResult`. Routes of failed sinks are left as padded as they could be
        (or unrouted, see :class:`PadResult`); the caller routes again or gives up.
    :raises ValueError: if a target is below the route's depth or of the other parity.
    """
    result = PadResult()
    for net, tree in enumerate(router.trees):
        need = {}
        for s, goal in enumerate(router.goals[net]):
            target = targets[net][s]
            if target is None or goal is None:
                continue
            depth = tree[goal][0]
            extra = target - depth
            if extra < 0 or extra % 2:
                raise ValueError(f"net {net} sink {s}: target {target} for a route of "
                                 f"{depth} wires")
            need[s] = extra         # zero too: a trunk is padded by its least slack
        if any(need.values()):
            _pad_net(router, net, need, result)
    still = []
    for net, s in result.failed:
        if _detour(router, net, s, targets[net][s]):
            result.detours += 1
        else:
            still.append((net, s))
    result.failed = _negotiate(router, targets, still, result) if still else []
    return result


def _negotiate(router, targets, failed, result):
    """Local rip-up and reroute for the sinks no stub or free trombone could pad: each is
    routed at its length over wires of other nets too (PathFinder's costs, the history of
    a wire raised each time it is taken), and the sinks whose routes lose a wire are routed
    again the same way, until none is left or :data:`NEGOTIATION_BUDGET` reroutes per
    failed sink are spent. :returns: the sinks still not at their target."""
    queue = list(failed)
    if len(failed) > NEGOTIATION_MAX_FAILED:
        return queue                        # a placement with no room: try another
    budget = NEGOTIATION_BUDGET * len(failed)
    present = router.present
    router.present = NEGOTIATION_PRESENT
    round_left = len(queue)
    moved = False                           # a sink padded in this round
    try:
        while queue and budget > 0:
            budget -= 1
            round_left -= 1
            if round_left < 0:              # a round over the queue: congestion costs more
                if not moved:
                    break                   # nothing padded in a whole round: it will not
                moved = False
                router.present *= NEGOTIATION_GROWTH
                round_left = len(queue)
            net, s = queue.pop(0)
            target = targets[net][s]
            goal = router.goals[net][s]
            if goal is not None and (target is None or router.trees[net][goal][0] == target):
                continue
            if _detour(router, net, s, target):
                result.detours += 1
                moved = True
                continue
            taken = _detour(router, net, s, target, steal=True)
            if taken is None:
                queue.append((net, s))
                continue
            result.negotiated += 1
            moved = True
            for w in taken:
                router.hist[w] += 1.0
                for victim in router.users(w):
                    if victim != net:
                        queue += [(victim, v) for v in _evict(router, victim, w)]
    finally:
        router.present = present
    return [(net, s) for net, s in queue
            if router.goals[net][s] is None or targets[net][s] is not None
            and router.trees[net][router.goals[net][s]][0] != targets[net][s]]


def _evict(router, net, wire):
    """Remove ``wire`` and what hangs from it from ``net``'s tree, and the branches that
    then lead to no sink; :returns: the sinks that lost their route."""
    children = _children(router.trees[net])
    removed, stack = [], [wire]
    while stack:
        w = stack.pop()
        removed.append(w)
        stack.extend(children.get(w, ()))
    for w in removed:
        router._remove(net, w)
    gone = set(removed)
    lost = [s for s, g in enumerate(router.goals[net]) if g in gone]
    for s in lost:
        router.goals[net][s] = None
    goals = set(router.goals[net])
    leaf = _dangling(router, net, goals)
    while leaf is not None:
        router._remove(net, leaf)
        leaf = _dangling(router, net, goals)
    return lost


def _dangling(router, net, goals):
    """A wire of ``net``'s tree that feeds nothing and is no sink's goal, or None."""
    tree = router.trees[net]
    parents = {p for _, p in tree.values()}
    for w in tree:
        if w not in parents and w not in goals:
            return w
    return None


def _detour(router, net, sink, target, steal=False):
    """Route sink ``sink`` of ``net`` again from where its path leaves the other sinks'
    paths, at exactly ``target`` wires (any length if None) over unused wires only (a
    trombone), or with ``steal`` over other nets' wires too at their PathFinder cost.
    :returns: True if done (with ``steal``: the list of wires taken from other nets); else
    False (None) and the route is left as it was."""
    tree = router.trees[net]
    shared = set()
    for s, goal in enumerate(router.goals[net]):
        if s != sink and goal is not None:
            shared.update(router.sink_path(net, s))
    private = [w for w in router.sink_path(net, sink) if w not in shared]
    saved = {w: tree[w] for w in private}
    old_goal = router.goals[net][sink]
    for w in private:
        router._remove(net, w)
    sources, sinks = router.nets[net]
    path = router._search(net, sources, sinks[sink], target, free_only=not steal)
    if path is None or target is not None and path[-1][1] != target:
        for w, (depth, parent) in saved.items():
            router._add(net, w, depth, parent)
        router.goals[net][sink] = old_goal
        return None if steal else False
    taken = [w for w, _, _ in path if w not in tree and router.occ[w]]
    for w, depth, parent in path:
        if w not in tree:
            router._add(net, w, depth, parent)
    router.goals[net][sink] = path[-1][0]
    return taken if steal else True


def _children(tree):
    """``{parent wire (-1: the source): [wires]}`` of a route tree."""
    children = {}
    for w, (_, parent) in tree.items():
        children.setdefault(parent, []).append(w)
    return children


def _pad_net(router, net, need, result):
    g = router.g
    tree = router.trees[net]
    children = _children(tree)
    goal_sinks = {}
    for s, goal in enumerate(router.goals[net]):
        if s in need:
            goal_sinks.setdefault(goal, []).append(s)
    below = {}                                  # wire -> sinks with slack at or under it

    def collect(w):
        sinks = list(goal_sinks.get(w, ()))
        for c in children.get(w, ()):
            sinks += collect(c)
        below[w] = sinks
        return sinks

    roots = children.get(-1, [])
    for r in roots:
        collect(r)
    left = dict(need)
    # Top-down, each wire's consumers at the cell it enters.
    stack = list(roots)
    while stack:
        w = stack.pop()
        if not below[w]:
            continue
        cell = g.dest[w]
        consumers = [(c, below[c]) for c in children.get(w, ()) if below[c]]
        sinks_here = goal_sinks.get(w, [])
        if sinks_here and cell >= 0:
            consumers.append((None, sinks_here))
        for child, sinks in consumers:
            amount = min(left[s] for s in sinks)
            entering = w
            while amount > 0 and cell >= 0:
                walk = _stub(router, cell, amount)
                if walk is None:
                    break
                back = _insert(router, net, entering, walk, children)
                if child is not None:
                    _reparent(router, net, child, back, children)
                else:
                    for s in sinks:
                        router.goals[net][s] = back
                entering = back
                for s in sinks:
                    left[s] -= len(walk)
                result.stubs += 1
                result.padded += len(walk)
                amount -= len(walk)
            if child is not None:
                stack.append(child)
    result.failed += [(net, s) for s, v in left.items() if v > 0]


def _stub(router, cell, amount):
    """Free wires for a walk out of ``cell`` and back to it of at most ``amount`` (even) wires,
    as long as possible (cells already in use first; :func:`.maze.stub`): the list of wires,
    or None."""
    g = router.g
    walk = maze.stub(cell, amount, g.dest_array, g.allowed_array, router.occ,
                     router.cell_use, g.xs_array, g.ys_array, MAX_STUB_STEPS,
                     router.scratch_taken())
    return walk.tolist() if len(walk) else None


def _insert(router, net, entering, walk, children):
    """Add ``walk`` (wires out of and back into ``entering``'s cell) to ``net``'s tree after
    ``entering``; returns the last wire (the one coming back)."""
    depth, _ = router.trees[net][entering]
    parent = entering
    for w in walk:
        depth += 1
        router._add(net, w, depth, parent)
        children.setdefault(parent, []).append(w)
        parent = w
    return parent


def _reparent(router, net, child, parent, children):
    """Make ``parent`` the parent of ``child`` and shift the depths under ``child``."""
    tree = router.trees[net]
    old_depth, old_parent = tree[child]
    shift = tree[parent][0] + 1 - old_depth
    children[old_parent].remove(child)
    children.setdefault(parent, []).append(child)
    tree[child] = (old_depth + shift, parent)
    stack = list(children.get(child, ()))
    while stack:
        w = stack.pop()
        d, p = tree[w]
        tree[w] = (d + shift, p)
        stack.extend(children.get(w, ()))
