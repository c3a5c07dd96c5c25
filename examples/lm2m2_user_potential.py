"""A user-supplied pair potential: any vectorised V(r) (r in angstrom, V in kelvin).

Use it by import path in an input (``potential = "lm2m2_user_potential:v_lm2m2_scaled"``
with this folder on PYTHONPATH), or register it by name from Python:

    from fixedqmc.systems.helium.potentials import register_potential
    register_potential("LM2M2-scaled", v_lm2m2_scaled)

User potentials are evaluated from two-region tables (any precision); the compiled
analytic form exists for the built-in potentials only.
"""

from fixedqmc.systems.helium.potentials import lm2m2


def v_lm2m2_scaled(r):
    """LM2M2 with its well deepened by 1 % (a toy change of the interaction)."""
    return 1.01 * lm2m2(r)
