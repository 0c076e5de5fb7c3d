"""How many threads torch's operations use while chains sample: one, unless the model
has arithmetic in operations large enough for torch to share out.

torch splits some operations over its intra-op threads whatever their size: a batched
Cholesky factorisation or triangular solve runs one matrix per thread, so the chains'
potential of a Gaussian process (4 chains: four 11 x 11 matrices) meets the other
thread at every such operation. On an idle machine that costs a few microseconds. On a
machine where other torch processes keep the cores busy (a second run, a test suite's
other worker) the other thread waits for a core at each of them, for a slice of the
scheduler: measured on four chains of gp_pois_regr's recorded potential beside one busy
process, 429 us a call on two threads against 137 us on one (`bench/sampling_threads.py`;
126 and 134 us on an idle machine), and 12 ms against 12 us for one batched 8 x 8
Cholesky. A model this small gains nothing from a second thread even when it has the
cores to itself, so its chains run on one.

The same holds for a lifted network, whose potential is thousands of operations of a
few hundred elements each (`seq2seq`, a transformer, GRU and LSTM language models:
40,000 to 130,000 coordinates). torch splits an elementwise operation only from
`work.GRAIN_ELEMENTS` elements up, so most of that arithmetic runs on one thread anyway.
Measured on four chains' recorded potentials (`bench/sampling_threads.py`), two
threads took 0.65 to 2.09 times one thread's time on an idle machine and 2.7 to 4.5
times beside one busy process; `seq2seq@12d1a14`'s NUTS ran 444 s alone and past
2,400 s beside a test suite. What decides is therefore the arithmetic in operations
torch can split (`Work.split_seconds`). A linear regression over 200,000 rows, every
operation a whole column, took 0.61 times one thread's time on two (1.92 times beside a
busy process) and keeps torch's threads here (`qvr run` keeps a model program on one
thread throughout: `runs.model_data.one_thread`).

The choice reads the model's counted arithmetic (`inference.work`), not the clock, so a
`--seed` run takes the same path, and rounds the same way, on a loaded machine as on an
idle one.

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

#: A model whose one evaluation is counted at less arithmetic than this in operations
#: torch splits over its threads (`Work.split_seconds`, about a nanosecond per element)
#: samples on one thread.
ONE_THREAD_BELOW_SECONDS = 1e-3


def sampling_threads(work: Work) -> int:
    """The intra-op threads chains of a model whose one evaluation costs `work` use."""
    if work.split_seconds < ONE_THREAD_BELOW_SECONDS:
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
