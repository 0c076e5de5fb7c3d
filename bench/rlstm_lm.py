"""The gallery's RLSTM language model against the same model in PyTorch, trained alike.

    .venv/bin/python bench/rlstm_lm.py [--steps 400] [--batch 32] [--lr 0.01]
        [--seed 0] [--threads 1] [--same-init] [--evals 4] [--device cpu|cuda]

Claim (docs/gallery/rlstm_lm.md): trained on the page's corpus, the compiled
`examples/rlstm_lm.qvr` reaches a held-out per-token cross-entropy within 10%
of a PyTorch model trained the same way.

The corpus is the page's: `toy_corpus` is read from the page's "Generating
data" block, so the bench trains on what the page shows (256 training texts
and 64 held-out texts of 17 tokens; input `text[:, :-1]`, targets
`text[:, 1:]`, the next token at every position).

- qvr: the compiled program trained as the page's SVI block does
  (`AutoNormalGuide` + `ELBO` + `SVI`; the program has no latent site, so the
  loss is the negative log-likelihood, summed over positions and averaged
  over the batch).
- PyTorch: `nn.Embedding`, the seed's `RLSTMCell`
  (../shared/seeds/rlstm_mogrifier_notes.txt, as copied in
  tests/runtime/test_recurrent_seeds.py) run along the
  text, and a head shaped like `lm_head`'s parameter network (64 -> 64 tanh
  -> 256 logits); the same loss written directly.

Both use Adam with the same learning rate (for qvr through `param_groups`,
which scales each dense layer's rate by sqrt(fan-in) so Adam moves its
effective weights as it moves an `nn.Linear`'s), the same number of steps,
the same batches (one seeded index stream) and `torch.manual_seed(seed)`
before their weights are made. By default each model starts from its own initialisation
(qvr's unit-scale weights divided by sqrt(fan-in), PyTorch's layer defaults);
`--same-init` copies the compiled model's starting weights into the PyTorch
model instead, so the two start as one function and differ only in how the
weights are parameterised. Time per step is the median wall time of a
training step (forward, backward, Adam), the two models alternating step by
step so load on the machine affects both alike.
"""

from __future__ import annotations

import argparse
import ast
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qvr_core.dsl import load  # noqa: E402
from qvr_core.inference import ELBO, SVI, AutoNormalGuide  # noqa: E402
from qvr_core.inference.recorded_step import AFTER_SECONDS  # noqa: E402
from qvr_core.runtime import param_groups  # noqa: E402
from qvr_core.runtime.program import ProgramModule  # noqa: E402
from tests.gallery.pages import page_blocks  # noqa: E402
from tests.runtime.test_recurrent_seeds import RLSTMCell, seed_states  # noqa: E402

PAGE = "rlstm_lm"
TRAIN_TEXTS, HELD_OUT_TEXTS, TEXT_LENGTH = 256, 64, 17
TOLERANCE = 0.10
MAX_SLOWDOWN = 1.1  # issue #47: the compiled step within 1.1x of the PyTorch step


def page_corpus() -> Callable[[int, int, int], Tensor]:
    """`toy_corpus` as the page's data block defines it (only that function is run)."""
    data = next(b for b in page_blocks(PAGE, "python") if b.kind == "data")
    tree = ast.parse(data.code)
    found: list[ast.stmt] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "toy_corpus"
    ]
    if not found:
        raise SystemExit(f"docs/gallery/{PAGE}.md: the data block defines no toy_corpus")
    scope: dict[str, Any] = {"torch": torch}
    exec(compile(ast.Module(body=found, type_ignores=[]), f"{PAGE}.md", "exec"), scope)
    corpus: Callable[[int, int, int], Tensor] = scope["toy_corpus"]
    return corpus


# ------------------------------------------------------------ the seed's cell


