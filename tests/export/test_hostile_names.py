"""Exports carry no text from outside the program's checked names (issue 46).

A source file's name is written into the header comment of every export and into the
NumPyro module's docstring: a name with a line break in it (`es\\nopen("PWNED", "w")\\n#.qvr`)
must not become a line of code, nor a quote or backslash end or bend the docstring.
The export of a file with such a name is the export of any other file but for its
first line, one comment line of printable ASCII, through the core API, `qvr export`
and (tests/lsp_commands/test_export.py) the editor's command.

Every name the checker accepts is written as a name each target can have: a Python
keyword or soft keyword, `__debug__`, `self` (NumPyro's `MCMC.run` and PyMC's compiled
functions take it beside the model's own keyword arguments), a Stan keyword or a name
ending in `__` (`lp__`), a site named as an object (a NumPyro plate or a PyMC
coordinate would hide it). Each hostile name takes each role of two small models in
turn; the Python exports must compile (NumPyro's also run), the Stan ones pass stanc
(the one in the httpstan wheel, when it is here; else the identifiers are checked
against Stan's rules).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qvr_cli.main import main
from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program
from tests.conftest import EXAMPLES

EIGHT = EXAMPLES / "models" / "eight_schools_noncentered.qvr"
PROGRAM = "eight_schools"
COMMENT = {"stan": "//", "numpyro": "#", "pymc": "#"}
PAYLOAD = 'open("PWNED", "w")'

#: File names that would end the header comment, or the NumPyro docstring, or a Stan
#: block comment, each with a line of code after it.
HOSTILE_FILES = [
    f"es\n{PAYLOAD}\n#.qvr",
    f"es\r{PAYLOAD}\r#.qvr",
    f"es\r\n{PAYLOAD}\r\n#.qvr",
    f'es"""\n{PAYLOAD}\n"""#.qvr',
    f"es'''\n{PAYLOAD}\n'''.qvr",
    "es\\N{bad}\\x\\.qvr",
    f"es\u2028{PAYLOAD}\u2028#.qvr",
    f"es\u2029{PAYLOAD}.qvr",
    f"es\x0b{PAYLOAD}\x0b#.qvr",
    f"es\x0c{PAYLOAD}\x0c#.qvr",
    f"es\x85{PAYLOAD}\x85#.qvr",
    "es\x1b[2J\x07.qvr",
    "école ünïcödé.qvr",
]
#: Names no file can have, which the API and an editor's URI (`%00`, `%2F`) can.
API_ONLY = [
    f"es */ {PAYLOAD} /* .qvr",
    "es\x00.qvr",
    f"dir\n{PAYLOAD}\n#/es'.qvr",
    "es\ud800.qvr",
    "",
]


def eight_schools() -> CheckedModule:
    module = check(EIGHT.read_text(encoding="utf-8"))
    assert module.ok
    return module


def export_text(module: CheckedModule, target: str, source: str, program: str = PROGRAM) -> str:
    out = export_program(module, TARGETS[target], program, source=source)
    assert out.text is not None, out.diagnostics
    return out.text


def assert_only_the_program(text: str, target: str, baseline: str) -> None:
    """`text` is `baseline` (the export of a file with a plain, unnamed source) but for
    its first line, which is one comment line of printable ASCII; Python compiles to the
    same module."""
    first, rest = text.split("\n", 1)
    assert first.startswith(COMMENT[target] + " "), first
    assert all(" " <= c <= "~" for c in first), first
    assert rest == baseline.split("\n", 1)[1]
    if target != "stan":
        assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(baseline))
        compile(text, "<export>", "exec")


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", HOSTILE_FILES + API_ONLY)
def test_a_file_name_is_never_code_through_the_api(target: str, name: str) -> None:
    module = eight_schools()
    baseline = export_text(module, target, "<source>")
    text = export_text(module, target, name)
    assert_only_the_program(text, target, baseline)
    assert PAYLOAD not in text


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_plain_file_name_is_written_as_it_is(target: str) -> None:
    text = export_text(eight_schools(), target, "eight_schools (v2).qvr")
    assert "in eight_schools (v2).qvr," in text.splitlines()[0]
    # the escape of a name that is not plain shows each character, as a URL writes it
    odd = export_text(eight_schools(), target, 'es\n"x".qvr').splitlines()[0]
    assert "in es%0A%22x%22.qvr," in odd


@pytest.mark.parametrize(
    ("stem", "stan", "python"),
    [
        ("eight_schools", "eight_schools", "eight_schools"),
        ("eight schools (v2)", "eight_schools__v2", "eight_schools__v2"),
        ('es\nopen("PWNED")\n#', "es_open__PWNED", "es_open__PWNED"),
        ("../../etc/passwd", "etc_passwd", "etc_passwd"),
        ("2024-model", "2024-model", "_2024_model"),
        ("class", "class", "_class"),
        ("mod\u00e8le", "mod_le", "mod_le"),
        ("...", "untitled", "untitled"),
        ("", "untitled", "untitled"),
    ],
)
def test_the_name_to_save_an_export_under_is_one_plain_file_name(
    stem: str, stan: str, python: str
) -> None:
    """What the editor suggests saving an export as: no line break, quote, slash or dot
    of the source's name, and an importable module name for the Python targets."""
    assert TARGETS["stan"].file_name(stem) == stan + ".stan"
    assert TARGETS["numpyro"].file_name(stem) == python + "_numpyro.py"
    assert TARGETS["pymc"].file_name(stem) == python + "_pymc.py"
    assert TARGETS["pymc"].file_name(stem).removesuffix(".py").isidentifier()


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_file_name_is_never_code_through_the_command_line(
    tmp_path: Path, target: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / name
    source.write_text(EIGHT.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["export", str(source), "--to", target, "-o", str(out)]) == 0
    assert main(["export", str(source), "--to", target]) == 0
    printed = capsys.readouterr().out
    baseline = export_text(eight_schools(), target, "<source>")
    for text in (out.read_bytes().decode("utf-8"), printed):  # no newline translated
        assert_only_the_program(text, target, baseline)


@pytest.mark.parametrize("target", ["numpyro", "pymc"])
def test_running_the_export_of_a_hostile_file_name_runs_no_code_of_it(
    tmp_path: Path, target: str
) -> None:
    """The case of issue 46, run: without site-packages (`-S`) the module stops at its
    first import of JAX or PyMC, after anything a header line would have run."""
    name = f"es\n{PAYLOAD}\n#.qvr"
    source = tmp_path / name
    source.write_text(EIGHT.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "x.py"
    assert main(["export", str(source), "--to", target, "-o", str(out)]) == 0
    ran = subprocess.run(
        [sys.executable, "-S", str(out)], cwd=tmp_path, capture_output=True, text=True
    )
    assert "ModuleNotFoundError" in ran.stderr, ran.stderr
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------- names

#: Names the checker accepts that a target keeps for itself, or that the export's own
#: code uses (`jnp`, `coords`, a loop's `i`), or that a renamed name would take (`target_`).
HOSTILE_NAMES = [
    "_",
    "_x",
    "__x__",
    "lp__",
    "v___",
    "target",
    "target_",
    "self",
    "output_subset",
    "rng_key",
    "__debug__",
    "lambda",
    "match",
    "print",
    "int",
    "for",
    "auto",
    "model",
    "data",
    "jnp",
    "coords",
    "RENAMED",
    "i",
    "lp_z",
]

#: A model of each kind of name: an object, the program, latent sites (SHARED is named
#: as the object), a let, a covariate and an observation.
PLAIN = """\
object PLATE : FinSet 3

program PROG : PLATE -> PLATE
    sample SITE <- Normal(0.0, 1.0)
    sample VEC : PLATE <- Normal(SITE, 1.0)
    sample SHARED <- HalfNormal(1.0)
    let LET = SITE + VEC * DATA
    observe OBS : PLATE <- Normal(LET, SHARED)
    return LET

export PROG
"""
#: A mixture: a summed-out site (Stan's `lp_z` and loops, PyMC's pm.Mixture, NumPyro's
#: enumeration) over two objects.
MIXTURE = """\
object K : FinSet 2
object N : FinSet 4

program PROG : N -> N
    sample W <- Dirichlet(2.0) [over=K]
    sample M : K <- Normal(0.0, 10.0)
    marginalize Z : K <- Categorical(W) [over=N]
        observe OBS : N <- Normal(M[Z], 1.0)
    return W

export PROG
"""
ROLES = {
    PLAIN: ("PLATE", "PROG", "SITE", "VEC", "LET", "DATA", "OBS"),
    MIXTURE: ("K", "N", "PROG", "W", "M", "Z", "OBS"),
}
DATA_ROLES = ("DATA", "OBS")
DATA = {PLAIN: {"DATA": [0.1, 0.2, 0.3], "OBS": [1.0, 2.0, 3.0]}, MIXTURE: {"OBS": [0.0] * 4}}


def assignments(template: str) -> list[dict[str, str]]:
    """Hostile names for the roles of `template`, a Latin square: each name takes each
    role once over the list (and meets the others: `target` beside `target_`)."""
    roles, n = ROLES[template], len(HOSTILE_NAMES)
    return [{r: HOSTILE_NAMES[(i + k) % n] for i, r in enumerate(roles)} for k in range(n)]


CASES = [
    pytest.param(template, names, id=f"{kind}-{'-'.join(names.values())}")
    for kind, template in (("plain", PLAIN), ("mixture", MIXTURE))
    for names in assignments(template)
]


def named(template: str, names: dict[str, str]) -> tuple[CheckedModule, str, dict[str, Any]]:
    """The model with each role's name (SHARED named as PLATE), the program's name, and
    data for it by QVR name."""
    text = template
    if template is PLAIN:
        text = re.sub(r"\bSHARED\b", "PLATE", text)
    for role, name in names.items():
        text = re.sub(rf"\b{role}\b", name, text)
    module = check(text)
    assert module.ok, module.errors
    data = {names[k]: v for k, v in DATA[template].items()}
    return module, names["PROG"], data


@pytest.mark.parametrize(("template", "names"), CASES)
def test_every_name_is_a_numpyro_name(template: str, names: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("numpyro")
    from numpyro.handlers import seed, trace
    from numpyro.infer import MCMC

    module, program, data = named(template, names)
    text = export_text(module, "numpyro", "m.qvr", program)
    namespace: dict[str, Any] = {"__name__": "exported"}
    exec(compile(text, "<numpyro export>", "exec"), namespace)
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    kwargs = namespace["load_data"](str(path))
    inspect.signature(MCMC.run).bind(object(), None, **kwargs)  # `python FILE DATA.json`
    run = trace(seed(namespace["model"], 0)).get_trace(**kwargs)
    sites = {k for k, v in run.items() if v["type"] == "sample"}
    model = module.models[program]
    assert sites == {s.name for s in model.sites}, "every site, under its QVR name"


@pytest.mark.parametrize(("template", "names"), CASES)
def test_every_name_is_a_pymc_name(template: str, names: dict[str, str]) -> None:
    module, program, _ = named(template, names)
    tree = ast.parse(export_text(module, "pymc", "m.qvr", program))
    compile(tree, "<pymc export>", "exec")
    coords: set[str] = set()
    variables: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "coords":
            assert isinstance(node.value, ast.Dict)
            coords |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        func = node.func if isinstance(node, ast.Call) else None
        pm_call = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "pm"
        if isinstance(node, ast.Call) and pm_call and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                variables.append(first.value)
    assert len(variables) == len(set(variables)), variables
    for v in variables:
        assert v not in ("self", "output_subset") and not v.endswith("__"), v
        assert v not in coords, f"{v} would be hidden by the coordinate of that name"


def stanc() -> Path | None:
    """The stanc3 binary of the httpstan wheel, found without importing httpstan."""
    spec = importlib.util.find_spec("httpstan")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(next(iter(spec.submodule_search_locations))) / "stanc"
    return binary if binary.exists() else None


#: What a Stan identifier may not be (stanc3 2.35 refuses each: "clashes with reserved
#: keyword"), beyond ending in `__`.
_STAN_WORDS = """for in while repeat until if then else true false target struct typedef
    export auto extern var static functions model data parameters quantities transformed
    generated profile return break continue print reject fatal_error int real complex vector
    simplex ordered positive_ordered row_vector matrix array tuple void lower upper offset
    multiplier"""
STAN_KEYWORDS = frozenset(_STAN_WORDS.split())


def stan_identifiers(text: str) -> set[str]:
    """The words of a Stan program outside its comments and strings."""
    code = re.sub(r"//[^\n]*|\"[^\"\n]*\"", "", text)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code))


@pytest.mark.parametrize(("template", "names"), CASES)
def test_every_name_is_a_stan_name(template: str, names: dict[str, str], tmp_path: Path) -> None:
    module, program, _ = named(template, names)
    out = export_program(module, TARGETS["stan"], program, source="m.qvr")
    if out.text is None:
        # a data name Stan cannot declare is refused (the data file names it), at the
        # name; the other names are checked with the data names plain
        for d in out.diagnostics:
            assert "rename it in the data too" in d.message, d.message
            assert module.source[d.span.start : d.span.end] in [names.get(r) for r in DATA_ROLES]
        names = {r: (r if r in DATA_ROLES else n) for r, n in names.items()}
        module, program, _ = named(template, names)
        out = export_program(module, TARGETS["stan"], program, source="m.qvr")
    text = out.text
    assert text is not None, out.diagnostics
    words = stan_identifiers(text)
    assert not [w for w in words if w.startswith("_") or w.endswith("__")], words
    for name in STAN_KEYWORDS & set(names.values()):  # only as Stan's own word
        assert not re.search(rf"\b{name}\s*[;=~]", text), text
    compiler = stanc()
    if compiler is None:
        return
    program_file = tmp_path / "m.stan"
    program_file.write_text(text)
    ran = subprocess.run(
        [str(compiler), str(program_file), "--o", str(tmp_path / "m.hpp")],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr + text


def test_renamed_names_never_meet_the_names_they_avoid() -> None:
    """`target`, `target_` and `target_2` in one program: Stan writes the first as
    neither of the others, which keep their names; `self` and `self_` in NumPyro's
    Python names and PyMC's variables the same."""
    text = PLAIN
    for role, name in (("SITE", "target"), ("VEC", "target_"), ("LET", "target_2")):
        text = re.sub(rf"\b{role}\b", name, text)
    text = re.sub(r"\bDATA\b", "self", re.sub(r"\bSHARED\b", "self_", text))
    module = check(text)
    assert module.ok, module.errors
    stan = export_text(module, "stan", "m.qvr", "PROG")
    assert "real target_3;" in stan and "vector[PLATE] target_;" in stan
    numpyro = export_text(module, "numpyro", "m.qvr", "PROG")
    assert "def model(self__, OBS=None):" in numpyro
    pymc = export_text(module, "pymc", "m.qvr", "PROG")
    assert 'pm.Data("self_2", np.asarray(self, ' in pymc and 'pm.HalfNormal("self_",' in pymc
