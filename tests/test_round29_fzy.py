"""Round 29, hostile command lines, environments, scenarios and result folders (helper fzy):
each test names what the command did before its fix."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize("columns", ["10000000", "99999999999999999999"])
def test_a_huge_terminal_width_is_laid_out_for_at_most_1000_columns(capsys, monkeypatch,
                                                                    columns):
    """``COLUMNS=10000000 tiersim plan --help`` printed 280 MB of padding (38 s, 580 MB of
    memory); ``COLUMNS=99999999999999999999`` was an OverflowError traceback from rich."""
    from tiersim.cli import main

    monkeypatch.setenv("COLUMNS", columns)
    capsys.readouterr()
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--accuracy-floor" in out
    assert max(len(line) for line in out.splitlines()) <= 1000
    assert os.environ["COLUMNS"] == columns  # the user's setting again afterwards


def _ray_tmpdir(tmp_path, kind: str) -> str:
    """A ``RAY_TMPDIR`` that cannot hold a local Ray's folder: missing, a file, or so long a
    path that Ray's sockets under it would pass 107 bytes."""
    if kind == "missing":
        return str(tmp_path / "missing")
    if kind == "file":
        (tmp_path / "file").write_text("")
        return str(tmp_path / "file")
    folder = tmp_path / ("x" * 100)
    folder.mkdir()
    return str(folder)


@pytest.mark.parametrize(("kind", "why"), [
    ("missing", "cannot make the local Ray's folder there (No such file or directory)"),
    ("file", "cannot make the local Ray's folder there (Not a directory)"),
    ("long", "too long a path for the local Ray's sockets under it")])
def test_a_ray_tmpdir_that_cannot_hold_a_local_ray_is_named(tmp_path, capsys, monkeypatch,
                                                            kind, why):
    """``RAY_TMPDIR=/nonexistent`` read "Error: /nonexistent/tiersim-ray-new-pftk4ief: cannot
    write (No such file or directory); check that OUT is writable and has free space", and a
    long one "OUT: cannot write (validate_socket_filename failed: AF_UNIX path length cannot
    exceed 107 bytes: ...)": both blamed the sweep's --out folder."""
    pytest.importorskip("ray")
    from test_hostile_inputs import one_error_line, run_cli
    from test_round28_fzs import tiny_sweep

    folder = _ray_tmpdir(tmp_path, kind)
    monkeypatch.setenv("RAY_TMPDIR", folder)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "o"
    line = one_error_line(*run_cli(capsys, "sweep", tiny_sweep(tmp_path, {"seed": [0, 1]}),
                                   "--out", out, "--executor", "ray", "-w", "1",
                                   "--no-baselines", "--no-report"))
    assert line.startswith(f"Error: RAY_TMPDIR={folder} (in the environment): {why}"), line
    assert line.endswith("; set RAY_TMPDIR to a short folder you may write, e.g. /tmp"), line
    assert not out.exists()
    if kind == "long":
        assert os.listdir(folder) == []  # the folder made to measure is removed


@pytest.mark.parametrize("address", ["[]:6379", ":6379", "ray://", "ray://:10001",
                                     "ray://[]"])
@pytest.mark.parametrize("given", ["--address", "RAY_ADDRESS"])
def test_a_ray_address_naming_no_host_is_refused_at_once(monkeypatch, address, given):
    """``--address '[]:6379'`` left Ray retrying past 200 s (a hang, the sweep's folder held),
    ``RAY_ADDRESS=ray://`` 35 s before "ray client connection timeout"."""
    import time

    from test_ray_address_ports import NoRay

    from tiersim.errors import TiersimError
    from tiersim.sweep import executors

    monkeypatch.setattr(executors, "_ray", NoRay)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if given == "RAY_ADDRESS":
        monkeypatch.setenv("RAY_ADDRESS", address)
    named, fix = ((f"--address {address!r}", "give host:port of a running Ray cluster, or leave "
                   "it out") if given == "--address" else
                  (f"RAY_ADDRESS={address!r} (in the environment)", "set it to host:port of a "
                   "running Ray cluster, or unset it to start a local Ray"))
    started = time.monotonic()
    with pytest.raises(TiersimError) as caught:
        executors.run_ray([], lambda record: None, address if given == "--address" else None)
    assert str(caught.value) == f"{named}: names no host before the port; {fix}"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("flags", "line"), [
    (["--precisions", "fp8", "--ops", "overhead"],
     "--precisions fp8: no section of --ops overhead reads it (only gemm and moe do); add one "
     "of them to --ops, or drop --precisions"),
    (["--kv-dtypes", "fp8", "--ops", "overhead,allreduce"],
     "--kv-dtypes fp8: no section of --ops overhead,allreduce reads it (only attn_decode and "
     "attn_prefill do); add one of them to --ops, or drop --kv-dtypes"),
    (["--compile-dequant", "--precisions", "fp8", "--ops", "overhead,gemm"],
     "--compile-dequant: fuses the dequantisation of NVFP4 GEMMs, and this run measures none "
     "(--ops overhead,gemm, --precisions fp8); measure gemm at nvfp4, or drop "
     "--compile-dequant")])
