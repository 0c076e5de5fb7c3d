"""Inference for compiled QVR programs: variational (SVI) and NUTS.

Small objects with one job each, in the manner of Pyro: a guide
(`AutoNormalGuide`), an objective (`ELBO`), an optimisation loop (`SVI`), a
sampler (`NUTSKernel`) and its driver (`MCMC`), and `bayesian_lift_parameters`,
which turns a program's weights into latent sites; `RunResults` keeps a run's
draws. They rely only on the program protocol (`sites.ProgramLike`, see
docs/architecture.md, "Runtime protocol"), so they work on any object that
implements it. A run from source (checking, data, the method, its summary) is
`qvr_core.runs`' (`run_program`, `fit`).
"""

from qvr_core.inference.elbo import ELBO
from qvr_core.inference.errors import InferenceError, NonFiniteLossError
from qvr_core.inference.guide import AutoNormalGuide
from qvr_core.inference.lift import LiftedProgram, bayesian_lift_parameters
from qvr_core.inference.mcmc import MCMC, MCMCResult
from qvr_core.inference.nuts import NUTSKernel
from qvr_core.inference.results import RunResults
from qvr_core.inference.svi import SVI
from qvr_core.inference.trace import trace

__all__ = [
    "ELBO",
    "MCMC",
    "SVI",
    "AutoNormalGuide",
    "InferenceError",
    "LiftedProgram",
    "MCMCResult",
    "NUTSKernel",
    "NonFiniteLossError",
    "RunResults",
    "bayesian_lift_parameters",
    "trace",
]
