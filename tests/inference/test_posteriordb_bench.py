"""The posteriordb bench reads each peer's draws chain by chain as the peer lays them out.

PyStan 3 gives a variable's draws draw after draw with the chains interleaved; read chain
after chain, every "chain" mixed all of them and Stan's ESS came out as if each draw were
independent. The layout is built here by hand, so nothing is sampled."""

from __future__ import annotations

import numpy as np

from bench.posteriordb import stan_by_chain


def test_pystan_s_interleaved_draws_are_read_chain_by_chain() -> None:
    chains, draws = 4, 5
    # what PyStan hands over: entry [i, j, d * chains + c] holds chain c's draw d
    value = np.empty((2, 3, draws * chains))
    for c in range(chains):
        for d in range(draws):
            value[:, :, d * chains + c] = 100 * c + d + np.arange(6).reshape(2, 3) / 10
    got = stan_by_chain(value, (2, 3), chains)
    assert got.shape == (chains, draws, 2, 3)
    for c in range(chains):
        for d in range(draws):
            np.testing.assert_array_equal(got[c, d], 100 * c + d + np.arange(6).reshape(2, 3) / 10)


def test_a_scalar_s_draws_are_read_chain_by_chain() -> None:
    scalar = np.array([[10 * d + c for d in range(3) for c in range(2)]], dtype=float)
    got = stan_by_chain(scalar, (), 2)
    np.testing.assert_array_equal(got, [[0, 10, 20], [1, 11, 21]])
