"""The gallery's BERT against d2l's PyTorch BERT, pretrained alike.

    .venv/bin/python bench/bert_pretrain.py [--steps 2000] [--batch 32] [--lr 0.001]
        [--seeds 5] [--seed 0] [--threads 1] [--evals 4] [--device cpu|cuda]
        [--objective d2l|likelihood] [--init own|d2l] [--control] [--jobs 1]

Targets (docs/gallery/bert_mlm.md): after pretraining, the compiled
`examples/bert_mlm.qvr` predicts held-out masked tokens with accuracy >= 0.60
and next sentences with accuracy >= 0.65, at no more than 1.1x d2l's time per
step (issue #47; it was 3x before SVI's recorded step took the batch as input).

The data are the page's: `pretraining_batch` (and what it uses) is read from
the page's "Generating data" block, so the bench trains on what the page
shows: pairs of 9 to 20 real positions padded to 20, 15% of the words picked
(80% `<mask>`, 10% a random word, 10% unchanged), a fresh batch every step,
the same batch for both models.

- qvr: the compiled program trained as the page's SVI block does
  (`AutoNormalGuide` + `ELBO` + `SVI` on `Padded` inputs and a `Masked`
  observation; the loss is minus the log-likelihood, mean over pairs).
- d2l: `BERTModel` of `tests/runtime/test_bert_d2l.py` (d2l's classes,
  dropout 0, the same sizes).

Both train on one objective (`--objective`). `d2l` (the default) is d2l's loss:
the masked-token cross-entropy averaged over the batch's real picks, plus the
NSP cross-entropy averaged over the pairs. qvr says it as the page does, with
each pick's log-likelihood weighted (pairs) / (picks) (`Masked(..., weights)`).
`likelihood` is the plain log-likelihood: a pair's picks (1 to 3) summed, so
next-sentence prediction has about half the weight d2l gives it.

One run's NSP accuracy moves by several points with the seed, for both models
(d2l's from 0.67 to 0.78 over seeds 0 to 2), far more than the two objectives
or the two implementations differ. So both models train from each of several
seeds (`--seeds`, default 5), on the same batches within a seed, and the bench
compares the means with the paired difference and its standard error.

Both start as PyTorch's layer defaults start (`Affine` draws its weights as
`nn.Linear` does; tables N(0, 1) as `nn.Embedding`; LayerNorm 1 and 0) from
`torch.manual_seed(seed)` (not the same draws: `--init own`, the default), and
both train with Adam (betas 0.9, 0.999, eps 1e-8, no weight decay) at the same
learning rate, in function space: qvr's dense layers store their weights at
unit scale and multiply by 1/sqrt(fan-in) in the forward pass, so Adam on the
stored weight would step the layer's effective weight sqrt(fan-in) times less
than d2l's `nn.Linear`; `param_groups` gives those weights `lr * sqrt(fan-in)`
and `eps / sqrt(fan-in)`, which makes each qvr step the step d2l's Adam takes
(qvr_core/runtime/paramnet.py).

`--init d2l` starts qvr from d2l's very draws instead (copied as
`tests/runtime/test_bert_d2l.py` copies them). Then the two runs of a seed
share the starting point, the batches, the objective and the optimiser's
steps, and differ only in floating-point rounding: what is left of the
accuracy difference is the implementation's, not the draws'.

Rounding alone carries two runs apart over 2,000 steps: Adam turns a
last-bit difference into another trajectory. `--control` measures how far:
it also trains d2l's model a second time (`d2l+ulp`), from its draws moved
one unit in the last place, and prints the spread of d2l+ulp - d2l beside
that of qvr - d2l. Equal spreads say qvr differs from d2l as d2l differs
from itself.

`--jobs N` trains N seeds at a time, each in its own process with its own
torch thread(s): a seed's accuracies do not depend on it (each seed's runs
are the same computations in any process); the wall time does, and so do the
step times when the processes outnumber the free cores.

Accuracy is measured on 512 held-out pairs drawn with a fixed seed: masked
tokens over the real picks, NSP over the pairs. Time per step is the median
wall time of a training step (forward, backward, Adam), the two models
alternating step by step so load affects both alike.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qvr_core.dsl import load  # noqa: E402
from qvr_core.inference import ELBO, SVI, AutoNormalGuide  # noqa: E402
from qvr_core.inference.recorded_step import AFTER_SECONDS  # noqa: E402
from qvr_core.runtime.attention import Padded  # noqa: E402
from qvr_core.runtime.paramnet import param_groups  # noqa: E402
from qvr_core.runtime.program import Masked, ProgramModule  # noqa: E402
from tests.gallery.pages import page_blocks  # noqa: E402
from tests.runtime.test_bert_d2l import BERTModel, copy_weights  # noqa: E402

PAGE = "bert_mlm"
HELD_OUT, HELD_OUT_SEED = 512, 12345
TARGETS = {"mlm": 0.60, "nsp": 0.65}
MAX_SLOWDOWN = 1.1
CONTROL = "d2l+ulp"  # d2l's model trained again from its draws moved one ulp (--control)
WIDTH = len(CONTROL) + 4

Batch = tuple[Padded, Tensor, Tensor, dict[str, Tensor]]


def page_batches() -> Callable[[int], Batch]:
    """`pretraining_batch` as the page's data block defines it: the block up to that
    definition is run (imports, the seeded toy corpus, the helpers)."""
    data = next(b for b in page_blocks(PAGE, "python") if b.kind == "data")
    tree = ast.parse(data.code)
    body = []
    for node in tree.body:
        body.append(node)
        if isinstance(node, ast.FunctionDef) and node.name == "pretraining_batch":
            break
    else:
        raise SystemExit(f"docs/gallery/{PAGE}.md: the data block defines no pretraining_batch")
    scope: dict[str, Any] = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), f"{PAGE}.md", "exec"), scope)
    return scope["pretraining_batch"]


class Trainer:
    """One model and its optimiser: a timed training step, and its predictions."""

    def __init__(
        self,
        step: Callable[[Batch], float],
        predict: Callable[[Padded, Tensor], tuple[Tensor, Tensor]],
        stepping: Callable[[], str] = lambda: "eager",
    ) -> None:
        self.step = step
        self.predict = predict
        self.stepping = stepping  # how the steps run now, in words
        self.times: list[float] = []

    def timed_step(self, batch: Batch) -> float:
        start = time.perf_counter()
        value = self.step(batch)
        self.times.append(time.perf_counter() - start)
        return value

    @torch.no_grad()
    def accuracy(self, batch: Batch) -> tuple[float, float]:
        """Masked-token accuracy over the real picks, and NSP accuracy. The random state
        is put back after: qvr's run draws the sites it is not given, and those draws
        must not move the training batches that follow, or `--evals` would change them."""
        x, picks, pick_mask, obs = batch
        with torch.random.fork_rng():
            mlm_logits, nsp_logits = self.predict(x, picks)
        right = mlm_logits.argmax(-1) == obs["masked_tokens"]
        mlm = float(right[pick_mask].float().mean())
        nsp = float((nsp_logits.argmax(-1) == obs["is_next"]).float().mean())
        return mlm, nsp


def qvr_trainer(
    model: ProgramModule, lr: float, eager: bool = False, objective: str = "d2l"
) -> Trainer:
    """The page's SVI; `objective` "d2l" weighs each real pick (pairs) / (picks), so
    minus the mean log-likelihood over pairs is d2l's loss, "likelihood" weighs none."""
    guide = AutoNormalGuide(model, observed_names={"masked_tokens", "is_next"})
    optim = torch.optim.Adam(param_groups([model, guide], lr), lr=lr)
    svi = SVI(
        model, guide, optim, ELBO(num_particles=1), record_after=None if eager else AFTER_SECONDS
    )

    def step(batch: Batch) -> float:
        x, picks, pick_mask, obs = batch
        targets = obs["masked_tokens"]
        if objective == "d2l":
            masked = Masked.averaged(targets, pick_mask)
        else:
            masked = Masked(targets, pick_mask)
        return svi.step(x, {"pred_positions": picks, **obs, "masked_tokens": masked})

    def predict(x: Padded, picks: Tensor) -> tuple[Tensor, Tensor]:
        values = model.run(x, {"pred_positions": picks}).values
        m = model.morphisms
        return m["mlm_out"].params(values["m_norm"]), m["nsp_out"].params(torch.tanh(values["n"]))

    return Trainer(step, predict, lambda: svi.stepping)


