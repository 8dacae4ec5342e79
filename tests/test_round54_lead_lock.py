"""Round 54 (lead): a signal between ``.lock``'s creation and its handle.

The clean-CI run at b4ce648d once saw ``tiersim run`` stopped by SIGINT leave its ``--out``
folder behind (test_round26_sigterm): ``os.open`` had made ``.lock`` but the signal came
before ``os.fdopen`` gave the handle, so the clean-up, which needed the handle, left the file
and the folder could not be removed. The clean-up now opens the file again.
"""

from __future__ import annotations

import pytest

from tiersim import outputs


def test_a_signal_before_the_locks_handle_leaves_no_folder(tmp_path, monkeypatch):
    out = tmp_path / "new" / "o"
    real = outputs.os.fdopen
    calls = []

    def interrupted_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(outputs.os, "fdopen", interrupted_once)
    with pytest.raises(KeyboardInterrupt), outputs.locked(out, "run"):
        pass  # never reached
    assert len(calls) == 2  # the clean-up opened the lock it made again
    assert not (tmp_path / "new").exists()
