"""Step-time and memory models.

:func:`build_step_model` is the one factory the scenario layer calls: with no profile it returns
the roofline model, calibrated on NVIDIA's measured H200 data
(:mod:`tiersim.perf.roofline_calibration`); with a profile (a JSON path, a bundled profile name,
or a loaded :class:`~tiersim.perf.profile.Profile`) it returns the per-layer assembly driven by
the profile's measured tables, falling back to the bare roofline table by table (listed in
``.sources()``).
"""

from __future__ import annotations

from collections import OrderedDict

from tiersim.errors import ProfileError, TiersimError, escaped, yaml_written

DEFAULT_PROFILE = "h200_aiconfigurator_vllm"
#: The bundled profile of each GPU that ships one (vLLM kernels, NVIDIA's measured tables from
#: aiconfigurator-core); a GPU not listed runs on the roofline unless a scenario names a profile.
GPU_PROFILES = {"H200": DEFAULT_PROFILE, "H100": "h100_aiconfigurator_vllm",
                "B200": "b200_aiconfigurator_vllm"}
PROFILE_CACHE_SIZE = 8
"""Loaded profile file versions kept in a process (the latest read of each of the last files
read): a sweep worker on a ``profile`` axis of many files, or a profile rewritten while a
process runs, would otherwise keep every version it read (about 1 MB each, more with memos)."""
_PROFILE_CACHE: OrderedDict[tuple[str, int, int, int, int, int], object] = OrderedDict()


def default_profile_name(gpu: str = "H200") -> str | None:
    """The bundled profile a scenario on ``gpu`` uses when it names none: NVIDIA's measured
    tables of that GPU imported from aiconfigurator-core (vLLM kernels), e.g.
    ``profiles/h200_aiconfigurator_vllm.json``; ``None`` (the roofline) for a GPU with none.
    ``gpu`` is a catalogue name ("H200", "h100_sxm" ...)."""
    from tiersim.hardware import get_gpu

    return GPU_PROFILES.get(get_gpu(gpu).name)


def profile_gpu_problem(profile, gpu: str, named: str) -> str | None:
    """Why the profile loaded from ``named`` (its path, or a bundled name) cannot time the GPU
    ``gpu``: its ``gpu`` field names no catalogued GPU, or another one; None when it fits.
    The fix ends with "use a ... profile" for the caller to finish."""
    from tiersim.hardware import get_gpu

    if str(profile.gpu).strip().lower() == "cpu":  # said "unknown GPU 'cpu'; known GPUs: ..."
        return (f"{named}: gpu: cpu: measured on a CPU (tiersim calibrate --device cpu, which "
                f"checks the harness's code paths, not a GPU's speed); use a {gpu} profile")
    try:
        measured = get_gpu(profile.gpu).name
    except TiersimError as err:
        return f"{named}: gpu: {err}; use a {gpu} profile"
    if measured != gpu:
        return f"{named}: gpu: measured on {measured}, not {gpu}; use a {gpu} profile"
    elsewhere = measured_elsewhere(profile, measured)
    if elsewhere is not None:
        return f"{named}: gpu: says {measured}, but {elsewhere}; use a {gpu} profile"
    return None


def measured_elsewhere(profile, gpu: str) -> str | None:
    """Where the profile's ``provenance.gpu_name`` (the device the harness or importer timed)
    says it was measured, when that is a CPU or another catalogued GPU than its ``gpu`` field
    ``gpu`` (a hand edit: a ``--device cpu`` profile given ``gpu: H200``), or another part of
    a catalogued GPU than the SXM one the catalogue's figures are (``NVIDIA H200 NVL``,
    ``NVIDIA H100 PCIe``: the name's first word a catalogued GPU's, the whole none of its
    names); None otherwise (a name the catalogue does not know is left to the ``gpu``
    field)."""
    from tiersim.hardware import get_gpu

    named = str(profile.provenance.get("gpu_name", "")).strip()
    if named.lower() == "cpu":
        return f"its provenance.gpu_name says it was measured on a CPU ({named})"
    short = named.removeprefix("NVIDIA ").strip()
    try:
        device = get_gpu(short).name if named else gpu
    except TiersimError:
        family = short.replace("_", " ").replace("-", " ").split()[:1]
        try:
            part = get_gpu(family[0]).name if family else None
        except TiersimError:
            return None
        return (f"its provenance.gpu_name says it was measured on {named}, another part than "
                f"the SXM {part} tiersim's figures are")
    if device != gpu:
        return f"its provenance.gpu_name says it was measured on {device} ({named})"
    return None


