"""Answer extraction and scoring for MCQ (MMLU-style), MATH, GSM8K and code completions: pure functions on text.

It must never execute model output: no eval/exec of completions; sympy only sees whitelisted arithmetic tokens.
"""

from agentbalance.tasks.scoring.choices import extract_choice
from agentbalance.tasks.scoring.code import extract_code
from agentbalance.tasks.scoring.math import extract_boxed, extract_math_answer, math_equivalent, normalize_math_answer
from agentbalance.tasks.scoring.numbers import extract_final_number, numbers_equal

__all__ = [
    "extract_boxed",
    "extract_choice",
    "extract_code",
    "extract_final_number",
    "extract_math_answer",
    "math_equivalent",
    "normalize_math_answer",
    "numbers_equal",
]