class ReferenceLM(nn.Module):
    """Embedding, the seed's cell at every position, `lm_head`'s shape of MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 32)
        self.cell = RLSTMCell(32, 64)
        self.hidden = nn.Linear(64, 64)
        self.out = nn.Linear(64, 256)

    def loss(self, tokens: Tensor, targets: Tensor) -> Tensor:
        """Negative log-likelihood of the next tokens, summed over positions, mean over texts."""
        h, _ = seed_states(self.cell, self.embed(tokens))
        logits = self.out(torch.tanh(self.hidden(h)))
        lp = torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
        return -lp.sum(-1).mean()


@torch.no_grad()
def copy_start(model: ProgramModule, ref: ReferenceLM) -> None:
    """The compiled model's weights into the reference (an `Affine` scales by `gain`)."""
    params = dict(model.named_parameters())
    modules = dict(model.named_modules())

    def weight(net: str) -> Tensor:
        gain = float(getattr(modules[f"morphisms.{net}"], "gain", 1.0))
        return params[f"morphisms.{net}.weight"] * gain

    def bias(net: str) -> Tensor:
        return params[f"morphisms.{net}.bias"]

    ref.embed.weight.copy_(params["morphisms.tok_embed.table"])
    cell = ref.cell
    cell.linear1.weight.copy_(torch.cat([weight("gate_i.net"), weight("gate_j.net")]))
    cell.linear1.bias.copy_(torch.cat([bias("gate_i.net"), bias("gate_j.net")]))
    for linear, gate in ((cell.linear2, "gate_f.net"), (cell.linear3, "gate_o.net")):
        linear.weight.copy_(weight(gate))
        linear.bias.copy_(bias(gate))
    for linear, layer in ((ref.hidden, "lm_head.net.hidden"), (ref.out, "lm_head.net.out")):
        linear.weight.copy_(weight(layer))
        linear.bias.copy_(bias(layer))


# --------------------------------------------------------------- training


class Trainer:
    """One model and its optimiser: a training step, and the held-out loss per token."""

    def __init__(
        self,
        step: Callable[[Tensor, Tensor], float],
        loss: Callable[[Tensor, Tensor], float],
        stepping: Callable[[], str] = lambda: "eager",
    ):
        self.step = step
        self.loss = loss
        self.stepping = stepping  # how the steps run now, in words
        self.times: list[float] = []

    def timed_step(self, tokens: Tensor, targets: Tensor) -> float:
        start = time.perf_counter()
        value = self.step(tokens, targets)
        self.times.append(time.perf_counter() - start)
        return value


def qvr_trainer(model: ProgramModule, lr: float, eager: bool = False) -> Trainer:
    guide = AutoNormalGuide(model, observed_names={"next_tokens"})
    optim = torch.optim.Adam(param_groups([model, guide], lr))
    svi = SVI(
        model, guide, optim, ELBO(num_particles=1), record_after=None if eager else AFTER_SECONDS
    )
    return Trainer(
        lambda x, y: svi.step(x, {"next_tokens": y}),
        lambda x, y: svi.evaluate_loss(x, {"next_tokens": y}),
        lambda: svi.stepping,
    )


