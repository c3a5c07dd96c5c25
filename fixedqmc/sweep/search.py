"""The search of ``fixedqmc tune``: the cheapest per-variable widths that keep a rule.

A *plan* gives every variable a width (fixed-point word bits, or float mantissa bits).
The search is told how to judge plans, ``evaluate(plans) -> values`` (what the rule compares
with the tolerance, ``|diff| + 2 sigma``; ``inf`` for a plan that does not fit; a batch
may run in parallel), and how to price one, ``price(plan) -> tuple`` (resources in order
of priority: plans compare lexicographically, the first resource first).  It assumes what
the tuning of a data path rests on: narrowing any variable never makes the error smaller
(in expectation), and never makes the plan dearer.

1. **Common width** (:func:`common_width`): the narrowest width ``W0`` of a grid such that
   every variable at ``W0``, and at every wider width of the grid, passes (the sweep's rule);
   the grid is scanned from its widest end down, ``batch`` widths at a time.
2. **Floors** (:func:`tune_plan`, phase 1): for each variable that costs less when
   narrowed, the narrowest width in ``[low_v, W0]`` that passes with every other variable at
   ``W0``, by bisection, all variables' bisections in lockstep (one batch per halving).  Under
   the assumption no passing plan no wider than ``W0`` has a variable below its floor.  A
   variable whose floor leaves the value exactly as at ``W0`` (bit for bit) is *invisible*
   to the judge (it acts elsewhere: through sampling alone, say): it keeps ``W0``.
3. **Greedy** (phase 2): from every variable at ``W0``, the variables in order of cost saved
   per change of the rule's value at their floor (``saving / max(value(floor) - value(W0),
   tolerance * 1e-6)``, on the first resource the floor saves anything of); each is narrowed
   to its floor if the plan so far still passes, else to the narrowest passing width
   between its floor and its width so far (bisection).  Every accepted plan passes.
4. **Gap**: the plan of every variable at its floor is no dearer than any passing plan no
   wider than ``W0`` (the assumption), so its cost bounds the optimum from below and
   ``cost(tuned) - cost(floors)`` bounds the search's gap from above.

The result does not depend on the batch size (the number of workers): every decision is
taken on the same values in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

#: the rule's value of a plan
Evaluate = Callable[[list], list]


@dataclass
class SearchResult:
    """The tuned plan ``{variable: width}``, each variable's ``floors``, the common width,
    the costs (tuples in the order of ``price``) of the tuned plan, the common-width plan
    and the floors plan, the values of the first two, and ``log``: every plan judged, in the
    search's order (rows: ``phase``, ``variable``, ``width``, ``value``, ``passes``,
    ``accepted``, ``plan``), and the ``invisible`` variables (step 2 of the module
    docstring)."""

    plan: dict
    floors: dict
    common: int
    cost: tuple
    common_cost: tuple
    floor_cost: tuple
    value: float
    common_value: float
    log: list = field(default_factory=list)
    invisible: list = field(default_factory=list)

    @property
    def evaluations(self) -> int:
        """Plans judged (each a distinct plan)."""
        return len(self.log)


class NoPlanError(Exception):
    """No width of the grid passes (``width``: the widest, ``value``: its value)."""

    def __init__(self, width: int, value: float):
        super().__init__(f"the widest width, {width}, gives {value:.4g}")
        self.width, self.value = width, value


def _uniform(variables, w) -> dict:
    return {v: w for v in variables}


def common_width(variables: Sequence[str], grid: Sequence[int], evaluate: Evaluate,
                 tolerance: float, *, batch: int = 1, log: list | None = None
                 ) -> tuple[int, float]:
    """``(W0, value)``: the narrowest width of ``grid`` at which, and at every wider width of
    the grid, every variable at that width passes (``value <= tolerance``); raises
    :class:`NoPlanError` when the widest fails."""
    widths = sorted(set(grid), reverse=True)
    best = None
    for i in range(0, len(widths), max(1, batch)):
        chunk = widths[i:i + max(1, batch)]
        values = evaluate([_uniform(variables, w) for w in chunk])
        for w, value in zip(chunk, values):
            ok = value <= tolerance
            if log is not None:
                log.append({"phase": "common", "variable": "*", "width": w, "value": value,
                            "passes": ok, "accepted": False,
                            "plan": _uniform(variables, w)})
            if not ok:
                if best is None:
                    raise NoPlanError(w, value)
                return best
            best = (w, value)
    return best


def tune_plan(variables: Sequence[str], common: int, common_value: float, low: dict,
              evaluate: Evaluate, price: Callable[[dict], tuple], tolerance: float, *,
              log: list | None = None) -> SearchResult:
    """Phases 2-4 of the module docstring from every variable at ``common`` (which passes,
    with value ``common_value``); ``low``: each variable's narrowest width to try."""
    log = [] if log is None else log
    start = _uniform(variables, common)
    start_cost = price(start)
    # phase 1: floors, the variables that save something when narrowed
    saves = [v for v in variables if low[v] < common and price({**start, v: low[v]}) < start_cost]
    floors = {v: common for v in variables}
    floor_value = {v: common_value for v in variables}
    good = {v: common for v in saves}
    bad = {v: low[v] - 1 for v in saves}
    while True:
        open_ = [v for v in saves if good[v] - bad[v] > 1]
        if not open_:
            break
        mids = {v: (good[v] + bad[v]) // 2 for v in open_}
        values = evaluate([{**start, v: mids[v]} for v in open_])
        for v, value in zip(open_, values):
            ok = value <= tolerance
            log.append({"phase": "floor", "variable": v, "width": mids[v], "value": value,
                        "passes": ok, "accepted": False, "plan": {**start, v: mids[v]}})
            if ok:
                good[v], floor_value[v] = mids[v], value
            else:
                bad[v] = mids[v]
    floors.update(good)
    # a variable whose narrowing leaves the value bit for bit as it was is not seen by the
    # judge (it acts elsewhere, e.g. through sampling alone): kept at the common width
    invisible = [v for v in saves if floors[v] < common and floor_value[v] == common_value]
    floors.update(dict.fromkeys(invisible, common))

    # phase 2: greedy in order of cost saved per change of the value
    eps = tolerance * 1e-6

    def rank(v):
        saving = [a - b for a, b in zip(start_cost, price({**start, v: floors[v]}))]
        level = next((i for i, s in enumerate(saving) if s > 0), len(saving))
        ratio = saving[level] / max(floor_value[v] - common_value, eps) \
            if level < len(saving) else 0.0
        return (level, -ratio, v)

    plan, value = dict(start), common_value
    for v in sorted((v for v in saves if floors[v] < common), key=rank):
        lo, hi = floors[v] - 1, plan[v]  # hi passes (the plan so far); lo: try floor first
        trial = floors[v]
        while hi - lo > 1:
            got = evaluate([{**plan, v: trial}])[0]
            ok = got <= tolerance
            log.append({"phase": "greedy", "variable": v, "width": trial, "value": got,
                        "passes": ok, "accepted": False, "plan": {**plan, v: trial}})
            if ok:
                hi, value = trial, got
            else:
                lo = trial
            trial = (hi + lo) // 2
        if hi != plan[v]:
            next(r for r in log[::-1] if r["variable"] == v and r["width"] == hi
                 )["accepted"] = True
            plan[v] = hi
    floor_plan = {**start, **floors}
    return SearchResult(plan, floors, common, price(plan), start_cost, price(floor_plan),
                        value, common_value, log, invisible)


def gap(result: SearchResult) -> float:
    """The search's largest possible gap on the first resource, as a fraction of the tuned
    cost: ``(cost(tuned) - cost(floors)) / cost(tuned)`` (0 when the tuned plan is the
    floors plan, or costs nothing)."""
    tuned, floor = result.cost[0], result.floor_cost[0]
    return 0.0 if tuned <= 0 or not math.isfinite(tuned) else max(0.0, (tuned - floor) / tuned)
