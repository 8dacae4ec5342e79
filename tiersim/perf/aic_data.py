"""Where aiconfigurator-core's measured tables are, and how they are read.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`, whose docstring says
what is taken from each table): the package (:data:`AIC_PACKAGE`, pinned at :data:`AIC_PIN`)
and its data folder per GPU (:func:`data_root`, :func:`data_engine`), the version folders of
an engine's tables, newest first (:func:`find_sources`, :class:`Source`), a parquet file's
frame (:func:`_read`), and the model configs it ships (:func:`aic_model_path`).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from tiersim.errors import ProfileError, import_extra, shown

AIC_PACKAGE = "aiconfigurator-core"
AIC_PIN = "0.12.0"
_GPU_DIRS = {"h200": "h200_sxm", "h100": "h100_sxm", "b200": "b200_sxm", "b300": "b300_sxm"}
_GPU_NAMES = {"h200": "H200", "h100": "H100", "b200": "B200", "b300": "B300"}


@dataclass(frozen=True)
class Source:
    """Where one imported table came from: a parquet file under the package's data folder."""

    family: str
    engine: str
    version: str
    path: Path

    def origin(self, aic_version: str) -> str:
        """The provenance string stored in the table's ``origin`` field."""
        rel = "/".join(self.path.parts[-5:])
        return f"{AIC_PACKAGE} {aic_version} systems/data/{rel}"


def _aic(missing: str):
    """The aiconfigurator_core module; ``missing`` is the error where it is not installed, and
    an installed one that fails to import is one line naming what failed."""
    return import_extra("aiconfigurator_core", AIC_PACKAGE, missing,
                        f"pip install '{AIC_PACKAGE}=={AIC_PIN}' (or the tiersim[aic] extra)",
                        ProfileError)


def data_root(gpu: str) -> Path:
    """The package's measured-data folder for ``gpu``; raises when the package is missing."""
    aiconfigurator_core = _aic(f"{AIC_PACKAGE} is not installed; pip install "
                               f"'{AIC_PACKAGE}=={AIC_PIN}' (or the tiersim[aic] extra) to "
                               "import its tables")
    if gpu.lower() not in _GPU_DIRS:
        raise ProfileError(f"--gpu {shown(gpu, 64)}: choose one of {', '.join(_GPU_DIRS)}")
    root = Path(aiconfigurator_core.__file__).parent / "systems" / "data" / _GPU_DIRS[gpu.lower()]
    if not root.is_dir():
        raise ProfileError(f"{root}: no measured data for {gpu} in this {AIC_PACKAGE}")
    return root


def data_engine(gpu: str, engine: str) -> None:
    """Check that ``engine`` has tables for ``gpu`` in the installed data, before any model is
    read (``--engine foo`` was refused only after every model config was read, naming a
    folder of the package and no engine to choose)."""
    root = data_root(gpu) / "gemm"
    engines = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if engine.lower() not in engines:
        raise ProfileError(f"--engine {shown(engine, 64)}: {AIC_PACKAGE} {aic_version()} has no "
                           f"{gpu.upper()} tables of that engine; choose one of "
                           f"{', '.join(engines) or '(none)'}")


def aic_version() -> str:
    """Installed aiconfigurator-core version."""
    return importlib.metadata.version(AIC_PACKAGE)


def _version_key(version: str) -> tuple:
    parts = []
    for piece in version.replace("rc", ".").replace("post", ".").replace("dev", ".").split("."):
        parts.append(int(piece) if piece.isdigit() else -1)
    return tuple(parts)


def find_sources(root: Path, family: str, engine: str, filename: str) -> list[Source]:
    """Every version folder of ``family/engine`` holding ``filename``, newest first."""
    base = root / family / engine
    if not base.is_dir():
        return []
    versions = sorted((d.name for d in base.iterdir() if d.is_dir()), key=_version_key)
    return [
        Source(family, engine, v, base / v / filename)
        for v in reversed(versions)
        if (base / v / filename).is_file()
    ]


def _read(source: Source):
    import pandas as pd

    from tiersim.arrowfile import arrow_file

    with arrow_file(source.path) as handle:
        return pd.read_parquet(handle)


def aic_model_path(name: str) -> str:
    """A model name as :func:`tiersim.hardware.get_model` takes it: ``aic:NAME`` becomes the
    config.json path inside the installed aiconfigurator-core (one error line if absent)."""
    if not name.startswith("aic:"):
        return name
    aiconfigurator_core = _aic(f"importing NVIDIA's tables needs {AIC_PACKAGE} (model "
                               f"{name[4:]} is read from it): pip install 'tiersim[aic]' (or "
                               f"'{AIC_PACKAGE}=={AIC_PIN}')")
    folder = Path(aiconfigurator_core.__file__).parent / "model_configs"
    path = folder / f"{name[4:]}_config.json"
    if not path.is_file():
        raise ProfileError(f"{path}: no such model config in {AIC_PACKAGE}")
    return str(path)
