"""Arena's referee engines: pure game rules, one folder per game, and the contract they share.

Imports nothing but the standard library and NumPy; no I/O, no clock, no global random state.
"""
