from cache_store import context_with

from perfsleuth.analyzers import constant_time
from perfsleuth.rank import rank

VARIES = {
    "constant_time": False,
    "variants": 2,
    "instructions_per_variant": [130, 40],
    "differences": [{"variant": 1, "what": "branch outcome", "first_source": "/src/check.c:19"}],
}


def test_a_secret_dependent_branch_is_reported_at_its_line(tmp_path):
    ctx = context_with(tmp_path, {"handle_packet": {"constant_time": VARIES}})
    [finding] = constant_time.analyze(ctx)
    assert (finding.kind, finding.file, finding.line) == ("constant-time", "/src/check.c", 19)
    assert finding.estimated_gain == 0.0
    assert rank([finding]).shown == [finding]  # shown although it saves no time


def test_constant_time_functions_give_no_finding(tmp_path):
    same = {**VARIES, "constant_time": True, "differences": []}
    ctx = context_with(tmp_path, {"check_token_ct": {"constant_time": same}})
    assert constant_time.analyze(ctx) == []
