"""How many threads torch's operations use while chains sample a small model: one.

torch splits some operations over its intra-op threads whatever their size: a batched
Cholesky factorisation or triangular solve runs one matrix per thread, so the chains'
potential of a Gaussian process (4 chains: four 11 x 11 matrices) meets the other
thread at every such operation. On an idle machine that costs a few microseconds. On a
machine where other torch processes keep the cores busy (a second run, a test suite's
other worker) the other thread waits for a core at each of them, for a slice of the
scheduler: measured on gp_pois_regr's recorded potential beside two such processes, 60 ms
a call on two threads against 0.5 ms on one (`bench/sampling_threads.py`), and 12 ms
against 12 us for one batched 8 x 8 Cholesky. A model this small gains nothing from a
second thread even when it has the cores to itself, so its chains run on one.

The choice reads the model's counted arithmetic (`inference.work`), not the clock, so a
`--seed` run takes the same path, and rounds the same way, on a loaded machine as on an
idle one. A model with more arithmetic (a network's matrix products) keeps torch's
threads, which share that arithmetic out.

NumPy's BLAS (the OpenBLAS of numpy's wheels, a thread per core) meets the same wait.
Pathfinder factors and solves with matrices of at most 400 x 400 and the Fisher metrics
decompose theirs at each window's end: measured on the server's worker (niced below
the editor, as it is) with one other process busy on the second core, a tiny network's
316 Cholesky factorisations took 0.117 s each against 0.006 s in a process that is not
niced, and a 6-step NUTS run 76 s against 8 s. The chains already share the cores out
(a process a core), so a run's NumPy arithmetic stays on one thread (`one_blas_thread`)
wherever it runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from threadpoolctl import threadpool_limits

from qvr_core.inference.work import Work

#: A model whose one evaluation is counted at less arithmetic than this (`Work.
#: arithmetic_seconds`, about a nanosecond per element) samples on one thread.
ONE_THREAD_BELOW_SECONDS = 1e-3


def sampling_threads(work: Work) -> int:
    """The intra-op threads chains of a model whose one evaluation costs `work` use."""
    if work.arithmetic_seconds < ONE_THREAD_BELOW_SECONDS:
        return 1
    return torch.get_num_threads()


@contextmanager
def intra_op_threads(threads: int) -> Iterator[None]:
    """torch's intra-op threads set to `threads` for the block (then as they were)."""
    before = torch.get_num_threads()
    if threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread for the block (then as it was): threadpoolctl finds the
    BLAS libraries this process loaded (OpenBLAS, MKL, BLIS), whichever numpy uses."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
