"""Write the data files of the model examples (run from the repository root:
`.venv/bin/python examples/models/generate_data.py`). Seeded, so the files are
reproducible; each model's true values are in the comments below."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def write(name: str, data: dict[str, np.ndarray | list]) -> None:
    def plain(v: np.ndarray | list) -> list:
        a = np.asarray(v)
        return a.tolist() if a.dtype.kind in "iu" else np.round(a, 4).tolist()

    text = json.dumps({k: plain(v) for k, v in data.items()}) + "\n"
    (HERE / f"{name}.json").write_text(text, encoding="utf-8")


def main() -> None:
    # the classic data (Rubin 1981)
    write(
        "eight_schools",
        {"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]},
    )
    rng = np.random.default_rng(0)
    # alpha 1.5, beta 2.0, sigma 0.7
    x = rng.uniform(-2, 2, 50)
    write("linear_regression", {"x": x, "y": 1.5 + 2.0 * x + rng.normal(0, 0.7, 50)})
    # county intercepts around -0.5 with spread 0.8; slope 1.2
    county = np.repeat(np.arange(6), 20)
    alpha = -0.5 + 0.8 * rng.normal(size=6)
    x = rng.normal(size=120)
    p = 1 / (1 + np.exp(-(alpha[county] + 1.2 * x)))
    y = (rng.uniform(size=120) < p).astype(np.int64)
    write("hierarchical_logistic", {"county": county, "x": x, "y": y})
    # weights 0.3 / 0.7, means -2 and 3, scales 0.8 and 1.0
    z = rng.uniform(size=100) < 0.7
    y = np.where(z, rng.normal(3.0, 1.0, 100), rng.normal(-2.0, 0.8, 100))
    write("gaussian_mixture", {"y": y})
    # start [0.8, 0.2]; sticky transitions; state 0 emits mostly symbol 0, state 1 symbol 2
    start, trans = np.array([0.8, 0.2]), np.array([[0.85, 0.15], [0.2, 0.8]])
    emit = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    states = [rng.choice(2, size=40, p=start)]
    for _ in range(3):
        states.append(np.array([rng.choice(2, p=trans[s]) for s in states[-1]]))
    symbols = {
        f"o{t}": np.array([rng.choice(3, p=emit[s]) for s in st]) for t, st in enumerate(states)
    }
    write("hmm", symbols)


if __name__ == "__main__":
    main()
