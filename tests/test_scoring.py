"""Answer extraction and scoring: the forms models really write, and the traps (articles, lstrip, huge powers)."""

from __future__ import annotations

import pytest

from agentbalance.tasks.scoring import (
    extract_boxed,
    extract_choice,
    extract_code,
    extract_final_number,
    extract_math_answer,
    math_equivalent,
    normalize_math_answer,
    numbers_equal,
)

MMLU_PRO_LETTERS = tuple("ABCDEFGHIJ")

# ---------------------------------------------------------------------------------------------------------------------
# Multiple choice

MCQ_CASES = [
    ("Answer: C", "C"),
    ("The answer is (C)", "C"),
    ("After checking each option, the correct answer is C.", "C"),
    ("C)", "C"),
    ("(C)", "C"),
    ("**C**", "C"),
    ("**Answer:** C", "C"),
    ("**Answer: B**", "B"),
    ("Option C", "C"),
    ("I'd go with option d.", "D"),
    ("C. Paris", "C"),
    ("Paris has been the capital since 987.\nSo:\nC", "C"),
    ("The final answer is $\\boxed{C}$.", "C"),
    ("The final answer is $\\boxed{\\text{D}}$", "D"),
    ("answer: c", "C"),
    ("Answer: (a)", "A"),
    ("The answer is\n\n**C**", "C"),
    ("The answer is A because Paris is in France.", "A"),
    ("A farmer has three cows and buys two more. Therefore the answer is D", "D"),
    ("I think it's B", "B"),
    ("The answer is A. Wait, I misread the question. The answer is B.", "B"),
    ("Answer: C. Option A is wrong because it ignores friction.", "C"),
]


@pytest.mark.parametrize(("completion", "letter"), MCQ_CASES)
def test_choice_is_read_from_the_usual_answer_forms(completion: str, letter: str) -> None:
    assert extract_choice(completion) == letter


@pytest.mark.parametrize(
    "completion",
    [
        "I am not sure",
        "A cat is an animal that likes milk.",
        "the answer is a bit unclear to me",
        "Cats are carnivores.",
        "",
    ],
)
def test_no_letter_is_invented_from_words_or_articles(completion: str) -> None:
    assert extract_choice(completion) is None


def test_pronoun_i_is_not_option_i_even_with_ten_letters() -> None:
    assert extract_choice("I am not sure", MMLU_PRO_LETTERS) is None
    assert extract_choice("Answer: I think it is B", MMLU_PRO_LETTERS) == "B"
    assert extract_choice("The answer is (I).", MMLU_PRO_LETTERS) == "I"


def test_mmlu_pro_letter_j_counts_only_when_j_is_a_valid_letter() -> None:
    assert extract_choice("The answer is (J).", MMLU_PRO_LETTERS) == "J"
    assert extract_choice("The answer is (J).", ("A", "B", "C", "D")) is None


def test_restated_option_list_is_not_an_answer() -> None:
    assert extract_choice("A. London\nB. Paris\nC. Rome\nD. Berlin") is None
    assert extract_choice("A. London\nB. Paris\nC. Rome\nD. Berlin\n\nAnswer: B") == "B"


def test_two_letters_without_a_statement_are_ambiguous() -> None:
    assert extract_choice("It could be B or C.") is None


def test_letters_may_be_a_tuple_or_a_string_and_bad_letters_are_a_programming_error() -> None:
    assert extract_choice("Answer: B", ("A", "B")) == extract_choice("Answer: B", "AB") == "B"
    with pytest.raises(ValueError):
        extract_choice("Answer: B", ("A", "BB"))


# ---------------------------------------------------------------------------------------------------------------------
# \boxed and MATH answers


def test_boxed_keeps_nested_braces_and_takes_the_last_box() -> None:
    assert extract_boxed("so \\boxed{\\frac{1}{2}}.") == "\\frac{1}{2}"
    assert extract_boxed("first \\boxed{3}, then \\boxed{\\sqrt{\\frac{1}{2}}}") == "\\sqrt{\\frac{1}{2}}"
    assert extract_boxed("\\boxed{\\{1,2\\}}") == "\\{1,2\\}"
    assert extract_boxed("\\fbox{7}") == "7"
    assert extract_boxed("$\\boxed 5$") == "5"


def test_boxed_is_none_when_absent_or_unclosed() -> None:
    assert extract_boxed("the answer is 5") is None
    assert extract_boxed("\\boxed{\\frac{1}{2}") is None


def test_many_unclosed_boxes_are_scanned_in_linear_time() -> None:
    assert extract_boxed("\\boxed{" * 20_000) is None


