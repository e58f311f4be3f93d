"""What every part's exercise checkers promise: each check has a reference solution, and that solution
passes with the course's one success mark. The mistakes each check must name are in test_partN_exercises."""
import pytest

from posenc_lib.exercises import part1, part2, part3

PARTS = {"part1 (00-03)": part1, "part2 (04-06)": part2, "part3 (07-09)": part3}
# the quiz of 09 is checked with answers, not with a function: test_part3_exercises covers it
CASES = [(part, name) for part, module in PARTS.items() for name in module.SOLUTIONS if name != "quiz"]


@pytest.mark.parametrize("part", PARTS)
def test_solutions_and_checks_name_the_same_exercises(part):
    module = PARTS[part]
    assert module.SOLUTIONS and set(module.SOLUTIONS) == set(module.CHECKS)


@pytest.mark.parametrize("part,name", CASES)
def test_reference_solution_passes_its_check(part, name, capsys):
    module = PARTS[part]
    module.CHECKS[name](module.SOLUTIONS[name])
    assert capsys.readouterr().out.startswith("✓ ")
