"""perfsleuth threads: time by state per thread."""

import io
import math
from pathlib import Path

import pytest
from rich.console import Console

from perfsleuth.collect.wall import from_wallsnap, to_profile
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.present import threads_text
from perfsleuth.views.threads import by_thread, margin


def profile():
    b = ProfileBuilder(unit="ns")
    worker, main = Thread(2, 1, "worker"), Thread(1, 1, "main")
    b.add([Frame("work")], 600, thread=worker, state="running")
    b.add([Frame("__lll_lock_wait")], 300, thread=worker, state="mutex")
    b.add([Frame("read")], 100, thread=worker, state="io")
    b.add([Frame("pthread_join")], 500, thread=main, state="other")
    return b.build()


def test_rows_give_each_threads_state_fractions_busiest_first():
    rows = by_thread(profile())
    assert [r["tid"] for r in rows] == [2, 1]
    assert rows[0]["name"] == "worker"
    assert rows[0]["states"] == {"running": 0.6, "mutex": 0.3, "io": 0.1}
    assert abs(rows[0]["share"] - 1000 / 1500) < 1e-9
    assert rows[1]["states"] == {"other": 1.0}


def test_text_shows_seconds_and_percentages():
    doc = {"run": "1", "unit": "ns", "total": 1500, "threads": by_thread(profile())}
    out = io.StringIO()
    threads_text.render(doc, Console(file=out, width=120, no_color=True))
    text = out.getvalue()
    assert "worker" in text and "mutex" in text and "30.00%" in text


WALLSNAP = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "wallsnap-prodcons.txt"


def test_a_run_of_sampled_instants_gives_each_share_its_95_percent_margin():
    """Wall mode's snapshots (a captured wallsnap run of prodcons) weigh the same: each
    thread's share of a state is a proportion of its samples, with its margin."""
    rows = by_thread(to_profile(from_wallsnap(WALLSNAP.read_text(), rate_hz=20)))
    assert len(rows) == 4
    for row in rows:
        assert row["samples"] == 2
        assert set(row["margins"]) == set(row["states"])
        for state, fraction in row["states"].items():
            expected = 1.959964 * math.sqrt(fraction * (1 - fraction) / 2)
            assert abs(row["margins"][state] - expected) < 1e-9
    assert margin(0.19, 314) == pytest.approx(0.0434, abs=1e-4)


def test_measured_waits_have_no_sampling_margin():
    """Weights per sample that differ (offcpu mode's measured waits) are not instants."""
    rows = by_thread(profile())
    assert all("margins" not in r and "samples" not in r for r in rows)


def test_text_gives_the_margin_beside_each_sampled_share_and_says_what_it_is():
    doc = {"run": "1", "unit": "ns", "total": 1.0, "threads": by_thread(sampled())}
    out = io.StringIO()
    threads_text.render(doc, Console(file=out, width=120, no_color=True))
    text = out.getvalue()
    assert "80.00% ±11.1" in text and "20.00% ±11.1" in text
    assert "95% margin of a share of 50 sampled instants a thread" in text


def test_text_says_how_many_instants_two_points_would_need():
    """Issue 29 asks for shares within 2 points of the program's clock: at 50 instants a
    20% share is ±11.1, and the footnote says what ±2 would take (1,537 instants, 31x)."""
    doc = {"run": "1", "unit": "ns", "total": 1.0, "threads": by_thread(sampled())}
    out = io.StringIO()
    threads_text.render(doc, Console(file=out, width=200, no_color=True))
    assert "±2 points on every share needs 1,537 instants a thread, 31× these" in out.getvalue()


def sampled():
    b = ProfileBuilder(unit="ns")
    worker = Thread(2, 1, "worker")
    for i in range(50):
        state = "mutex" if i % 5 == 0 else "running"
        b.add([Frame("work")], 20e6, thread=worker, state=state)
    return b.build()


def test_a_thread_sampled_in_one_state_only_shows_no_margin():
    b = ProfileBuilder(unit="samples")
    for _ in range(10):
        b.add([Frame("work")], 1, thread=Thread(3, 3, "spin"), state="running")
    doc = {"run": "1", "unit": "samples", "total": 10, "threads": by_thread(b.build())}
    out = io.StringIO()
    threads_text.render(doc, Console(file=out, width=120, no_color=True))
    assert "±" not in out.getvalue() and "100.00%" in out.getvalue()
