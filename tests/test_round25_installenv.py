"""Round 25: tiersim as installed and run outside the developer's editable venv (installenv).

Each test is a failure found from an sdist or wheel install, or from a plain environment
(``python -OO``, no extras), and fixed: the exact file, line or figure a user gets.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import TINY, run_cli
from test_wheel import ROOT, _tracked_copy


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path, set[str]]:
    """(sdist, wheel built from that sdist, names git holds), as ``python -m build`` makes
    them: the sdist from the work tree's files, the wheel from the unpacked sdist. No build
    isolation, so no network is needed."""
    setuptools = pytest.importorskip("setuptools", reason="building needs setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"pyproject.toml needs setuptools >= 77, this has {setuptools.__version__}")
    tmp = tmp_path_factory.mktemp("dists")
    src = _tracked_copy(tmp / "src")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    tracked = {n for n in listed.stdout.decode().split("\0") if n and (src / n).exists()}
    built = subprocess.run([sys.executable, "-c", "import sys, setuptools.build_meta as b; "
                            "print(b.build_sdist(sys.argv[1]))", str(tmp / "dist")],
                           cwd=src, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    sdist = tmp / "dist" / built.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "--no-index", "-q", "-w", str(tmp / "dist"),
                            str(unpacked)], capture_output=True, text=True, timeout=600)
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    (found,) = (tmp / "dist").glob("tiersim-*.whl")
    return sdist, found, tracked


def _sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


def test_sdist_holds_the_tests_docs_and_benchmarks_it_needs(dists):
    # The sdist carried tests/test_*.py (setuptools' default) without tests/conftest.py, the
    # golden summaries or reference_scheduler.py: 121 of its test files failed to import or
    # read ('No module named conftest'); nor docs/ nor benchmarks/, which README.md, the
    # profiles' README and tiersim's own fidelity line send the reader to; nor the root's
    # scenarios/, traces/ and profiles/ (links into tiersim/) that 86 test files read.
    sdist, _, tracked = dists
    names = _sdist_names(sdist)
    links = {"profiles", "scenarios", "traces"}  # shipped as the files they lead to
    missing = sorted(n for n in tracked
                     if n not in names and n not in links | {".gitignore"}
                     and not n.startswith(".ci/"))
    assert missing == []
    for link in links:
        assert {f"{link}/{p.name}" for p in (ROOT / "tiersim" / link).iterdir()
                if p.is_file()} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_wheel_and_sdist_carry_the_licences_of_tiersim_and_its_data(dists):
    # The wheel said License-Expression: Apache-2.0 and shipped no licence text: neither
    # tiersim's own (Apache-2.0 asks that recipients get a copy) nor the MIT notice of
    # qllm-eval, whose tables precision_priors.json is derived from ('The above copyright
    # notice and this permission notice shall be included in all copies').
    sdist, wheel, _ = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    meta = zipfile.ZipFile(wheel).read("tiersim-0.1.0.dist-info/METADATA").decode()
    assert "License-File: LICENSE" in meta.splitlines()
    text = zipfile.ZipFile(wheel).read("tiersim-0.1.0.dist-info/licenses/LICENSE").decode()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    mit = zipfile.ZipFile(wheel).read("tiersim/data/LICENSE.qllm-eval").decode()
    assert "Shiyao Li" in mit and "Permission is hereby granted" in mit
    readme = zipfile.ZipFile(wheel).read("tiersim/data/README.md").decode()
    assert "LICENSE.qllm-eval" in readme
    assert {"LICENSE", "tiersim/data/LICENSE.qllm-eval"} <= _sdist_names(sdist)
    assert "tiersim/data/LICENSE.qllm-eval" in names
    # the wheel built from the sdist takes tiersim/ alone, not the sdist's tests, docs, ...
    assert {n.split("/")[0] for n in names} == {"tiersim", "tiersim-0.1.0.dist-info"}


#: Every command and subcommand with no help text, as a -OO interpreter builds them.
_HELPLESS = """
from tiersim.cli.app import MOUNTED, load
def walk(name, command):
    if not (command.help or '').strip():
        print(name)
    for sub, each in getattr(command, 'commands', {}).items():
        walk(f'{name} {sub}', each)
for name in MOUNTED:
    walk(name, load(name))