def torch_trainer(ref: ReferenceLM, lr: float) -> Trainer:
    optim = torch.optim.Adam(ref.parameters(), lr=lr)

    def step(x: Tensor, y: Tensor) -> float:
        optim.zero_grad()
        loss = ref.loss(x, y)
        loss.backward()  # type: ignore[no-untyped-call]
        optim.step()
        return float(loss.detach())

    def evaluate(x: Tensor, y: Tensor) -> float:
        with torch.no_grad():
            return float(ref.loss(x, y))

    return Trainer(step, evaluate)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="training steps (default 400)")
    parser.add_argument("--batch", type=int, default=32, help="texts per step (default 32)")
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam's learning rate")
    parser.add_argument("--seed", type=int, default=0, help="torch seed for both models")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--same-init", action="store_true", help="start PyTorch from the compiled weights"
    )
    parser.add_argument("--evals", type=int, default=4, help="held-out evaluations on the way")
    parser.add_argument(
        "--device",
        default="cpu",
        help="where both models and the corpus live (cpu, cuda); a step's time includes the "
        "wait for the device, since each step returns its loss as a float",
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="never record qvr's step (what the recording gives, measured in one run)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # The corpus and the batches' rows are drawn on the CPU from their own generators,
    # so every device trains on the same texts; both models and the texts then live on
    # the device.
    toy_corpus = page_corpus()
    train = toy_corpus(TRAIN_TEXTS, TEXT_LENGTH, 1).to(args.device)
    held_out = toy_corpus(HELD_OUT_TEXTS, TEXT_LENGTH, 2).to(args.device)
    if args.device != "cpu":  # the default already; its mode would tax every torch call
        torch.set_default_device(args.device)
    positions = TEXT_LENGTH - 1
    hx, hy = held_out[:, :-1], held_out[:, 1:]

    torch.manual_seed(args.seed)
    model = load(ROOT / "examples" / f"{PAGE}.qvr").morphism
    assert isinstance(model, ProgramModule)
    torch.manual_seed(args.seed)
    ref = ReferenceLM()
    if args.same_init:
        copy_start(model, ref)
    trainers = {
        "qvr": qvr_trainer(model, args.lr, args.eager),
        "pytorch": torch_trainer(ref, args.lr),
    }

    start_ce = {k: t.loss(hx, hy) / positions for k, t in trainers.items()}
    print(
        f"corpus: {TRAIN_TEXTS} training and {HELD_OUT_TEXTS} held-out texts of {TEXT_LENGTH} "
        f"tokens (docs/gallery/{PAGE}.md); best possible {math.log(16) / 4:.3f} nats per token"
    )
    print(
        f"{args.steps} steps of {args.batch} texts, Adam lr {args.lr}, seed {args.seed}, "
        f"{args.threads} thread(s), {'the same' if args.same_init else 'each its own'} start, "
        f"device {args.device}"
    )
    print(f"{'step':>6} {'qvr CE':>9} {'pytorch CE':>11}   (held-out, nats per token)")
    print(f"{0:>6} {start_ce['qvr']:>9.3f} {start_ce['pytorch']:>11.3f}")

    batches = torch.randint(
        0,
        TRAIN_TEXTS,
        (args.steps, args.batch),
        generator=torch.Generator().manual_seed(3),
        device="cpu",
    )
    every = max(1, args.steps // max(1, args.evals))
    for n, rows in enumerate(batches, 1):
        x, y = train[rows, :-1], train[rows, 1:]
        # alternate which goes first, so neither always runs on a warmer cache
        order = ("qvr", "pytorch") if n % 2 else ("pytorch", "qvr")
        for name in order:
            trainers[name].timed_step(x, y)
        if n % every == 0 or n == args.steps:
            ce = {k: t.loss(hx, hy) / positions for k, t in trainers.items()}
            print(f"{n:>6} {ce['qvr']:>9.3f} {ce['pytorch']:>11.3f}")

    ce = {k: t.loss(hx, hy) / positions for k, t in trainers.items()}
    ms = {k: 1e3 * statistics.median(t.times) for k, t in trainers.items()}
    ratio = ce["qvr"] / ce["pytorch"]
    print()
    print(f"held-out cross-entropy per token: qvr {ce['qvr']:.3f}, pytorch {ce['pytorch']:.3f}")
    verdict = "within" if abs(ratio - 1) <= TOLERANCE else "NOT within"
    print(f"ratio qvr / pytorch: {ratio:.3f} ({verdict} {TOLERANCE:.0%})")
    speed = ms["qvr"] / ms["pytorch"]
    print(
        f"time per step (median): qvr {ms['qvr']:.1f} ms, pytorch {ms['pytorch']:.1f} ms, "
        f"ratio {speed:.2f}x ({'within' if speed <= MAX_SLOWDOWN else 'NOT within'} "
        f"{MAX_SLOWDOWN:.1f}x)"
    )
    print(f"qvr's steps at the end: {trainers['qvr'].stepping()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
