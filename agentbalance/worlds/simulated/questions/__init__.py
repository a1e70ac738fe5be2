"""The simulated world's questions: MMLU-, MATH- and HumanEval-like items whose latent difficulty the text reveals
only partly. Nothing here may import the simulator (world.py) or anything above it: the world reads the questions.
"""

from agentbalance.worlds.simulated.questions.generate import Topic, generate_synthetic, synthetic_topics

__all__ = ["Topic", "generate_synthetic", "synthetic_topics"]
