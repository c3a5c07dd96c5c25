"""Operation counts of whole systems (fixedqmc.qmc.counts): they scale with the pairs and
particles the kernels loop over, and price in the system's own formats."""

import numpy as np
import pytest

from fixedqmc.cost import totals
from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.counts import count_operations, hardware_cost
from fixedqmc.run.config import load_config
from fixedqmc.run.plan import build_system


def helium(n_atoms, precision="float64"):
    return build_system(load_config(overrides={"system": {"n_atoms": n_atoms},
                                               "tables": {"r_max": 40.0},
                                               "precision": precision}))


def by_key(frame, stage, kernels):
    part = frame[(frame["stage"] == stage) & frame["kernel"].isin(kernels)]
    return {(k, v, o): c for k, v, o, c in zip(part["kernel"], part["variable"], part["op"],
                                                part["count"])}


def test_helium_counts_scale_with_the_pairs_and_the_partners_of_a_move():
    """Per walker, the distance and potential kernels work once per pair (3 pairs in He3, 6
    in He4); a move of one atom once per partner (2 and 3)."""
    counts = {}
    for n in (3, 4):
        system = helium(n)
        counts[n] = count_operations(system, system.initial_positions(5,
                                                                      np.random.default_rng(n)))
    # (which region's bin a lookup takes depends on the distance: bins are compared summed)
    bins = lambda d: sum(c for (_, _, op), c in d.items() if op.endswith("_bin"))  # noqa: E731
    others = lambda d: {k: c for k, c in d.items() if not k[2].endswith("_bin")}  # noqa: E731
    for stage, kernels, ratio, lookups in [
            ("evaluation", ("distance", "potential"), 2, (3, 6)),       # a lookup per pair
            ("move", ("distance", "wavefunction"), 1.5, (2 * 2, 2 * 3))]:  # partner, old+new
        three, four = by_key(counts[3], stage, kernels), by_key(counts[4], stage, kernels)
        assert (bins(three), bins(four)) == lookups
        three, four = others(three), others(four)
        assert three and three.keys() == four.keys()
        assert all(four[k] == ratio * three[k] for k in three), (stage, three, four)


def test_a_cost_of_helium_in_its_formats():
    system = helium(3, "fixed:32")
    pos = system.initial_positions(4, np.random.default_rng(0))
    rows = hardware_cost(system, pos)
    mul = rows[rows["op"] == "mul"]
    assert (mul["dsp"] > 0).all() and set(mul["result"]) == {
        system.formats()[f"{k}.{v}"] for k, v in zip(mul["kernel"], mul["variable"])}
    tables = rows[rows["op"] == "array"]
    assert len(tables) == 12 and (tables["memory"] > 0).all()  # four tables of a, b, c
    assert set(tables["format"]) <= set(system.formats().values())
    wide = totals(hardware_cost(helium(3, "fixed:48"), pos))
    assert wide["dsp"] > totals(rows)["dsp"] and wide["luts"] > totals(rows)["luts"]
    assert wide["memory"] >= totals(rows)["memory"]
    with pytest.raises(FixedQMCError, match="stage 'sweep'"):
        hardware_cost(system, pos, stage="sweep")


def test_a_system_without_counts_is_refused():
    class Bare:
        pass

    with pytest.raises(FixedQMCError, match="needs the optional protocol member "
                                            "operation_counts"):
        count_operations(Bare(), np.zeros((1, 2, 3)))


@pytest.mark.slow  # compiles the electron gas's profiling kernels (about 90 s); the same
# relation on a molecule runs in tests/systems/molecule/test_system.py
def test_a_move_of_the_electron_gas_counts_one_ratio_and_accepted_updates():
    """14 electrons, 7 per spin: a move's ratio is a dot product of 7 terms; an accepted
    move's update adds 7 x 7 terms into the u sums and subtracts 1 once, so per move the u
    terms are 49 times the -1s (the acceptance rate cancels)."""
    system = build_system(load_config(overrides={"system": {"kind": "heg", "electrons": 14,
                                                            "r_s": 2.0}}))
    counts = count_operations(system, system.initial_positions(6, np.random.default_rng(2)))
    move = by_key(counts, "move", ("determinant",))
    assert move["determinant", "ratio", "acc_add"] == 7
    assert 0 < move["determinant", "u", "sub"] <= 1
    assert move["determinant", "u", "acc_add"] == pytest.approx(49 * move["determinant", "u",
                                                                          "sub"])
    assert set(counts["stage"]) == {"evaluation", "move"}
