"""A dimer whose exact ground state is known independently and whose trial function is
close to (not equal to) it, so VMC and DMC can be checked sharply and fast.

V(r) = 2 D [T2'' + 2 T2'/r + T2'^2] + B(r): for psi_T = exp(T2) the local energy is exactly
the bump B(r) = -1 K exp(-((r - 3.5 A) / 0.7 A)^2), so E_VMC = <B> (quadrature) while the
exact energy (radial finite-difference solve) is lower because psi_T ignores the bump.
"""

import numpy as np

from fixedqmc.systems.helium.constants import HBAR2_2M
from fixedqmc.systems.helium.trial import PairProductParams, dt2, pair_laplacian_term

PARAMS = PairProductParams(b=0.0, a=-0.5, alpha=1.0, a_k=(0, 0, 0, 0, 0, -118.8))


def toy_potential(r):
    r = np.asarray(r, np.float64)
    return (2 * HBAR2_2M * (pair_laplacian_term(r, PARAMS) + dt2(r, PARAMS) ** 2)
            - np.exp(-((r - 3.5) / 0.7) ** 2))