def empty_note(profile, named: str) -> str | None:
    """A note for a profile that holds no tables (``tables: []``, beside the overhead or the
    eager cost it does hold: a harness run of ``--ops overhead``, or a hand edit), whose every
    operator the bare roofline times, without the calibration a run with no profile reads;
    None for one with tables. Such a profile ran without a word."""
    if profile.tables:
        return None
    held = [what for what, there in (
        ("per-iteration overhead", profile.overhead_source != "roofline"),
        ("eager-step cost", profile.eager.graph_max_tokens > 0)) if there]
    read = (f"only its {' and '.join(held)} {'are' if len(held) > 1 else 'is'} read from it"
            if held else "nothing is read from it")
    return (f"profile {named}: holds no tables (tables: []), so the bare roofline times every "
            f"operator, without the calibration a run with no profile (profile: null) reads; "
            f"{read}; give it tables (tiersim calibrate), or use profile: null")


def partial_note(profile, named: str) -> str | None:
    """A note for a profile whose ``provenance.status`` says the calibration did not finish
    (``partial: ...``, the harness's cut or killed runs); None for a complete one or one that
    states no status (imported profiles)."""
    status = str(profile.provenance.get("status", "complete"))
    if status == "complete":
        return None
    return (f"profile {named}: provenance.status says {status!r}: a calibration that did not "
            "finish; operators it has no table for run on the roofline, and a table cut short "
            "is extrapolated past its last measured point; rerun tiersim calibrate to "
            "completion")


def _no_blank_around(name: str) -> None:
    """Refuse a profile name not found that is a file's or a bundled profile's but for a space
    (or tab) at its start or end, saying so: the refusal named the bundled profile as there
    ("h200_aiconfigurator_vllm: no such ...; bundled: ..., h200_aiconfigurator_vllm"), the
    space that made the difference unseen."""
    from tiersim.paths import expand_user, find_bundled

    stripped = name.strip()
    if not stripped or stripped == name:
        return
    what = ("the file" if expand_user(stripped).is_file() else "the bundled profile"
            if find_bundled("profiles", stripped) is not None else None)
    if what is not None:
        raise ProfileError(f"{yaml_written(name)} has a space (or another blank) at its start "
                           f"or end, which {what} {escaped(stripped)} has not; remove it")


def resolve_profile(profile):
    """A loaded :class:`~tiersim.perf.profile.Profile` from a path, bundled name or profile.

    Files are read once per file version: sweeps build many models from one file; the
    :data:`PROFILE_CACHE_SIZE` versions read last are kept, one per file. A version
    is known as a sweep's input digest knows it (:func:`tiersim.input_files.file_digest`): by
    inode, size, modification and change time, so a profile rewritten with its size and mtime
    kept (``cp -p``, ``rsync -a``) is read again, and a point never runs on an older version
    than the one it records. A file that changed while it was read is not cached.
    """
    from tiersim.paths import find_bundled, keep_latest
    from tiersim.perf.profile import Profile, load_profile

    if isinstance(profile, Profile):
        return profile
    from tiersim.paths import LINK_TO_NOTHING, expand_user, leads_nowhere

    path = expand_user(profile)
    if leads_nowhere(path):  # not found, else: as if no such file were there
        raise ProfileError(f"{profile}: {LINK_TO_NOTHING}; point it at a profile JSON file")
    if path.exists() and not path.is_file():
        raise ProfileError(f"{profile}: not a regular file (a folder, device or pipe); give a "
                           "profile JSON file or a bundled profile's name")
    if not path.is_file():
        found = find_bundled("profiles", str(profile))
        if found is None:
            _no_blank_around(str(profile))
            raise ProfileError(
                f"{profile}: no such profile file or bundled profile; "
                f"bundled: {', '.join(_bundled_names()) or 'none'}"
            )
        path = found
    key = _file_version(path)
    if key in _PROFILE_CACHE:
        _PROFILE_CACHE.move_to_end(key)
        return _PROFILE_CACHE[key]
    loaded = load_profile(path)
    if _file_version(path) == key:  # not replaced while it was read
        keep_latest(_PROFILE_CACHE, key, loaded, PROFILE_CACHE_SIZE)
    return loaded


