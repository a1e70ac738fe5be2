"""Task sources and scorers: real benchmarks (MMLU, MMLU-Pro, MATH, GSM8K, HumanEval, MBPP), the user's JSONL and a
replay world's questions, all behind one Task interface; `load_task` picks one by name. The simulated world's
synthetic domains are tasks too, but generated in `agentbalance.worlds.simulated` (`agentbalance.worlds.open_task`).

Nothing here may import `worlds`, `policy` or `runtime`: tasks hold gold answers, which the controller must never see.
"""

from agentbalance.tasks.base import Task
from agentbalance.tasks.list_task import ListTask
from agentbalance.tasks.registry import TASK_NAMES, load_task

__all__ = ["TASK_NAMES", "ListTask", "Task", "load_task"]
