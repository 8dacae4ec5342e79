"""Round 34: a scenario key that names a file with text no file can be named by (a folder or
file name over 255 bytes, a path over 4,095) is refused at its line. Before, the system's
"File name too long" surfaced from deep inside (``Path.is_symlink`` in ``get_model``,
``Path.is_file`` in the trace reader) as a line that named the value, not the file, line and
key; a model name of that length through the Python API raised a bare OSError."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.errors import TiersimError
from tiersim.hardware import get_model
from tiersim.scenario import unnameable

FIX = "a folder or file name holds at most 255 bytes and a path 4,095; give a shorter name"


@pytest.mark.parametrize(("edit", "where", "shown"), [
    (("model: Qwen3-Coder-30B-A3B", "model: " + "a" * 5000), "model",
     "'" + "a" * 37 + "...' (5,000 characters) is no catalogue model and"),
    (("model: Qwen3-Coder-30B-A3B", "model: " + "a/" * 2100), "model",
     "'" + "a/" * 18 + "a...' (4,200 characters) is no catalogue model and"),
    (("path: azure2023_code.parquet", "path: " + "b" * 300), "trace.path",
     "'" + "b" * 37 + "...' (300 characters)"),
])
def test_a_file_key_no_file_can_be_named_by_is_refused_at_its_line(tmp_path, capsys, edit,
                                                                  where, shown):
    """The model, a model path of many short folders, and the trace path."""
    path = tmp_path / "s.yaml"
    text = tiny_with(edit)
    path.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if edit[1] in row)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o")
    assert one_error_line(code, err) == (
        f"Error: {path}: line {line}: {where}: {shown} can name no file: {FIX}")
    assert not (tmp_path / "o").exists()


def test_a_name_of_255_bytes_is_a_name_and_256_is_not():
    """The limits are the file system's: 255 bytes a name (a UTF-8 'é' is two), 4,095 a path."""
    assert unnameable("x" * 255) is None
    assert unnameable("é" * 127 + "x") is None  # 255 bytes
    assert unnameable("é" * 128) is not None  # 256 bytes in 128 characters
    assert unnameable("/".join(["d" * 200] * 20)[:4095]) is None
    assert unnameable("/".join(["d" * 200] * 21)) is not None


def test_get_model_of_a_name_no_file_can_have_is_one_line():
    """Through the Python API, not only a scenario: a TiersimError, not the system's OSError."""
    with pytest.raises(TiersimError) as caught:
        get_model("q" * 5000)
    assert str(caught.value) == (
        "'" + "q" * 57 + "...' (5,000 characters) is no catalogue model, and no file can have "
        "that name (File name too long); name a catalogue model or the path of a Hugging Face "
        "config.json")