def d2l_trainer(bert: BERTModel, lr: float, objective: str = "d2l") -> Trainer:
    """d2l's model and Adam; `objective` "d2l" is d2l's loss, "likelihood" minus the
    log-likelihood of a pair's picks and its next-sentence label, mean over pairs."""
    optim = torch.optim.Adam(bert.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss(reduction="none")

    def forward(x: Padded, picks: Tensor) -> tuple[Tensor, Tensor]:
        tokens, segments = x.values[..., 0], x.values[..., 1]
        _, mlm_logits, nsp_logits = bert(tokens, segments, x.lengths, picks)
        return mlm_logits, nsp_logits

    def step(batch: Batch) -> float:
        x, picks, pick_mask, obs = batch
        optim.zero_grad()
        mlm_logits, nsp_logits = forward(x, picks)
        weights = pick_mask.float().reshape(-1)
        per_pick = loss(
            mlm_logits.reshape(-1, mlm_logits.shape[-1]), obs["masked_tokens"].reshape(-1)
        )
        if objective == "likelihood":
            per_pair = (per_pick * weights).reshape(pick_mask.shape).sum(-1)
            total = (per_pair + loss(nsp_logits, obs["is_next"])).mean()
        else:
            mlm_l = (per_pick * weights).sum() / (weights.sum() + 1e-8)
            total = mlm_l + loss(nsp_logits, obs["is_next"]).mean()
        total.backward()
        optim.step()
        return float(total.detach())

    return Trainer(step, forward)


Result = tuple[dict[str, tuple[float, float]], dict[str, list[float]]]


def train_once(
    seed: int,
    args: argparse.Namespace,
    pretraining_batch: Callable[[int], Batch],
    held_out: Batch,
    say: Callable[[str], None] = lambda line: print(line, flush=True),
) -> Result:
    """Both models from `seed`, trained on the same batches; their held-out accuracies
    (MLM, NSP) and step times. Progress goes to `say`, a line at a time."""
    torch.manual_seed(seed)
    model = load(ROOT / "examples" / f"{PAGE}.qvr").morphism
    assert isinstance(model, ProgramModule)
    torch.manual_seed(seed)
    bert = BERTModel()
    if args.init == "d2l":
        copy_weights(model, bert)
    trainers = {
        "qvr": qvr_trainer(model, args.lr, args.eager, args.objective),
        "d2l": d2l_trainer(bert, args.lr, args.objective),
    }
    if args.control:
        trainers[CONTROL] = d2l_trainer(one_ulp_away(bert), args.lr, args.objective)
    say(f"seed {seed}")
    say(header("step", trainers))

    def report(n: int) -> dict[str, tuple[float, float]]:
        acc = {k: t.accuracy(held_out) for k, t in trainers.items()}
        say(f"{n:>6} " + " ".join(f"{a:>{WIDTH}.3f}" for k in trainers for a in acc[k]))
        return acc

    report(0)
    torch.manual_seed(seed + 1)
    every = max(1, args.steps // max(1, args.evals))
    names = list(trainers)
    for n in range(1, args.steps + 1):
        batch = pretraining_batch(args.batch)
        # turn about which goes first, so none always runs on a warmer cache
        for name in names[n % len(names) :] + names[: n % len(names)]:
            trainers[name].timed_step(batch)
        if n % every == 0 and n != args.steps:
            report(n)
    accuracies = report(args.steps)
    say(f"qvr's steps at the end: {trainers['qvr'].stepping()}")
    return accuracies, {k: t.times for k, t in trainers.items()}


_DATA: tuple[Callable[[int], Batch], Batch] | None = None  # a --jobs worker's batches


def held_out_pairs(pretraining_batch: Callable[[int], Batch]) -> Batch:
    """The held-out pairs: the same in every process, from their own seed."""
    torch.manual_seed(HELD_OUT_SEED)
    return pretraining_batch(HELD_OUT)


def page_data() -> tuple[Callable[[int], Batch], Batch]:
    """The page's batch function and the held-out pairs, made in the process that trains
    (the batch function is made by running the page's block, so it is not sent)."""
    pretraining_batch = page_batches()
    return pretraining_batch, held_out_pairs(pretraining_batch)


def start_worker(threads: int) -> None:
    """A --jobs worker's set-up: its threads, and the page's data."""
    global _DATA
    torch.set_num_threads(threads)
    _DATA = page_data()


def train_in_worker(seed: int, args: argparse.Namespace) -> tuple[list[str], Result]:
    """`train_once` in a --jobs worker: its lines come back with its results, to be
    printed whole, one seed after another."""
    assert _DATA is not None, "start_worker runs first"
    lines: list[str] = []
    return lines, train_once(seed, args, *_DATA, say=lines.append)


def train_all(seeds: range, args: argparse.Namespace) -> list[Result]:
    """Every seed's results, in seed order: here one after another, or `args.jobs` at a
    time in fresh processes (spawned: a forked torch may hang on its thread pool)."""
    if args.jobs == 1:
        data = page_data()
        return [train_once(seed, args, *data) for seed in seeds]
    results = []
    with concurrent.futures.ProcessPoolExecutor(
        args.jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=start_worker,
        initargs=(args.threads,),
    ) as pool:
        for lines, result in pool.map(train_in_worker, seeds, [args] * len(seeds)):
            print("\n".join(lines), flush=True)
            results.append(result)
    return results


def one_ulp_away(bert: BERTModel) -> BERTModel:
    """A copy of `bert` with every weight moved one unit in the last place (up): the
    smallest change rounding makes, so training it shows what rounding alone does."""
    twin = copy.deepcopy(bert)
    with torch.no_grad():
        for p in twin.parameters():
            p.copy_(torch.nextafter(p, torch.full_like(p, math.inf)))
    return twin


def header(first: str, names: Iterable[str]) -> str:
    """A table's header: `first`, then each model's MLM and NSP columns."""
    return f"{first:>6} " + " ".join(
        f"{k + ' ' + t:>{WIDTH}}" for k in names for t in ("MLM", "NSP")
    )


def spread(ours: list[float], theirs: list[float]) -> float:
    """The standard deviation over seeds of the paired difference."""
    return statistics.stdev([a - b for a, b in zip(ours, theirs, strict=True)])


def compare(task: str, ours: list[float], theirs: list[float]) -> str:
    """One task's line: the means over seeds, and the paired difference with its
    standard error (each seed trains both models on the same batches)."""
    n = len(ours)
    mean_ours, mean_theirs = statistics.fmean(ours), statistics.fmean(theirs)
    mean = mean_ours - mean_theirs
    se = spread(ours, theirs) / n**0.5 if n > 1 else float("nan")
    if mean >= 0:
        verdict = "at least"
    elif mean >= -2 * se:  # a shortfall the seeds' spread explains (two standard errors)
        verdict = "within the seeds' noise of"
    else:
        verdict = "BELOW"
    target = "meets" if mean_ours >= TARGETS[task] else "MISSES"
    return (
        f"held-out {task.upper()} accuracy over {n} seed(s): qvr {mean_ours:.3f}, "
        f"d2l {mean_theirs:.3f}; qvr - d2l {mean:+.3f} (standard error "
        f"{se:.3f}): qvr {verdict} d2l's; qvr {target} the target {TARGETS[task]:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps (default 2000)")
    parser.add_argument("--batch", type=int, default=32, help="pairs per step (default 32)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
    parser.add_argument(
        "--seeds",
        type=int,
        default=5,
        help="training runs, from torch seeds 0, 1, ... (default 5: one run's NSP accuracy "
        "moves by several points with the seed)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the first run's torch seed")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--evals", type=int, default=4, help="held-out evaluations on the way")
    parser.add_argument(
        "--device",
        default="cpu",
        help="where both models and every batch live (cpu, cuda); a step's time includes "
        "the wait for the device, since each step returns its loss as a float",
    )
    parser.add_argument(
        "--objective",
        choices=("d2l", "likelihood"),
        default="d2l",
        help="what both models train on: d2l's loss (default: picks averaged over the "
        "batch), or the plain log-likelihood (picks summed per pair)",
    )
    parser.add_argument(
        "--init",
        choices=("own", "d2l"),
        default="own",
        help="where qvr starts: its own draws from the seed (default), or d2l's draws "
        "copied in, so that only rounding tells the two runs of a seed apart",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help=f"also train d2l's model from its draws moved one ulp ({CONTROL}): the spread "
        "rounding alone gives two runs of one implementation",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="seeds trained at a time, each in its own process (default 1; CPU only)",
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="never record qvr's step (what the recording gives, measured in one run)",
    )
    args = parser.parse_args()
    if args.jobs < 1 or (args.jobs > 1 and args.device != "cpu"):
        parser.error("--jobs takes 1 or more, and only 1 with --device other than cpu")
    torch.set_num_threads(args.threads)
    # Both models, the page's batches and the held-out pairs are made on this device.
    if args.device != "cpu":  # the default already; its mode would tax every torch call
        torch.set_default_device(args.device)

    print(
        f"data: docs/gallery/{PAGE}.md's pretraining_batch, a fresh batch of {args.batch} "
        f"pairs per step; {HELD_OUT} held-out pairs (seed {HELD_OUT_SEED})"
    )
    print(
        f"{args.steps} steps, Adam lr {args.lr} (qvr's unit-scale dense weights: lr * "
        f"sqrt(fan-in), the steps of nn.Linear's), {args.threads} thread(s), "
        f"device {args.device}, objective: {args.objective}, qvr starts from "
        + ("d2l's draws" if args.init == "d2l" else "its own draws")
        + (f", {args.jobs} seeds at a time" if args.jobs > 1 else "")
    )
    seeds = range(args.seed, args.seed + args.seeds)
    names = ["qvr", "d2l"] + ([CONTROL] if args.control else [])
    accuracies: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    times: dict[str, list[float]] = {k: [] for k in names}
    for acc, took in train_all(seeds, args):
        for k in accuracies:
            accuracies[k].append(acc[k])
            times[k].extend(took[k])

    print()
    print(header("seed", names))
    for i, seed in enumerate(seeds):
        row = [a for k in accuracies for a in accuracies[k][i]]
        print(f"{seed:>6} " + " ".join(f"{a:>{WIDTH}.3f}" for a in row))
    for i, task in enumerate(("mlm", "nsp")):
        ours, theirs = ([a[i] for a in accuracies[k]] for k in ("qvr", "d2l"))
        print(compare(task, ours, theirs))
        if args.control and len(seeds) > 1:
            twin = [a[i] for a in accuracies[CONTROL]]
            print(
                f"  rounding alone ({CONTROL} - d2l): {task.upper()} "
                f"{statistics.fmean(twin) - statistics.fmean(theirs):+.3f}; the paired "
                f"difference spreads over seeds by {spread(twin, theirs):.3f}, qvr - d2l's "
                f"by {spread(ours, theirs):.3f}"
            )
    ms = {k: 1e3 * statistics.median(t) for k, t in times.items()}
    ratio = ms["qvr"] / ms["d2l"]
    verdict = "within" if ratio <= MAX_SLOWDOWN else "NOT within"
    print(
        f"time per step (median over every step of every seed): qvr {ms['qvr']:.1f} ms, "
        f"d2l {ms['d2l']:.1f} ms, ratio {ratio:.2f}x ({verdict} {MAX_SLOWDOWN:.1f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
