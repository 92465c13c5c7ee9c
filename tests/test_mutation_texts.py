"""tests/mutation_check.py seeds each known bug by replacing a piece of source text: every such text must
still stand in its file, once, or the mutation would seed nothing (it runs too long for CI; this
check does not)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def mutations() -> dict:
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "tests" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MUTATIONS


@pytest.mark.parametrize("name", sorted(mutations()))
def test_the_mutation_names_text_that_stands_once_in_its_file(name):
    path, text, replacement = mutations()[name]
    assert text != replacement, name
    assert (ROOT / path).read_text().count(text) == 1, f"{name}: update its text in tests/mutation_check.py"