@pytest.mark.parametrize(
    ("completion", "answer"),
    [
        ("We get \\boxed{3} first, and finally \\boxed{\\left(1,\\sqrt{2}\\right)}.", "\\left(1,\\sqrt{2}\\right)"),
        ("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", "\\frac{1}{2}"),
        ("So the answer is 3.5 meters.", "3.5 meters"),
        ("Adding up:\n#### 42", "42"),
        ("Final answer: x = 7", "x = 7"),
        ("I could not finish this one.", None),
    ],
)
def test_math_answer_is_boxed_else_stated(completion: str, answer: str | None) -> None:
    assert extract_math_answer(completion) == answer


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("$\\dfrac{3}{4}$", "\\frac{3}{4}"),
        ("\\frac12", "\\frac{1}{2}"),
        ("1/2", "\\frac{1}{2}"),
        ("0.50", "0.5"),
        ("1,000", "1000"),
        ("5 \\text{ cm}", "5"),
        ("10 dollars", "10"),
        ("30^\\circ", "30"),
        ("50\\%", "50"),
        ("x = 3", "3"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("2 \\pi r.", "2\\pi r"),
        ("\\text{Monday}", "Monday"),
    ],
)
def test_normalization_removes_notational_variants(raw: str, canonical: str) -> None:
    assert normalize_math_answer(raw) == canonical


MATH_EQUIVALENT = [
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("\\dfrac{3}{4}", "\\frac{3}{4}"),
    ("\\tfrac{3}{4}", "\\frac34"),
    ("0.5", "\\frac12"),
    ("1/2", "\\frac{1}{2}"),
    ("0.5", "1/2"),
    ("0.50", "\\frac{2}{4}"),
    ("5 \\text{ cm}", "5"),
    ("10 dollars", "10"),
    ("\\$10", "10"),
    ("30^\\circ", "30"),
    ("30^{\\circ}", "30"),
    ("50\\%", "50"),
    ("x = 3", "3"),
    ("1,000", "1000"),
    ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}"),
    ("\\frac{\\sqrt2}{2}", "\\frac{1}{\\sqrt{2}}"),
    ("2\\pi", "2 \\pi"),
    ("\\frac{\\pi}{2}", "\\frac12\\pi"),
    ("(1, 2)", "(1,2)"),
    ("(0.5, 1]", "\\left(\\frac{1}{2}, 1\\right]"),
    ("\\{2, 1\\}", "\\{1,2\\}"),
    ("\\infty", "\\infty"),
    ("(-\\infty, 3]", "(-\\infty,3]"),
    ("2x+3", "3+2x"),
    ("y = 2x + 3", "2x+3"),
    ("\\sqrt[3]{8}", "2"),
    ("2^{2007}", "2 \\cdot 2^{2006}"),
    ("3.", "3"),
]

MATH_NOT_EQUIVALENT = [
    ("3", "4"),
    ("\\frac{1}{3}", "0.33"),
    ("-2", "2"),
    ("\\infty", "-\\infty"),
    ("\\infty", "10^{100}"),
    ("(1, 2)", "[1, 2]"),
    ("(1, 2)", "(2, 1)"),
    ("(1, 2)", "(1, 2, 3)"),
    ("\\frac{\\pi}{6}", "30^\\circ"),
    ("50\\%", "0.5"),
    ("\\text{Monday}", "\\text{Tuesday}"),
    ("xy", "yx"),
    ("9^{9^{9}}", "9^{387420489}"),
]


@pytest.mark.parametrize(("predicted", "gold"), MATH_EQUIVALENT)
def test_equivalent_math_answers_match(predicted: str, gold: str) -> None:
    assert math_equivalent(predicted, gold)
    assert math_equivalent(gold, predicted)


@pytest.mark.parametrize(("predicted", "gold"), MATH_NOT_EQUIVALENT)
def test_different_math_answers_do_not_match(predicted: str, gold: str) -> None:
    assert not math_equivalent(predicted, gold)
    assert not math_equivalent(gold, predicted)


@pytest.mark.parametrize("predicted", [None, "", "   ", "$$", "\\boxed{}"])
def test_missing_or_empty_prediction_is_wrong(predicted: str | None) -> None:
    assert math_equivalent(predicted, "5") is False


def test_ten_thousand_characters_of_garbage_are_rejected_without_hanging() -> None:
    garbage = "".join(chr(33 + (i * 7919) % 90) for i in range(10_000))
    assert math_equivalent(garbage, "5") is False
    assert math_equivalent(garbage[:1500], "5") is False  # short enough to go through every normalization step
    assert math_equivalent("\\frac{" * 150 + "1" + "}{2}" * 150, "5") is False


