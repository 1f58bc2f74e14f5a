from perfsleuth.symbols.names import elide_templates


def test_operators_open_no_template() -> None:
    assert elide_templates("std::ostream::operator<<(int)") == "std::ostream::operator<<(…)"
    assert elide_templates("std::less<int>::operator()(int const&) const") == (
        "std::less<…>::operator()(…) const"
    )
    assert elide_templates("operator delete[](void*)") == "operator delete[](…)"


def test_anonymous_namespace_kept() -> None:
    assert elide_templates("(anonymous namespace)::hash(char const*)") == (
        "(anonymous namespace)::hash(…)"
    )


def test_operator_inside_a_word_is_a_name() -> None:
    assert elide_templates("myoperator<int>(int)") == "myoperator<…>(…)"


def test_python_names_in_angle_brackets_stay_whole() -> None:
    assert elide_templates("<module>") == "<module>"
    assert elide_templates("json.decoder.<locals>.<lambda>") == "json.decoder.<locals>.<lambda>"
    assert elide_templates("[python:app] <listcomp>") == "[python:app] <listcomp>"
    assert elide_templates("std::vector<bool>::flip()") == "std::vector<…>::flip(…)"


def test_an_operator_followed_by_template_arguments() -> None:
    assert elide_templates("operator<<<script>alert(1)</script>") == "operator<<<…>alert(…)<…>"
