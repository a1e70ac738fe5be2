"""`python -m agentbalance.cli`: the same command line as the `agentbalance` script."""

from agentbalance.cli import main

main()