def _file_version(path) -> tuple[str, int, int, int, int, int]:
    """The identity of one version of a file: its resolved path, device, inode, size, and
    modification and change times (ns)."""
    from tiersim.paths import resolved_path

    stat = path.stat()
    return (str(resolved_path(path)), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns,
            stat.st_ctime_ns)


def _bundled_names() -> list[str]:
    from tiersim.paths import available

    return [name.removesuffix(".json") for name in available("profiles")]


def build_step_model(
    model, precision, gpu, tp: int = 1, kv_dtype: str = "bf16", profile=None, *,
    dp: int = 1, ep: int = 1, moe_backend: str = "auto",
):
    """The step-time model of one replica: ``tp`` GPUs of ``gpu`` serving ``model`` at
    ``precision`` with a ``kv_dtype`` KV cache (``"auto"``: the format the checkpoint declares,
    else BF16, as vLLM's default ``--kv-cache-dtype auto`` serves it).

    Data and expert parallelism: a replica of ``tp x dp`` GPUs runs ``dp`` attention
    data-parallel ranks of ``tp`` GPUs each; ``ep`` is the expert-parallel size (1: experts
    tensor-parallel over all ``tp x dp`` GPUs; ``tp x dp``: vLLM's ``--enable-expert-parallel``).
    The model returned times ONE DP rank's iterations (each rank is its own scheduler with its
    own batch and KV cache, :func:`tiersim.perf.memory.kv_capacity_blocks` with the same
    ``dp``); its MoE layers see the tokens of all ``dp`` ranks (lockstep, balanced load).

    ``moe_backend``: the routed experts' kernel (:data:`tiersim.perf.memory.MOE_BACKENDS`;
    ``deepgemm``: vLLM 0.12's worst-case-sized grouped GEMM; ValueError where the replica
    cannot run it).

    ``profile=None`` gives the roofline model with its shipped calibration (FP8 GEMM and FP8 /
    4-bit MoE kernel efficiencies and vLLM's host time, set on H200's measured data). Otherwise the
    profile's tables answer every operator they cover and the bare roofline the rest; the
    model's ``sources()`` lists each table with ``measured:...``, ``harness`` or ``roofline``
    (and the host time with where it was fitted). A profile made on another GPU is an error.
    """
    from tiersim.hardware import get_gpu, get_model
    from tiersim.hardware.precisions import resolve_kv_dtype, weight_formats
    from tiersim.perf import roofline_calibration
    from tiersim.perf.assembly import AssembledStepModel
    from tiersim.perf.memory import check_parallel
    from tiersim.perf.profile import ProfileOps
    from tiersim.perf.roofline import RooflineModel, RooflineOps

    arch, dev = get_model(model), get_gpu(gpu)
    prec = weight_formats(arch, precision)
    kv_dtype = resolve_kv_dtype(arch, kv_dtype)
    check_parallel(arch, tp, dp, ep)
    if profile is None:
        return RooflineModel(arch, prec, dev, tp=tp, kv_dtype=kv_dtype, dp=dp, ep=ep,
                             moe_backend=moe_backend, calibration=roofline_calibration.shipped())
    prof = resolve_profile(profile)
    problem = profile_gpu_problem(prof, dev.name, prof.path)
    if problem is not None:
        raise ProfileError(problem + " or no profile (roofline)")
    fallback = RooflineOps(arch, prec, dev, tp=tp, kv_dtype=kv_dtype, dp=dp, ep=ep)
    ops = ProfileOps(prof, arch, prec, dev, tp=tp, kv_dtype=kv_dtype, fallback=fallback,
                     dp=dp, ep=ep)
    kind = prof.provenance.get("source", "")
    source = f"profile:{prof.name}" + (f" ({_KIND_LABELS.get(kind, kind)})" if kind else "")
    return AssembledStepModel(arch, prec, tp, ops, source, dp=dp, ep=ep,
                              moe_backend=moe_backend)


_KIND_LABELS = {"public": "measured public data", "harness": "harness", "roofline": "roofline"}
