"""One clock: ``Clock.wall()`` is the wall time next to the monotonic ``now()`` (kinrun.clock);
a fake clock's wall moves with its steps and can be set; the wall-time users (the Lease's
renewTime, serving certificates) read it from the clock they are given."""

from __future__ import annotations

import datetime
import time

import pytest
from cryptography import x509

from kinrun.clock import REAL_CLOCK, FakeClock, with_wall
from kinrun.config.model import LeaderElectionSpec
from kinrun.leader_election import LeaderElector, now_micro
from kinrun.tls import SelfSignedCerts

WALL = 1_750_000_000.0


def test_the_real_clock_is_the_time_functions_themselves():
    assert REAL_CLOCK.now is time.monotonic and REAL_CLOCK.wall is time.time


def test_a_fake_wall_moves_with_the_steps_and_can_be_set():
    clock = FakeClock(start=5.0, wall=WALL)
    assert clock.wall() == WALL
    clock.step(2.5)
    assert clock.wall() == WALL + 2.5 and clock.now() == 7.5
    clock.set_wall(100.0)
    clock.step(1.0)
    assert clock.wall() == 101.0 and clock.now() == 8.5


def test_a_deprecated_wall_callable_replaces_the_wall_only_and_warns():
    clock = FakeClock()
    with pytest.warns(DeprecationWarning, match="Where: wall_clock= is deprecated"):
        both = with_wall(clock, lambda: 42.0, where="Where")
    assert both.wall() == 42.0 and both.now() == clock.now()
    assert with_wall(clock, None, where="Where") is clock


def test_the_lease_times_come_from_the_electors_clock():
    clock = FakeClock(wall=WALL)
    spec = LeaderElectionSpec(lease_name="le", namespace="default", lease_duration=8.0,
                              renew_deadline=5.0, retry_period=1.0)
    elector = LeaderElector(None, spec, identity="a", clock=clock)
    clock.step(3.0)
    assert now_micro(elector.clock) == "2025-06-15T15:06:43.000000Z"


def test_certificates_are_issued_on_the_clocks_wall():
    certs = SelfSignedCerts(["localhost"], clock=FakeClock(wall=WALL))
    cert = x509.load_pem_x509_certificate(certs.current().cert)
    assert cert.not_valid_before_utc == datetime.datetime.fromtimestamp(
        WALL - 300, datetime.timezone.utc)