"""


def test_every_command_keeps_its_help_under_python_OO():
    # python -OO strips docstrings: `tiersim trace inspect --help` lost its description and
    # `tiersim trace --help` listed inspect with no help line (the other commands pass theirs
    # as text).
    ran = subprocess.run([sys.executable, "-OO", "-c", _HELPLESS], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split("\n")[:-1] == []


def test_version_option_prints_the_version_runs_and_the_wheel_record(dists, capsys):
    # `tiersim --version` said 'Error: --version: no such option': no command told which
    # tiersim was installed, though run folders and sweep points record it.
    import tiersim
    from tiersim.cli.app import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tiersim {tiersim.__version__}\n"
    _, wheel, _ = dists
    meta = zipfile.ZipFile(wheel).read(f"tiersim-{tiersim.__version__}.dist-info/METADATA")
    assert f"Version: {tiersim.__version__}" in meta.decode().splitlines()
    done = run_cli("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"tiersim {tiersim.__version__}\n",
                                                           "")


def test_run_folder_records_the_version_that_version_prints(tmp_path, capsys):
    import json

    from tiersim.cli.app import main

    assert main(["run", str(TINY), "--out", str(tmp_path / "o"), "--no-report",
                 "--no-baselines"]) == 0
    capsys.readouterr()
    assert main(["--version"]) == 0
    said = capsys.readouterr().out.split()[-1]
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["tiersim"] == said


def _fake_package(tmp_path, monkeypatch, name: str, body: str) -> None:
    """A package ``name`` on sys.path whose import runs ``body`` (an installed but broken one)."""
    folder = tmp_path / "fake" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(body)
    monkeypatch.syspath_prepend(str(folder.parent))
    monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize("body,said", [
    ("import nosuchdep_xyz\n", "No module named 'nosuchdep_xyz'"),
    ("raise RuntimeError('module compiled against ABI version 0x1000009')\n",
     "RuntimeError: module compiled against ABI version 0x1000009"),
])
def test_a_torch_installed_but_broken_is_not_called_missing(tmp_path, capsys, monkeypatch,
                                                            body, said):
    # A torch whose import failed on a dependency was 'torch is not installed; pip install
    # tiersim[gpu]' (it is installed: pip says so); one raising anything but ImportError or
    # OSError (numpy's ABI check raises RuntimeError) was a traceback.
    from tiersim.calibrate.cli import main

    _fake_package(tmp_path, monkeypatch, "torch", body)
    out = tmp_path / "p.json"
    assert main(["--device", "cpu", "--quick", "--out", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"Error: torch cannot be imported ({said}); reinstall it: pip install 'tiersim[gpu]' "
        "(torch 2.13.0)\n")
    assert not out.exists()


@pytest.mark.parametrize("body,said", [
    ("import nosuchdep_xyz\n", "No module named 'nosuchdep_xyz'"),
    ("raise RuntimeError('CUDA driver version is insufficient')\n",
     "RuntimeError: CUDA driver version is insufficient"),
])
def test_an_aiconfigurator_installed_but_broken_is_not_called_missing(tmp_path, capsys,
                                                                      monkeypatch, body, said):
    # The same for aiconfigurator-core: 'aiconfigurator-core is not installed', or a traceback.
    from tiersim.cli.app import main

    _fake_package(tmp_path, monkeypatch, "aiconfigurator_core", body)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from", "aiconfigurator", "--out", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"Error: aiconfigurator-core cannot be imported ({said}); reinstall it: pip install "
        "'aiconfigurator-core==0.12.0' (or the tiersim[aic] extra)\n")
    assert not out.exists()
    from tiersim.errors import ProfileError
    from tiersim.perf.aiconfigurator import aic_model_path

    with pytest.raises(ProfileError, match=r"^aiconfigurator-core cannot be imported \("):
        aic_model_path("aic:Qwen3-32B")


#: The oldest release of each dependency tiersim runs on, and why: found by installing the
#: declared floors in a fresh venv (numpy 1.26, pandas 2.1, pyarrow 14, scikit-learn 1.4,
#: pydantic 2.6, typer 0.12) and running every bundled scenario, a sweep and a report.
FLOORS = {
    "numpy": ((2, 0), "np.trapezoid (agentic.yaml: AttributeError under numpy 1.26)"),
    "pandas": ((2, 2, 2), "the first pandas built for numpy 2"),
    "pyarrow": ((16,), "the first pyarrow built for numpy 2"),
    "scikit-learn": ((1, 5), "the first scikit-learn built for numpy 2"),
    "scipy": ((1, 13), "the first SciPy for numpy 2 (its 1.13.0 release notes; tiersim imported "
                       "it undeclared, through scikit-learn, until round 26)"),
    "pydantic": ((2, 7), "pydantic.with_config (every command: ImportError under 2.6)"),
    "typer": ((0, 16), "typer 0.12 to 0.15.3 allow click 8.2, with which every --help and "
                       "option fails in a TypeError traceback"),
}


def test_the_declared_dependency_floors_are_releases_tiersim_runs_on():
    # pip kept numpy 1.26 / pydantic 2.6 / typer 0.14 with click 8.2, as pyproject.toml
    # allowed, and tiersim ended in a traceback ('cannot import name with_config').
    import re
    import tomllib

    declared = {}
    for dep in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        name, floor = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", dep).groups()
        declared[name.lower()] = tuple(int(x) for x in floor.split("."))
    low = {name: (declared.get(name), need, why) for name, (need, why) in FLOORS.items()
           if declared.get(name) is None or declared[name] < need}
    assert low == {}


def test_no_pydantic_model_warns_of_its_model_fields_under_pydantic_before_2_10():
    # pydantic 2.7 to 2.9 (which the floor allows) warn at import of every model with a field
    # named model_*: each run printed two 'UserWarning: Field "model_path" has conflict with
    # protected namespace "model_"' blocks of four lines. Such a model clears the namespaces.
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import tiersim

    for info in pkgutil.walk_packages(tiersim.__path__, "tiersim."):
        if not (info.name.startswith(("tiersim.calibrate.", "tiersim.traces."))
                or info.name.endswith("__main__")):  # torch; scripts
            importlib.import_module(info.name)

    def every(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from every(sub)

    clashing = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in every(BaseModel)
                      if cls.__module__.startswith("tiersim.")
                      and any(name.startswith("model_") for name in cls.model_fields)
                      and cls.model_config.get("protected_namespaces") != ())
    assert clashing == []
