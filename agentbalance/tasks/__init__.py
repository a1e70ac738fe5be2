"""Task sources and scorers: real benchmarks (MMLU, MMLU-Pro, MATH, GSM8K, HumanEval, MBPP), the user's JSONL, a
replay world's questions and the synthetic domains, all behind one Task interface; `load_task` picks one by name.

Nothing here may import `worlds`, `policy` or `runtime`: tasks hold gold answers, which the controller must never see.
"""

from agentbalance.tasks.base import Task
from agentbalance.tasks.list_task import ListTask
from agentbalance.tasks.registry import TASK_NAMES, load_task
from agentbalance.tasks.synthetic import generate_synthetic, synthetic_topics

__all__ = ["TASK_NAMES", "ListTask", "Task", "generate_synthetic", "load_task", "synthetic_topics"]
