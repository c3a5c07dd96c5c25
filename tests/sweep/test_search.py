"""The search of ``fixedqmc tune`` on synthetic systems whose error is a known function of
each variable's bits, against the optimum found by enumerating every plan."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixedqmc.sweep.search import NoPlanError, common_width, gap, tune_plan

GRID = range(4, 25)


def synthetic(weights, costs):
    """``value(plan) = sum_v a_v 2**-w_v`` and ``price(plan) = (sum_v c_v w_v,)``, with a
    count of the plans judged."""
    judged = []

    def evaluate(plans):
        judged.extend(plans)
        return [sum(a * 2.0**-p[v] for v, a in weights.items()) for p in plans]

    def price(plan):
        return (sum(c * plan[v] for v, c in costs.items()),)
    return evaluate, price, judged


def optimum(weights, costs, common, low, tolerance):
    """The cheapest plan no wider than ``common`` that passes, by enumeration."""
    names = sorted(weights)
    best = None
    for ws in itertools.product(*[range(low, common + 1)] * len(names)):
        if sum(weights[v] * 2.0**-w for v, w in zip(names, ws)) <= tolerance:
            c = sum(costs[v] * w for v, w in zip(names, ws))
            best = c if best is None or c < best else best
    return best


def tune(weights, costs, tolerance, low=4, batch=1):
    evaluate, price, judged = synthetic(weights, costs)
    names = sorted(weights)
    log = []
    w0, v0 = common_width(names, GRID, evaluate, tolerance, batch=batch, log=log)
    res = tune_plan(names, w0, v0, dict.fromkeys(names, low), evaluate, price, tolerance,
                    log=log)
    return res, judged


def test_a_dominant_expensive_variable_is_cut_to_the_known_optimum():
    """x is dear and its error is small; y is cheap and sets the common width: the search
    narrows x as far as the tolerance allows and leaves y, the enumerated optimum."""
    weights, costs = {"x": 1.0, "y": 64.0}, {"x": 10.0, "y": 1.0}
    tol = 2.0**-10
    res, _ = tune(weights, costs, tol)
    assert res.common == 17  # 65 * 2**-17 <= 2**-10 < 65 * 2**-16
    assert res.cost[0] == optimum(weights, costs, res.common, 4, tol)
    assert res.plan["x"] < res.plan["y"]
    assert res.value <= tol


def test_a_variable_that_costs_nothing_is_not_narrowed_or_judged():
    weights, costs = {"x": 1.0, "free": 1.0}, {"x": 1.0, "free": 0.0}
    res, _ = tune(weights, costs, 2.0**-12)
    assert res.plan["free"] == res.common
    assert all(r["variable"] != "free" for r in res.log if r["phase"] != "common")


def test_a_variable_the_judge_cannot_see_keeps_the_common_width():
    """A dear variable that changes no value (it acts through sampling alone, say) is not
    narrowed to nothing: it keeps the common width and is named."""
    weights = {"x": 1.0, "y": 64.0, "ghost": 0.0}
    costs = {"x": 10.0, "y": 1.0, "ghost": 5.0}
    res, _ = tune(weights, costs, 2.0**-12)
    assert res.invisible == ["ghost"]
    assert res.plan["ghost"] == res.floors["ghost"] == res.common
    assert res.plan["x"] < res.common


@settings(max_examples=40, deadline=None)
@given(a=st.lists(st.floats(0.05, 50.0), min_size=3, max_size=3),
       c=st.lists(st.integers(1, 9), min_size=3, max_size=3),
       tol_exp=st.integers(6, 14))
def test_the_tuned_plan_passes_and_its_gap_bound_holds(a, c, tol_exp):
    """On any separable synthetic system: the tuned plan passes, costs no more than the
    common width, and the optimum lies between the floors plan's cost and the tuned one
    (so ``gap`` bounds how far the search is from it)."""
    weights = dict(zip("uvw", a))
    costs = dict(zip("uvw", c))
    tol = 2.0**-tol_exp
    res, _ = tune(weights, costs, tol)
    best = optimum(weights, costs, res.common, 4, tol)
    assert res.value <= tol
    assert res.floor_cost[0] <= best <= res.cost[0] <= res.common_cost[0]
    assert gap(res) >= (res.cost[0] - best) / res.cost[0] - 1e-12


def test_the_result_does_not_depend_on_the_batch_size():
    weights, costs = {"x": 3.0, "y": 0.5, "z": 9.0}, {"x": 4.0, "y": 1.0, "z": 2.0}
    one, _ = tune(weights, costs, 2.0**-9, batch=1)
    four, _ = tune(weights, costs, 2.0**-9, batch=4)
    assert (one.plan, one.floors, one.common) == (four.plan, four.floors, four.common)


def test_the_floors_are_found_with_few_plans_judged():
    """Bisection: about log2(width range) plans per variable, not one per width."""
    weights = {f"v{i}": 1.0 + i for i in range(6)}
    costs = dict.fromkeys(weights, 1.0)
    res, judged = tune(weights, costs, 2.0**-10)
    floors = [r for r in res.log if r["phase"] == "floor"]
    assert len(floors) <= 6 * 5  # 17 - 4 + 1 widths: at most 5 halvings each
    assert len(judged) == res.evaluations


def test_no_width_of_the_grid_passes():
    evaluate, _, _ = synthetic({"x": 1.0}, {"x": 1.0})
    with pytest.raises(NoPlanError) as err:
        common_width(["x"], GRID, evaluate, 2.0**-40)
    assert err.value.width == 24
