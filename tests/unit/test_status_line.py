"""The status line of a long local run: written while the run goes on when asked (by default, when stderr is a
terminal), one line rewritten in place and ended with the run."""
import pytest

import flamespark as fs
from flamespark.runtime import status_line
from tests import graphs

EVENTS = [(ts, ts) for ts in range(40)]


@pytest.fixture
def often(monkeypatch):
    monkeypatch.setattr(status_line, "INTERVAL_S", 0.01)


def test_a_run_asked_for_progress_shows_a_status_line_while_it_goes_on(often, capsys):
    result = fs.run(graphs.running_sum(), {"numbers": EVENTS}, rate=200, progress=True)  # 0.2 s at the least
    err = capsys.readouterr().err
    assert err.startswith("\r") and err.endswith("\n") and err.count("\n") == 1
    shown = [line.strip() for line in err.strip().split("\r")]
    assert len(shown) >= 2 and all(line.endswith("result(s) released, 0 late") and "event(s) applied" in line
                                   for line in shown)
    assert result.outputs == fs.run(graphs.running_sum(), {"numbers": EVENTS}).outputs


@pytest.mark.parametrize("progress", [False, None])  # None: stderr is pytest's capture here, not a terminal
def test_a_run_not_asked_or_not_on_a_terminal_writes_nothing(often, capsys, progress):
    fs.run(graphs.running_sum(), {"numbers": EVENTS}, rate=200, progress=progress)
    assert capsys.readouterr().err == ""
