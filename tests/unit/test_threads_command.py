"""perfsleuth threads: time by state per thread."""

import io

from rich.console import Console

from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.present import threads_text
from perfsleuth.views.threads import by_thread


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
