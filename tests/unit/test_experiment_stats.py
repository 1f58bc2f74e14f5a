"""Paired statistics of experiments: estimate, bootstrap interval, exact test, verdict."""

from __future__ import annotations

import math
import random

import pytest

from perfsleuth.experiments import stats


def test_summary_is_min_median_max() -> None:
    assert stats.summarize([3.0, 1.0, 2.0, 10.0]) == {"min": 1.0, "median": 2.5, "max": 10.0}


def test_hodges_lehmann_ignores_one_outlier_that_moves_the_mean() -> None:
    values = [0.0, 0.01, -0.01, 0.02, -0.02, 0.0, 0.01, 3.0]
    assert abs(stats.hodges_lehmann(values)) < 0.02
    assert sum(values) / len(values) > 0.3


def test_pairs_with_a_zero_side_are_dropped() -> None:
    assert stats.log_ratios([2.0, 0.0, 1.0], [1.0, 1.0, 0.0]) == [math.log(2.0)]


def test_wilcoxon_exact_p_values() -> None:
    assert stats.wilcoxon_p([0.1] * 10) == pytest.approx(2 / 1024)
    assert stats.wilcoxon_p([-0.1] * 10) == pytest.approx(2 / 1024)
    assert stats.wilcoxon_p([0.0] * 10) == 1.0
    # ranks 1..4 positive, 5 negative: W- = 5 -> P(W <= 5) = 10/32 on each side
    assert stats.wilcoxon_p([0.1, 0.2, 0.3, 0.4, -0.5]) == pytest.approx(2 * 10 / 32)


def test_wilcoxon_normal_approximation_agrees_with_the_exact_test() -> None:
    rng = random.Random(3)
    logs = [rng.gauss(0.05, 0.2) for _ in range(61)]
    exact_n = logs[:60]
    assert stats.wilcoxon_p(logs) == pytest.approx(stats.wilcoxon_p(exact_n), abs=0.1)


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible() -> None:
    rng = random.Random(7)
    logs = [math.log(1.3) + rng.gauss(0, 0.05) for _ in range(12)]
    lo, hi = stats.bootstrap_ci(logs)
    assert lo < math.exp(stats.hodges_lehmann(logs)) < hi
    assert lo > 1.2 and hi < 1.4
    assert stats.bootstrap_ci(logs) == (lo, hi)


def test_clear_speedup_is_faster_and_its_mirror_is_slower() -> None:
    rng = random.Random(1)
    a = [1.0 + rng.uniform(0, 0.05) for _ in range(10)]
    b = [x / 1.4 * (1 + rng.uniform(-0.02, 0.02)) for x in a]
    faster = stats.compare(a, b)
    assert faster.verdict == "faster"
    assert faster.ci95[0] > 1.3 and faster.ratio == pytest.approx(1.4, rel=0.03)
    assert stats.compare(b, a).verdict == "slower"


@pytest.mark.parametrize(
    ("ratio", "ci95", "p", "expected"),
    [
        (1.5, (1.2, 1.8), 0.002, "faster"),
        (1.5, (0.9, 1.8), 0.002, "same"),  # interval includes 1
        (1.5, (1.2, 1.8), 0.008, "same"),  # not significant at 0.5%
        (1.01, (1.005, 1.015), 0.001, "same"),  # real but below the practical threshold
        (0.6, (0.5, 0.7), 0.002, "slower"),
    ],
)
def test_verdict_needs_interval_test_and_size(
    ratio: float, ci95: tuple[float, float], p: float, expected: str
) -> None:
    assert stats.verdict(ratio, ci95, p, stats.PRACTICAL_THRESHOLD["time"]) == expected


def test_heavy_tailed_noise_rarely_claims_a_difference() -> None:
    rng = random.Random(11)

    def noisy() -> float:
        return 1.0 + (rng.expovariate(0.5) if rng.random() < 0.3 else rng.gauss(0, 0.02))

    verdicts = [
        stats.compare([noisy() for _ in range(10)], [noisy() for _ in range(10)]).verdict
        for _ in range(100)
    ]
    assert verdicts.count("same") >= 98  # the exact test alone allows 0.5% false claims


