"""A Ray address whose port is no TCP port, or a ``ray://`` address with none, is judged at
once: Ray retried both for minutes, holding the sweep's folder."""

from __future__ import annotations

import time

import pytest

from tiersim.errors import TiersimError
from tiersim.sweep import executors


class NoRay:
    """A ``ray`` that must not be reached."""

    def is_initialized(self):
        return False

    def init(self, **kw):
        raise AssertionError(f"ray.init reached with {kw}")


@pytest.mark.parametrize("address,port", [("localhost:0", "0"), ("localhost:99999", "99999"),
                                          ("ray://10.0.0.1:70000", "70000")])
def test_a_port_that_is_no_tcp_port_is_refused_at_once(monkeypatch, address, port):
    monkeypatch.setattr(executors, "_ray", NoRay)
    started = time.monotonic()
    with pytest.raises(TiersimError) as caught:
        executors.run_ray([], lambda record: None, address)
    assert str(caught.value) == (f"--address {address!r}: port {port} is no TCP port (1 to "
                                 "65535); give host:port of a running Ray cluster, or leave it "
                                 "out")
    assert time.monotonic() - started < 5


def test_a_ray_client_address_without_a_port_is_probed_at_the_client_port():
    assert executors._host_port("ray://head") == ("head", 10001)
    assert executors._host_port("ray://[::1]") == ("::1", 10001)
    assert executors._host_port("ray://head:25001") == ("head", 25001)
    assert executors._host_port("head") is None  # Ray says what is wrong with it