def test_towering_powers_are_never_evaluated() -> None:
    # 9^(9^9) has 370 million digits: equal strings are equal, anything else is refused, not computed.
    assert math_equivalent("9^{9^{9}}", "9^{9^{9}}")
    assert not math_equivalent("9^{9^{9}}", "1")
    assert not math_equivalent("(2^{9999})^{9999}", "0")


def test_code_words_in_an_answer_are_never_evaluated() -> None:
    assert not math_equivalent("__import__('os').getcwd()", "0")
    assert not math_equivalent("lambda: 1", "1")


# ---------------------------------------------------------------------------------------------------------------------
# GSM8K


@pytest.mark.parametrize(
    ("completion", "number"),
    [
        ("She sells 16 - 3 - 4 = 9 eggs at $2 each.\n#### 18", "18"),
        ("#### 72", "72"),
        ("#### 1,000,000", "1000000"),
        ("Adding the costs, the answer is $1,080.", "1080"),
        ("She started with 20 and gave away 2, so she has 18 apples.", "18"),
        ("Total: \\boxed{42}", "42"),
        ("We get 12.\nThe final answer is \\boxed{15}", "15"),
        ("The temperature falls 8 degrees from 3, to -5.", "-5"),
        ("Answer: -12", "-12"),
        ("Each costs $2.50, so the answer is 7.5.", "7.5"),
        ("The answer is 5 + 3 = 8.", "8"),
        ("Between 3-5 apples", "5"),
        ("No idea.", None),
    ],
)
def test_final_number_is_read_after_the_strongest_marker(completion: str, number: str | None) -> None:
    assert extract_final_number(completion) == number


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("18", "18.0", True),
        ("$18", "18", True),
        ("1,800", "1800", True),
        ("-3", "-3.00", True),
        ("18.", "18", True),
        ("0.30000000000000004", "0.3", True),
        ("18", "19", False),
        ("-18", "18", False),
        ("1.8", "18", False),
        (None, "18", False),
        ("eighteen", "18", False),
        ("1e999999999", "1", False),
    ],
)
def test_numbers_compare_by_value(a: str | None, b: str, equal: bool) -> None:
    assert numbers_equal(a, b) is equal


# ---------------------------------------------------------------------------------------------------------------------
# Code

ADD = "def add(a, b):\n    return a + b"


def test_fenced_python_block_is_extracted() -> None:
    assert extract_code(f"Here you go:\n```python\n{ADD}\n```\nIt adds.", "add") == ADD


def test_py_and_python3_fences_are_python() -> None:
    assert extract_code(f"```py\n{ADD}\n```") == ADD
    assert extract_code(f"```python3\n{ADD}\n```") == ADD


def test_block_defining_the_entry_point_beats_a_later_usage_block() -> None:
    completion = (
        "A helper first:\n```python\ndef helper():\n    return 0\n```\n"
        f"The solution:\n```python\n{ADD}\n```\nUsage:\n```python\nprint(add(1, 2))\n```"
    )
    assert extract_code(completion, "add") == ADD
    assert extract_code(completion) == "print(add(1, 2))"


def test_non_python_blocks_are_ignored() -> None:
    assert extract_code(f"```bash\npip install numpy\n```\n```python\n{ADD}\n```\n```text\n3\n```") == ADD
    assert extract_code("```bash\npip install numpy\n```") is None


def test_unfenced_code_that_parses_and_defines_the_entry_point_is_returned() -> None:
    assert extract_code(ADD + "\n", "add") == ADD
    assert extract_code(ADD + "\n", "subtract") is None


def test_prose_is_not_code() -> None:
    assert extract_code("I don't know how to solve this.") is None
    assert extract_code("Hello") is None
    assert extract_code("Sure, here is the function add.", "add") is None


def test_fence_content_starting_with_python_letters_is_not_mangled() -> None:
    # text.lstrip("```python\n") would eat "pytho" from "pythagoras" and "python_version".
    assert extract_code("```\npythagoras = 3\nhypotenuse = 5\n```") == "pythagoras = 3\nhypotenuse = 5"
    assert extract_code("```python\npython_version = 3\n```") == "python_version = 3"
    assert extract_code("```py\nyes = True\n```") == "yes = True"


def test_unclosed_last_block_runs_to_the_end() -> None:
    assert extract_code(f"```python\n{ADD}", "add") == ADD


def test_indented_fence_content_is_dedented_by_the_fence_indent() -> None:
    completion = "1. Write it:\n   ```python\n   def add(a, b):\n       return a + b\n   ```"
    assert extract_code(completion, "add") == ADD