def test_too_few_pairs_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        stats.compare([1.0, 1.0], [1.0, 1.0])


def test_hodges_lehmann_of_many_pairs_samples_close_to_the_exact_value() -> None:
    rng = random.Random(5)
    values = [rng.gauss(0.1, 0.05) for _ in range(400)]
    walsh = [(values[i] + values[j]) / 2 for i in range(400) for j in range(i, 400)]
    exact = sorted(walsh)[len(walsh) // 2]
    assert stats.hodges_lehmann(values) == pytest.approx(exact, abs=0.003)


def test_too_few_pairs_are_said_to_be_too_few() -> None:
    from perfsleuth.experiments.stats import MIN_PAIRS_FOR_CLAIM
    from perfsleuth.experiments.verdict import ratio_sentence

    assert MIN_PAIRS_FOR_CLAIM == 9  # 2 / 2^9 < 0.005 <= 2 / 2^8
    result = {"ratio": 1.5, "ci95": (1.4, 1.6), "p_value": 0.0625, "runs": 5, "verdict": "same"}
    assert "too few runs" in ratio_sentence("B", "A", result, "time")
    result["runs"] = 10
    assert "no difference" in ratio_sentence("B", "A", result, "time")


def test_a_same_verdict_names_the_condition_it_missed() -> None:
    from perfsleuth.experiments.verdict import ratio_sentence

    missed_p = {"ratio": 1.289, "ci95": (1.111, 1.368), "p_value": 0.0117, "runs": 10}
    assert "p=0.0117 is not below the 0.005" in ratio_sentence(
        "B", "A", {**missed_p, "verdict": "same"}, "time"
    )
    wide = {"ratio": 1.05, "ci95": (0.99, 1.1), "p_value": 0.002, "runs": 30, "verdict": "same"}
    assert "95% CI includes 1" in ratio_sentence("B", "A", wide, "time")
    small = {"ratio": 1.01, "ci95": (1.005, 1.015), "p_value": 0.001, "runs": 30, "verdict": "same"}
    assert "1.0% change is below the 2%" in ratio_sentence("B", "A", small, "time")
    assert "below the 0.5%" in ratio_sentence("B", "A", {**small, "ratio": 1.004}, "instructions")


def test_a_same_verdict_whose_interval_excludes_one_says_why_it_is_no_claim() -> None:
    from perfsleuth.experiments.verdict import ratio_sentence

    lto = {"ratio": 1.058, "ci95": (1.017, 1.085), "p_value": 0.0645, "runs": 10}
    said = ratio_sentence("lto", "baseline", {**lto, "verdict": "same"}, "time")
    assert said.startswith("lto: no difference from baseline claimed: gain 5.5% (95% CI 1.7%")
    assert "p=0.0645 is not below the 0.005" in said and "too narrow to trust alone" in said


def test_a_claim_states_the_rule_it_met() -> None:
    from perfsleuth.experiments.verdict import ratio_sentence

    won = {"ratio": 1.25, "ci95": (1.2, 1.3), "p_value": 0.002, "runs": 10, "verdict": "faster"}
    said = ratio_sentence("mimalloc", "baseline", won, "cpu")
    assert said.startswith("mimalloc is 1.25x faster than baseline: gain 20.0% (95% CI 16.7%")
    assert "p below 0.005 and at least the 2% that counts" in said


def test_a_busy_machine_measures_cpu_time_and_says_so() -> None:
    from perfsleuth.experiments.runner import metric_for_load

    metric, note = metric_for_load(None, 20.5, 2)
    assert metric == "cpu" and "load average 20.5 on 2 cores" in note
    assert metric_for_load(None, 1.5, 2) == ("time", "")
    assert metric_for_load("time", 20.5, 2) == ("time", "")  # asked for: kept