def test_calibrate_options_no_chosen_section_reads_are_refused(tmp_path, capsys, flags, line):
    """``calibrate --quick --device cpu --precisions fp8 --ops overhead`` wrote a complete
    profile, the weight format asked for measured nowhere, without a word (so did
    ``--kv-dtypes`` without an attention section, ``--compile-dequant`` without an NVFP4
    GEMM)."""
    from test_hostile_inputs import one_error_line, run_cli

    out = tmp_path / "p.json"
    got = one_error_line(*run_cli(capsys, "calibrate", "--quick", "--device", "cpu", *flags,
                                  "--out", out))
    assert got == f"Error: {line}"
    assert not out.exists()


@pytest.mark.parametrize(("fleet", "shown"), [({"bf16": 3}, "bf16 3 x 1 GPU"),
                                              ({"w4a16": 1}, "w4a16 1 x 1 GPU")])
def test_a_plan_json_of_another_fleet_beside_the_run_is_refused(tmp_path, capsys, fleet,
                                                                shown):
    """A plan.json whose chosen fleet is not the planned run's (copied from another plan, or
    edited: the manifest does not cover it) was reported beside the run's figures, "bf16=3x1
    GPU" over a run of one replica."""
    import json

    from conftest import copy_folder, tiny_doc, write_yaml
    from test_hostile_inputs import one_error_line, run_cli

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(
        trace={"path": "azure2023_code.parquet", "window": [240, 270]}))
    code, err = run_cli(capsys, "plan", scenario, "--out", tmp_path / "p", "--no-report")
    assert code == 0, err[-1000:]
    folder = copy_folder(tmp_path / "p", tmp_path / "e")
    doc = json.loads((folder / "plan.json").read_text())
    assert doc["plan"]["replicas"] == {"bf16": 1}  # the run's fleet, which the report accepts
    assert run_cli(capsys, "report", folder)[0] == 0
    doc["plan"]["replicas"] = fleet
    doc["plan"]["gpus_per_replica"] = dict.fromkeys(fleet, 1)
    (folder / "plan.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'plan.json'}: plans {shown}, and the run beside it "
                    "(summary.json) ran bf16 1 x 1 GPU: the files of two plans (manifest.json "
                    f"does not cover plan.json); rerun `tiersim plan --out {folder}`")


def test_a_kv_cache_of_one_block_is_one_block():
    """A tier whose memory left one KV block read "one sequence may hold at most 16 tokens of
    its KV cache per replica (1 blocks of 16 tokens)"."""
    from tiersim.engine import SchedulerLimits
    from tiersim.scenario import TierConfig, _cache_text

    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0)
    one = SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=16, block_size=16,
                          watermark=0.0)
    assert _cache_text(one, 1, tier) == "(1 block of 16 tokens)"
    many = SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=16, block_size=16,
                           watermark=0.01)
    assert _cache_text(many, 2064, tier) == ("(2,064 blocks of 16 tokens, less 20 blocks for "
                                             "the watermark)")
    assert _cache_text(many, 100, tier) == "(100 blocks of 16 tokens, less 1 block for the " \
        "watermark)"


def test_calibrate_prints_the_profile_path_it_wrote_as_text(tmp_path, capsys):
    """``calibrate --out $'a\\e[31mred.json'`` printed "wrote a" and the escape itself, which
    recoloured the terminal (a path with a line break printed as two lines); its error lines
    and ``--from aiconfigurator`` print the escapes."""
    from tiersim.cli import main

    out = tmp_path / "a\x1b[31mred\nb.json"
    capsys.readouterr()
    assert main(["calibrate", "--quick", "--device", "cpu", "--ops", "overhead", "--out",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.is_file()
    assert printed.splitlines()[-1] == f"wrote {tmp_path}/a\\x1b[31mred\\nb.json"
    assert "\x1b" not in printed


@pytest.mark.parametrize("column", ["final_tier", "tier"])
def test_a_request_tier_not_of_the_run_is_one_line(hand_edited_run, tmp_path, capsys, column):
    """A requests.parquet row whose final_tier is no tier of the run was drawn as a latency
    CDF of a tier of its own, exit 0 (the load series' tiers were checked, not these)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from conftest import copy_folder
    from test_hostile_inputs import one_error_line, run_cli

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    path = folder / "requests.parquet"
    table = pq.read_table(path)
    tiers = table.column(column).to_pylist()
    tiers[2] = "nosuch"
    table = table.set_column(table.column_names.index(column), column, pa.array(tiers))
    pq.write_table(table.replace_schema_metadata(None), path)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {path}: column {column!r}, row 3: the text 'nosuch', none of the "
                    "run's tiers (w4a16, bf16); rerun the command that wrote it")
