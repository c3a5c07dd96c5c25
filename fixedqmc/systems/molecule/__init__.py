"""Gaussian-basis molecules (H2 lattices of Cardamone et al. 2019, seed 001) built with PySCF.

Lengths in bohr, energies in hartree.
"""
