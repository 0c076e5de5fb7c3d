"""`qvr plot` on real saved runs: every kind drawn as SVG and PNG, every scalar in it,
divergences marked, the run view's chain colours."""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D

from qvr_cli.main import main
from qvr_core.posterior.figures import KINDS, SBC_GROUP, Selection, figure
from qvr_core.posterior.palette import CHAIN_COLOURS
from tests.conftest import ROOT
from tests.plots.conftest import SavedRun, read, written

SVG = "{http://www.w3.org/2000/svg}"


def plot(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`qvr plot ARGS` in this process; returns what it printed, after checking it succeeded."""
    status = main(["plot", *args])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def svg_axes(path: Path) -> tuple[float, float, int]:
    """An SVG's width and height in points and its number of axes with something drawn
    (an axes switched off, a spare cell of ArviZ's grid, is an empty group)."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    groups = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("axes_")]
    drawn = [g for g in groups if any(e.tag in (f"{SVG}path", f"{SVG}use") for e in g.iter())]
    return float(root.get("width", "0pt")[:-2]), float(root.get("height", "0pt")[:-2]), len(drawn)


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def scalars(dataset: Any) -> int:
    """How many scalars a group holds: each plate element counts."""
    return sum(
        math.prod(n for d, n in v.sizes.items() if d not in ("chain", "draw"))
        for v in dataset.data_vars.values()
    )


def expected_axes(kind: str, idata: Any) -> int:
    """The panels a kind draws for the whole run: one per scalar (per chain) or per site."""
    n = scalars(idata.posterior)
    chains = idata.posterior.sizes["chain"]
    return {
        "trace": 2 * n,  # density and draws
        "rank": n,
        "pair": n * (n - 1) // 2,
        "energy": 1,
        "forest": 2 if chains > 1 else 1,  # intervals, and R-hat beside them
        "ppc": len(idata.observed_data.data_vars),
        "loo-pit": len(idata.observed_data.data_vars),
        "autocorr": n * chains,
    }[kind]


#: Two schools of eight, centred but for a known tau: a NUTS run of three scalars (mu and
#: a plate of two), where eight schools has ten. The figures of every kind are drawn
#: twice below (SVG and PNG), and their cost is their panels (pair: one per two scalars,
#: 3 here, 45 for eight schools); a plate's elements and two chains are what the panel
#: counts are about, and this run has both.
TWO_SCHOOLS = """\
object School : FinSet 2

program two_schools : School -> School
    sample mu <- Normal(0.0, 5.0)
    sample theta : School <- Normal(mu, 5.0)
    observe y : School <- Normal(theta, sigma)
    return theta

export two_schools
"""


@pytest.fixture(scope="module")
def small_nuts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TWO_SCHOOLS by NUTS (two chains of 50 draws, posterior predictive too), written
    as `qvr run --output` writes it, log-likelihood included."""
    folder = tmp_path_factory.mktemp("small")
    data = folder / "two_schools.json"
    data.write_text(json.dumps({"y": [28, 8], "sigma": [15, 10]}), encoding="utf-8")
    path = written(
        folder,
        TWO_SCHOOLS,
        data,
        "two_schools",
        method="nuts",
        steps=100,
        chains=2,
        seed=1,
        predictive=True,
    )
    assert "log_likelihood" in read(path).groups()  # loo-pit draws from it
    return path


#: The kinds that draw a run (`sbc` draws a `qvr sbc` file: tests/runs/test_sbc.py).
RUN_KINDS = [k for k, spec in KINDS.items() if spec.group != SBC_GROUP]


@pytest.mark.parametrize("kind", RUN_KINDS)
def test_every_kind_of_a_nuts_run_as_svg_and_png(
    kind: str, small_nuts_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    svg, png = tmp_path / f"{kind}.svg", tmp_path / f"{kind}.png"
    assert plot(capsys, str(small_nuts_run), "--kind", kind, "-o", str(svg)).strip() == str(svg)
    width, height, axes = svg_axes(svg)
    idata = read(small_nuts_run)
    assert idata.posterior.sizes["chain"] == 2 and scalars(idata.posterior) == 3
    assert axes == expected_axes(kind, idata)
    dpi = 30
    plot(capsys, str(small_nuts_run), "--kind", kind, "-o", str(png), "--dpi", str(dpi))
    # the same figure: its size in inches (points / 72) times the dots per inch, whole
    # pixels as Agg makes them (`int`, truncated; rounding held only for sizes whose
    # fraction of a pixel was under a half); 1e-6 covers the SVG's six decimals of points
    assert png_size(png) == (int(width / 72 * dpi + 1e-6), int(height / 72 * dpi + 1e-6))


@pytest.mark.parametrize("kind", ["trace", "pair", "forest", "ppc", "loo-pit", "autocorr"])
def test_the_kinds_an_svi_run_has(
    kind: str, svi_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    svg = tmp_path / f"{kind}.svg"
    plot(capsys, str(svi_run.path), "--kind", kind, "-o", str(svg))
    assert svg_axes(svg)[2] == expected_axes(kind, svi_run.read())


def test_without_output_the_figure_goes_beside_the_run(
    nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "schools.nc"
    run.write_bytes(nuts_run.path.read_bytes())
    printed = plot(capsys, str(run), "--kind", "energy")
    assert printed.strip() == str(tmp_path / "schools.energy.svg")
    assert svg_axes(tmp_path / "schools.energy.svg")[2] == 1


def test_a_pdf(nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = tmp_path / "forest.pdf"
    plot(capsys, str(nuts_run.path), "--kind", "forest", "-o", str(pdf))
    assert pdf.read_bytes().startswith(b"%PDF")


def _marker_lines(fig: Any) -> list[Line2D]:
    return [
        line
        for ax in fig.axes
        for line in ax.get_lines()
        if line.get_marker() == "o" and line.get_linewidth() == 0  # ArviZ's divergence marks
    ]


def test_the_pair_plot_marks_the_divergent_draws(nuts_run: SavedRun, tmp_path: Path) -> None:
    # A run file made for the test: the real run's draws with divergences flagged where
    # the test says (whether a short centred run diverges depends on the CPU's rounding).
    idata = nuts_run.read()
    diverging = np.zeros(idata.sample_stats["diverging"].shape, dtype=bool)
    diverging[0, [3, 77, 150]] = True
    diverging[-1, -1] = True
    idata.sample_stats["diverging"].values = diverging
    idata.to_netcdf(tmp_path / "flagged.nc")
    idata = read(tmp_path / "flagged.nc")
    mu = idata.posterior["mu"].values[diverging]
    tau = idata.posterior["tau"].values[diverging]
    fig = figure(idata, "pair", Selection(("mu", "tau")))
    marked = _marker_lines(fig)
    assert len(marked) == 1
    line = marked[0]
    # exactly the divergent draws, black-edged over the scatter of all draws
    assert np.array_equal(np.asarray(line.get_xdata()), mu)
    assert np.array_equal(np.asarray(line.get_ydata()), tau)
    assert to_hex(line.get_markeredgecolor()) == "#000000"
    assert len(fig.axes[0].collections) == 1  # the scatter


def test_an_svi_pair_plot_has_no_divergences_to_mark(svi_run: SavedRun) -> None:
    fig = figure(svi_run.read(), "pair")
    assert _marker_lines(fig) == []
    assert len(fig.axes) == 3  # alpha-beta, alpha-sigma, beta-sigma


def test_chains_take_the_run_view_colours(nuts_run: SavedRun) -> None:
    idata = nuts_run.read()
    fig = figure(idata, "trace", Selection(("mu",)))
    draws = idata.posterior.sizes["draw"]
    trace_axes = fig.axes[1]  # density, then draws
    lines = [line for line in trace_axes.get_lines() if len(line.get_xdata()) == draws]
    chains = idata.posterior.sizes["chain"]
    assert [to_hex(line.get_color()) for line in lines] == list(CHAIN_COLOURS[:chains])
    for chain, line in enumerate(lines):
        assert np.array_equal(np.asarray(line.get_ydata()), idata.posterior["mu"].values[chain])


def test_plate_elements_are_picked_by_coords(nuts_run: SavedRun) -> None:
    idata = nuts_run.read()
    selection = Selection(("theta",), {"School": ["0", "3"]})
    fig = figure(idata, "trace", selection)
    assert len(fig.axes) == 4  # two elements, density and draws each
    draws = idata.posterior.sizes["draw"]
    for ax, element in zip(fig.axes[1::2], (0, 3), strict=True):
        lines = [line for line in ax.get_lines() if len(line.get_xdata()) == draws]
        assert np.array_equal(
            np.asarray(lines[0].get_ydata()), idata.posterior["theta"].values[0, :, element]
        )


def test_combined_chains_draw_one_autocorrelation_per_scalar(nuts_run: SavedRun) -> None:
    idata = nuts_run.read()
    fig = figure(idata, "autocorr", Selection(("mu", "tau"), combined=True))
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2


def test_energy_shows_each_chains_e_bfmi(nuts_run: SavedRun) -> None:
    import arviz as az

    idata = nuts_run.read()
    fig = figure(idata, "energy")
    legend = fig.axes[0].get_legend()
    assert legend is not None
    texts = [t.get_text() for t in legend.get_texts()]
    for chain, value in enumerate(az.bfmi(idata)):
        assert any(f"chain {chain:>2}" in t and f"{value:.2f}" in t for t in texts), texts


def test_a_written_log_likelihood_is_the_normal_density_of_the_data(
    nuts_run: SavedRun, svi_run: SavedRun
) -> None:
    for run in (nuts_run, svi_run):
        if not run.wrote_log_likelihood:
            pytest.skip("qvr run does not write log_likelihood yet (this folder adds it)")
        written = run.read().log_likelihood["y"].values
        np.testing.assert_allclose(written, run.log_likelihood, rtol=1e-5, atol=1e-8)


# kernel_free: which modules an import loads; nothing is drawn
@pytest.mark.kernel_free
def test_the_command_line_loads_no_plotting_library() -> None:
    code = (
        "import sys\n"
        "import qvr_cli.main\n"
        "loaded = {'matplotlib', 'arviz'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_arviz_warnings_are_one_line_each(
    nuts_run: SavedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one school's observation: ArviZ warns that a density of one value is degenerate
    args = ["--kind", "ppc", "--coords", "School=5", "-o", str(tmp_path / "one.svg")]
    assert main(["plot", str(nuts_run.path), *args]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("qvr plot: warning: ") for line in err), err
    assert svg_axes(tmp_path / "one.svg")[2] == 1


def test_the_forest_draws_each_scalars_r_hat_beside_its_chains() -> None:
    """ArviZ 0.23 draws R-hat only for merged chains, so a forest with a line per chain had
    an empty R-hat column. Built draws, not sampled ones: `a` from four chains that agree,
    `b[1]` from chains whose means differ (R-hat far above 1), so each point is known."""
    import arviz as az

    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 200))
    b = (
        rng.normal(size=(4, 200, 2))
        + np.array([0.0, 1.0])[None, None, :] * np.arange(4)[:, None, None]
    )
    idata = az.from_dict(posterior={"a": a, "b": b})
    fig = figure(idata, "forest")
    r_hat_axis = fig.axes[-1]
    (points,) = [line for line in r_hat_axis.get_lines() if line.get_marker() == "o"]
    expected = az.rhat(idata)
    want = [float(expected["a"]), *map(float, expected["b"].values)]
    assert np.allclose(points.get_xdata(), want)
    assert want[2] > 1.5 > want[0]  # b[1]'s chains disagree; a's agree
    rows = sorted(fig.axes[0].get_yticks(), reverse=True)
    assert np.allclose(points.get_ydata(), rows)  # a on top, then b[0], b[1]
    merged = figure(idata, "forest", Selection(combined=True))  # ArviZ's own column
    assert any(line.get_marker() == "o" for line in merged.axes[-1].get_lines())


def test_the_ppc_of_whole_numbers_stored_as_floats_is_drawn_as_counts() -> None:
    """0/1 outcomes as a run file stores them (floats) were drawn as density curves over 0
    and 1; whole numbers are drawn as ArviZ draws counts: steps over the values."""
    import arviz as az

    rng = np.random.default_rng(3)
    y = (rng.uniform(size=100) < 0.3).astype(float)
    rep = (rng.uniform(size=(2, 50, 100)) < 0.3).astype(float)
    idata = az.from_dict(
        posterior={"p": rng.uniform(size=(2, 50))},
        posterior_predictive={"y": rep},
        observed_data={"y": y},
    )
    lines = figure(idata, "ppc").axes[0].get_lines()
    observed = [line for line in lines if line.get_label() == "Observed"]
    assert observed and len(set(np.asarray(observed[0].get_xdata()).tolist())) <= 3
    assert idata.observed_data["y"].dtype.kind == "f"  # the run itself is left as it is
    smooth = y + rng.normal(scale=0.1, size=100)  # not whole: a density, hundreds of points
    idata.observed_data["y"] = ("y_dim_0", smooth)
    idata.posterior_predictive["y"] = idata.posterior_predictive["y"] + 0.5 * rng.normal(
        size=rep.shape
    )
    lines = figure(idata, "ppc").axes[0].get_lines()
    observed = [line for line in lines if line.get_label() == "Observed"]
    assert len(np.asarray(observed[0].get_xdata())) > 50
