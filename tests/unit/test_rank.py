"""Ranking: gains never exceed shares, diagnostics first, noise floor, measured gains win."""

from __future__ import annotations

from perfsleuth.model.findings import Finding
from perfsleuth.rank import MIN_SUPPORT, NOISE_FLOOR, SUPPORT, advice, hidden_summary, rank


def finding(rule: str, share: float, gain: float, kind: str = "library-replacement") -> Finding:
    return Finding(rule, kind, rule, share, gain, 0.8, "fix it")


def test_sorted_by_gain_and_gain_capped_by_share() -> None:
    ranked = rank([finding("a", 0.1, 0.05), finding("b", 0.2, 0.5), finding("c", 0.5, 0.3)])
    assert [f.rule for f in ranked.shown] == ["c", "b", "a"]
    assert ranked.shown[1].estimated_gain == 0.2  # b claimed more than its share


def test_noise_floor_hides_unless_all() -> None:
    tiny = finding("tiny", 0.01, NOISE_FLOOR / 2)
    assert rank([tiny]).hidden == [tiny]
    assert rank([tiny], show_all=True).shown == [tiny]


def test_a_finding_of_exact_counts_is_not_hidden_as_noise() -> None:
    """Count mode's numbers repeat to the instruction: a 0.42% prologue saving is real."""
    prologue = finding("prologue.split-slow-path", 0.009, 0.0042, kind="prologue-overhead")
    assert rank([prologue]).shown == [prologue]


def test_large_missing_symbols_come_first() -> None:
    symbols = finding("symbols.missing", 0.4, 0.0, kind="missing-symbols")
    ranked = rank([finding("big", 0.9, 0.8), symbols])
    assert ranked.shown[0] is symbols


def test_verified_gain_replaces_the_estimate() -> None:
    small = finding("small-estimate", 0.3, 0.01)
    small.verified = {"ratio": 1.5, "ci95": [1.4, 1.6], "runs": 10}  # saves a third
    ranked = rank([finding("big-estimate", 0.5, 0.2), small])
    assert ranked.shown[0] is small


def test_verified_same_counts_as_no_gain() -> None:
    noisy = finding("noisy", 0.5, 0.3)
    noisy.verified = {"ratio": 1.04, "ci95": [0.97, 1.12], "runs": 10, "verdict": "same"}
    ranked = rank([noisy, finding("other", 0.2, 0.1)])
    assert [f.rule for f in ranked.shown] == ["other"]
    assert ranked.hidden == [noisy]


def test_small_missing_symbols_are_shown_last() -> None:
    symbols = finding("symbols.missing", 0.06, 0.0, kind="missing-symbols")
    ranked = rank([symbols, finding("big", 0.9, 0.8)])
    assert [f.rule for f in ranked.shown] == ["big", "symbols.missing"]


def test_repeated_findings_are_shown_once() -> None:
    ranked = rank(
        [finding("same", 0.2, 0.1), finding("same", 0.2, 0.1), finding("other", 0.2, 0.1)]
    )
    assert [f.rule for f in ranked.shown] == ["other", "same"]


def test_nameless_code_in_a_library_a_rule_names_does_not_come_first() -> None:
    symbols = finding("symbols.missing", 0.98, 0.0, kind="missing-symbols")
    symbols.details["blind_share"] = 0.0  # all of it in liblzma, which compression.xz names
    ranked = rank([symbols, finding("compression.xz", 0.99, 0.6)])
    assert [f.rule for f in ranked.shown] == ["compression.xz", "symbols.missing"]


def supported(f: Finding, samples: int) -> Finding:
    f.details[SUPPORT] = samples
    return f


def test_a_finding_on_too_few_samples_is_hidden_and_says_why() -> None:
    """A `sed` that failed at once gave 2 samples: "50% of CPU time is inside mmap"."""
    chance = supported(finding("one-sample", 0.5, 0.4), MIN_SUPPORT - 1)
    held = supported(finding("held", 0.5, 0.4), MIN_SUPPORT)
    ranked = rank([chance, held])
    assert ranked.shown == [held] and ranked.hidden == [chance]
    because = advice("2", [chance]).to_json()["hidden_findings"][0]["hidden_because"]
    assert because.startswith(f"it rests on too few samples ({MIN_SUPPORT - 1};")
    assert rank([chance], show_all=True).shown == [chance]


def test_a_measured_gain_stands_whatever_the_samples() -> None:
    measured = supported(finding("measured", 0.5, 0.1), 3)
    measured.verified = {"ratio": 1.5, "ci95": [1.4, 1.6], "runs": 10}
    assert rank([measured]).shown == [measured]


def test_the_hidden_are_counted_by_reason() -> None:
    few = supported(finding("few", 0.5, 0.4), 2)
    tiny = [finding("tiny", 0.01, NOISE_FLOOR / 2), finding("tiny2", 0.01, NOISE_FLOOR / 3)]
    doc = advice("1", [few, *tiny]).to_json()
    assert hidden_summary(doc["hidden_findings"]) == "2 below the noise floor, 1 on too few samples"
